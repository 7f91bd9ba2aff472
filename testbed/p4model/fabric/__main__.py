"""`python -m testbed.p4model.fabric SPEC.json`: a fabric process (see main.py)."""

import sys

from testbed.p4model.fabric.main import main

sys.exit(main(prog="python -m testbed.p4model.fabric"))
