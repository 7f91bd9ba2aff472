"""The builtin switch process (simple_switch_grpc's counterpart).

options   bmv2-shaped argv -> SwitchOptions
ports     AF_PACKET raw-socket ports
pcap      per-port, per-direction pcap files
datapath  the Pipeline's ingress/egress split as the loop uses it
loop      Switch: the single-threaded event loop (and the P4Runtime Device)
logs      logging with bmv2 level names
main      start-up, readiness line, signals
commands  `testbed switch`: hands its argv to options and main
"""
