"""Maintenance tools of the builtin P4 target (run with `python -m`)."""
