"""A program without `main`: P4Info is empty (p4c warns and writes an
empty one); loading it on the target is still refused with one line."""

from pathlib import Path

import pytest

from testbed.p4model.errors import P4Error
from testbed.p4model.p4info import generate_file
from testbed.p4model.pipeline import load

NO_MAIN = Path(__file__).resolve().parents[1] / "frontend" / "bad" / "no_main.p4"


def test_p4info_of_a_program_without_main_is_empty(capsys):
    info = generate_file(NO_MAIN)
    assert info.ByteSize() == 0
    assert "no 'main' package instance; the P4Info is empty" in capsys.readouterr().err


def test_target_refuses_a_program_without_main():
    with pytest.raises(P4Error, match="no 'main' package instance"):
        load(NO_MAIN)
