"""`testbed reproduce`: the transport's published claims, each held against a measurement.

experiments.py runs the simulator experiments (incast N:1, short messages among
long flows, an offered-load sweep, permutation and all-to-all on two and three
tiers) and keeps each one's raw records and switch counters in the output
directory; emulated.py runs incast on the emulated fabric; figures.py computes
every figure from those files alone; verdicts.py turns the figures into the
claims table; report.py writes it with its plots.
"""
