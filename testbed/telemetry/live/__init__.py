"""Live telemetry: what is read from the fabric while a run is under way.

collector.py polls the switches' counters and registers over P4Runtime (and
bmv2's queue peak over its Thrift CLI) and writes `telemetry.jsonl`;
host_readings.py reads each host's qdisc, NIC port and UDP counters inside
its namespace, before the agents start and after they end.  Only the
emulated run (emulation/run.py) uses this package.

The rule: the offline analysis of run directories (the rest of telemetry/)
never imports it, so a run directory can be read again, reported and
recomputed on a machine without a fabric, Mininet or a switch
(tests/unit/test_import_graph.py holds the code to it).
"""
