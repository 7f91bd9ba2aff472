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


def test_int_headers_match_wire_format(program):
    """The INT shim and hop record of fabric.p4 are the host codec's, field by field."""
    for p4_name, fields, size in (("int_shim_t", wire.INT_SHIM_FIELDS, wire.INT_SHIM_LEN),
                                  ("int_hop_t", wire.INT_HOP_FIELDS, wire.INT_HOP_LEN)):
        header = _header(program, p4_name)
        assert [(f.name, f.type.bit_width()) for f in header.fields] == fields, p4_name
        assert header.bit_width() == size * 8, p4_name
    consts = _constants(program)
    assert consts["CELL_FLAG_INT"] == wire.FLAG_INT
    assert consts["INT_SHIM_BYTES"] == wire.INT_SHIM_LEN
    assert consts["INT_HOP_BYTES"] == wire.INT_HOP_LEN


def test_readme_int_tables_match_wire_format():
    """The README's INT tables (rows `| `field` | bits |`) list the codec's fields."""
    text = (P4SRC / "README.md").read_text()
    section = text.split("## In-band telemetry", 1)[1].split("\n## ", 1)[0]
    rows = [(name, int(bits)) for name, bits in re.findall(r"^\|\s*`(\w+)`\s*\|\s*(\d+)\s*\|", section, re.M)]
    assert rows == wire.INT_SHIM_FIELDS + wire.INT_HOP_FIELDS


def test_int_codec_round_trip_and_bounds():
    hops = (wire.IntHop(0x0202, 3, 5, 120), wire.IntHop(0x0101, 1, 0, 7))
    cell = wire.CellPacket(type=wire.DATA, aux=8, flags=wire.FLAG_INT, body=b"x" * 8,
                           telemetry=wire.IntStack(hops, max_hops=4, overflow=1))
    data = wire.encode(cell)
    assert len(data) == wire.HEADER_LEN + wire.INT_SHIM_LEN + 2 * wire.INT_HOP_LEN + 8
    back = wire.decode(data, cell_size=8)
    assert back.telemetry == cell.telemetry and back.body == b"x" * 8
    plain = wire.decode(wire.encode(wire.CellPacket(type=wire.DATA, aux=8, body=b"y" * 8)), 8)
    assert plain.telemetry is None
    with pytest.raises(wire.MalformedCell):
        wire.encode(wire.CellPacket(type=wire.DATA, aux=8, body=b"x" * 8,
                                    telemetry=wire.IntStack()))
    with pytest.raises(wire.MalformedCell, match="INT"):
        wire.decode(data[:wire.HEADER_LEN + 2], cell_size=8)
    too_many = bytearray(data)
    too_many[wire.HEADER_LEN] = wire.INT_MAX_HOPS + 1
    with pytest.raises(wire.MalformedCell, match="INT"):
        wire.decode(bytes(too_many), cell_size=8)
