"""The switch modes a fabric test can run in, and how a test picks one of them.

Three modes put the same P4 program on different plumbing: one switch process per switch (the
Python switch loop and traffic manager, every cable a veth), one fabric process on this 2-core
machine (the native engine, every cable in memory), and two fabric processes (the native engine,
the cables between the two processes veths). The `processes` fixture (conftest.py) runs a test
in all three. A test whose outcome the mode can change (cables, the switch's own traffic manager,
its processes) keeps all three; a test that checks the transport, the records or the report runs
in the one mode `in_mode` names, and its docstring says why that mode suffices.
"""

import pytest

MODES = {"per_switch": "per-switch", "auto": "fabric-auto", 2: "fabric-2"}  # `switch.processes` -> test id


def in_mode(mode):
    """Mark a test to run in switch mode `mode` only (a key of MODES), under that mode's test id."""
    if mode not in MODES:
        raise ValueError(f"switch mode {mode!r} is none of {list(MODES)}")
    return pytest.mark.parametrize("processes", [mode], ids=[MODES[mode]])
