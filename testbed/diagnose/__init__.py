"""`testbed diagnose RUN_DIR`: a finished run against its healthy twin on the simulator (docs/diagnose.md)."""
