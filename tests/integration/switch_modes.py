"""The switch modes a fabric test can run in, and how a test picks one of them.

Three modes put the same P4 program on different plumbing: one switch process per switch (the
Python switch loop and traffic manager, every cable a veth), one fabric process on this 2-core
machine (the native engine, every cable in memory), and two fabric processes (the native engine,
the cables between the two processes veths). The `processes` fixture (conftest.py) runs a test
in all three. A test whose outcome the mode can change (cables, the switch's own traffic manager,
its processes) keeps the modes that differ in it; a test that checks the transport, the records or
the report runs in the modes `in_mode` names, and its docstring says why those suffice.
"""

import pytest

MODES = {"per_switch": "per-switch", "auto": "fabric-auto", 2: "fabric-2"}  # `switch.processes` -> test id


def in_mode(*modes):
    """Mark a test to run in the switch modes `modes` only (keys of MODES), under their test ids."""
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown or not modes:
        raise ValueError(f"switch modes {unknown or '(none)'}: each must be one of {list(MODES)}")
    return pytest.mark.parametrize("processes", list(modes), ids=[MODES[mode] for mode in modes])
