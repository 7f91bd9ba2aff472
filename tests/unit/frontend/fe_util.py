"""Helpers for front-end tests: wrap snippets into whole v1model programs."""

from __future__ import annotations

import textwrap

from testbed.p4model.frontend import load_source

PRELUDE = """\
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; bit<32> d; }
struct headers { h_t h; h_t[2] stack; }
struct metadata { bit<8> x; bit<16> y; bit<32> z; bool f; int<8> s; }
"""

BLOCKS = """\
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
"""


def program_with_ingress(body: str, top: str = "", name: str = "snippet.p4"):
    """A program whose ingress control is `control I(...) { <body> }`."""
    text = (PRELUDE + textwrap.dedent(top) + "\n" + BLOCKS
            + "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {\n"
            + textwrap.dedent(body) + "\n}\n"
            + "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n")
    return load_source(text, name)


def ingress(program):
    return program.block("ingress").type.decl


def apply_stmts(body: str, top: str = ""):
    """Statements of `apply { <body> }` in the ingress."""
    p = program_with_ingress("apply {\n" + textwrap.dedent(body) + "\n}", top)
    return ingress(p).apply.stmts
