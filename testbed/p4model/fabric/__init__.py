"""The fabric process: many builtin switches in one process, one event loop.

Why: inside an emulated fabric each packet arrives alone, so a switch
process spends most of its CPU waking up (once on arrival, once more at the
departure its link model fixed) and crossing a veth pair with two syscalls
per hop, and twenty such processes compete for the cores with the host
agents.  A fabric process keeps every switch's own identity (device id,
P4Runtime endpoint, traffic-manager control port, counters, log, pcap) but
runs all of them in one loop, and a link between two of its switches is a
hand-off in memory: the upstream traffic manager's transmit time (dequeue +
serialisation + propagation) becomes the downstream switch's arrival time.

    spec.py   the JSON spec: each switch's simple_switch-style argv plus its
              links in memory (`testbed fabric SPEC.json`)
    loop.py   FabricLoop: one select() over every real port, one timer heap
              over every switch's next event and every frame in flight
    main.py   building the switches and servers from a spec, readiness line,
              signals
"""
