"""How an acyclic parser is laid out in Python: pass-through states are
jumped over, a state with one predecessor is written into it, a state with
several keeps its function, the parser that only calls its first state is
that state; a looping parser keeps its driver.  The packets parsed must not
change with the layout."""

from __future__ import annotations

import re

import pytest

from testbed.p4model.clock import ManualClock
from testbed.p4model.pipeline import load

# start -> skip1 -> a;  a: b (0x01) | c (0x02) | accept;  b -> d;  c -> d;  d -> accept
# out port = the sum of the one-byte headers parsed (each header adds its value)
ACYCLIC = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> v; }
struct headers { h_t a; h_t b; h_t c; h_t d; }
struct meta_t { }
parser P(packet_in pk, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { transition skip1; }
    state skip1 { transition parse_a; }
    state parse_a { pk.extract(hdr.a); transition select(hdr.a.v) { 1: parse_b; 2: parse_c; default: accept; } }
    state parse_b { pk.extract(hdr.b); transition parse_d; }
    state parse_c { pk.extract(hdr.c); transition parse_d; }
    state parse_d { pk.extract(hdr.d); transition accept; }
}
control NoVerify(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        bit<9> port = (bit<9>) hdr.a.v;
        if (hdr.b.isValid()) { port = port + (bit<9>) hdr.b.v; }
        if (hdr.c.isValid()) { port = port + (bit<9>) hdr.c.v; }
        if (hdr.d.isValid()) { port = port + (bit<9>) hdr.d.v; }
        sm.egress_spec = port;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control NoCompute(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), NoVerify(), I(), E(), NoCompute(), D()) main;
"""

# the same headers through a loop: a is extracted again while its value is 0
LOOPING = ACYCLIC.replace("default: accept; } }", "0: skip1; default: accept; } }")


def _pipeline(tmp_path, text: str, name: str):
    path = tmp_path / f"{name}.p4"
    path.write_text(text)
    return load(path, clock=ManualClock())


def _functions(pipeline) -> set[str]:
    return set(re.findall(r"^def (ps_\w+)\(", pipeline.source, flags=re.M))


def test_acyclic_parser_layout(tmp_path):
    pipeline = _pipeline(tmp_path, ACYCLIC, "acyclic")
    # start and skip1 only move on; b and c have one predecessor each (a) and
    # are written into it; d has two (b and c); a is the parser itself
    assert _functions(pipeline) == {"ps_P_parse_a", "ps_P_parse_d"}
    assert re.search(r"^prs_P = ps_P_parse_a$", pipeline.source, flags=re.M)


@pytest.mark.parametrize("data, port", [
    (bytes([3]) + b"payload", 3),            # a only (default: accept)
    (bytes([1, 4, 5]) + b"payload", 10),     # a -> b -> d
    (bytes([2, 6, 7]) + b"payload", 15),     # a -> c -> d
    (bytes([1, 4]), 5),                      # d missing: a parser error, the packet goes on (v1model)
])
def test_acyclic_parser_parses_as_written(tmp_path, data, port):
    pipeline = _pipeline(tmp_path, ACYCLIC, "acyclic")
    assert pipeline.process(1, data) == [(port, data)]


def test_looping_parser_keeps_its_driver_and_agrees(tmp_path):
    looping = _pipeline(tmp_path, LOOPING, "looping")
    assert "while st is not None:" in looping.source
    acyclic = _pipeline(tmp_path, ACYCLIC, "acyclic")
    for data in (bytes([3]), bytes([1, 4, 5]), bytes([2, 6, 7]), b"", bytes([1])):
        assert looping.process(1, data + b"xy") == acyclic.process(1, data + b"xy")
