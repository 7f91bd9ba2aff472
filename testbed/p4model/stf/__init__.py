"""Runner for p4c/bmv2 STF test files on the builtin target.

parser.py reads the text into commands, names.py and values.py resolve
names and numbers as the reference harness does, build.py turns control
commands into P4Runtime updates for the ControlPlane, compare.py judges
the outputs, runner.py drives a run; `main(args)` is `testbed stf`.
"""

from testbed.p4model.stf.runner import main, run_files

__all__ = ["main", "run_files"]
