"""Benchmarks: each `*_bench.py` module here exposes `run() -> list[str]`.

They print figures with their units and assert nothing: speed is measured
here, never by timed tests.
"""
