"""`python -m testbed.p4model.switch ...`: the builtin switch (see main.py)."""

import sys

from testbed.p4model.switch.main import main

sys.exit(main(prog="python -m testbed.p4model.switch"))
