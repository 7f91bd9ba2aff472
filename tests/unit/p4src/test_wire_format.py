"""The P4 cell header and the host's wire format agree field by field.

p4src/README.md defines the cell header once; p4src/include/headers.p4
(cell_t, read through the project's front end) and testbed/cells/wire.py
(CELL_FIELDS, and the scapy layer built from it) must both follow it:
same names, same widths, same order. The constants the switch keys on
(the UDP port, the cell types) must agree too."""

from __future__ import annotations

import re

import pytest

from testbed.cells import wire
from testbed.p4model.frontend import ir, load_program

from .conftest import P4SRC


@pytest.fixture(scope="module")
def program():
    return load_program(P4SRC / "fabric.p4")


def _header(program, name):
    for decl in program.declarations:
        if isinstance(decl, ir.TypeDeclRef) and decl.name == name:
            return decl.type
    raise AssertionError(f"{name} not found in fabric.p4")


def _constants(program):
    return {d.name: d.value.value for d in program.declarations
            if isinstance(d, ir.ConstDecl) and isinstance(d.value, ir.Const)}


def test_cell_header_fields_match_wire_format(program):
    cell = _header(program, "cell_t")
    assert isinstance(cell, ir.HeaderT)
    p4_fields = [(f.name, f.type.bit_width()) for f in cell.fields]
    assert p4_fields == wire.CELL_FIELDS
    assert cell.bit_width() == wire.HEADER_LEN * 8


def test_scapy_layer_matches_wire_format():
    from testbed.cells.scapy_cell import Cell

    assert [(f.name, f.size) for f in Cell.fields_desc] == wire.CELL_FIELDS


def test_constants_match_wire_format(program):
    consts = _constants(program)
    assert consts["CELL_UDP_PORT"] == wire.CELL_UDP_PORT
    for value, name in wire.TYPE_NAMES.items():
        assert consts[f"CELL_TYPE_{name}"] == value, name


def test_readme_table_matches_wire_format():
    """The README's cell-header table lists the same fields and widths."""
    text = (P4SRC / "README.md").read_text()
    rows = re.findall(r"^\|\s*\d+\s*\|\s*(\d+)\s*\|\s*`(\w+)`", text, re.M)
    assert [(name, int(width)) for width, name in rows] == wire.CELL_FIELDS
