"""The engine tests share stamp.p4, loaded once, and the differential test's fabric builders."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(scope="session")
def program():
    from testbed.p4model.frontend import load_program

    return load_program(Path(__file__).with_name("stamp.p4"))
