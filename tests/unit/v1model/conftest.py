"""Helpers: load a test program from tests/p4programs on a ManualClock
(skipped while the front end cannot load programs yet)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.p4model.clock import ManualClock

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


def load_program(name: str, **kwargs):
    try:
        from testbed.p4model.frontend import load_program as _front  # noqa: F401
    except ImportError:
        pytest.skip("the front end cannot load programs yet")
    from testbed.p4model.pipeline import load

    kwargs.setdefault("clock", ManualClock())
    return load(PROGRAMS / name, **kwargs)
