"""Runner for p4c/bmv2 STF test files, on the builtin target and on bmv2.

parser.py reads the text into commands, names.py and values.py resolve
names and numbers as the reference harness does, build.py turns control
commands into P4Runtime updates for the ControlPlane, burst.py queues the
packets of a burst, compare.py judges the outputs, runner.py drives a run
on the builtin target; bmv2.py (with cli_commands.py) runs the same files
on simple_switch, differential.py compares two targets' outputs, result.py
holds and prints a file's outcome; `main(args)` (main.py) is `testbed stf`.
"""

from testbed.p4model.stf.main import main
from testbed.p4model.stf.runner import run_file, run_files

__all__ = ["main", "run_file", "run_files"]
