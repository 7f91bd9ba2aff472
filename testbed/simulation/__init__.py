"""Scenarios on the virtual-clock simulator (`testbed sim`, `testbed tune`): no root, no Mininet.

The same workload messages and the same sans-IO host transport as an
emulated run, on `testbed.simulation.sim`'s model of the scenario's topology; a
run directory holds what the report needs (resolved scenario, workload,
records) plus `result.json` with `driver: simulator`.
"""
