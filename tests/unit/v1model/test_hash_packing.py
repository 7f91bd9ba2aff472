"""hash() and update_checksum() over field lists that span several
headers and metadata: the compiled packing (one integer built per valid
header) must equal hashing.pack_fields over the leaves of valid headers."""

from __future__ import annotations

import zlib

import pytest

from testbed.p4model.runtime import hashing
from testbed.p4model.clock import ManualClock

SOURCE = r"""
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; bit<4> y; bit<4> z; }
header b_t { bit<16> w; }
header o_t { bit<32> h; bit<16> c; bit<16> d; }
struct headers_t { a_t a; b_t b; o_t o; }
struct meta_t { bit<3> m; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.a);
        pk.extract(hdr.o);
        transition select(hdr.a.x[0:0]) { 1: parse_b; default: accept; }
    }
    state parse_b { pk.extract(hdr.b); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.m = hdr.a.y[2:0];
        hash(hdr.o.h, HashAlgorithm.crc32, 32w0, {hdr.a.z, meta.m, hdr.b.w, hdr.a.x}, 33w0x100000000);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, {hdr.b.w, meta.m, hdr.a.x}, hdr.o.c, HashAlgorithm.csum16);
        update_checksum(hdr.a.isValid(), {hdr.a.y, hdr.b.w}, hdr.o.d, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.a); pk.emit(hdr.o); pk.emit(hdr.b); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    from testbed.p4model.pipeline import load

    path = tmp_path_factory.mktemp("p4") / "packing.p4"
    path.write_text(SOURCE)
    return load(path, clock=ManualClock())


@pytest.mark.parametrize("x,yz,w", [(0x10, 0x5A, 0xBEEF), (0x11, 0x5A, 0xBEEF), (0xFF, 0xFF, 0xFFFF),
                                    (0x01, 0x00, 0x0000), (0x37, 0xC3, 0x1234)])
def test_packing_matches_pack_fields(pipe, x, yz, w):
    b_valid = bool(x & 1)
    data = bytes([x, yz]) + bytes(8) + (w.to_bytes(2, "big") if b_valid else b"")
    [(port, out)] = pipe.process(0, data)
    y, z, m = yz >> 4, yz & 0xF, (yz >> 4) & 7
    fields = [(z, 4), (m, 3)] + ([(w, 16)] if b_valid else []) + [(x, 8)]
    h = zlib.crc32(hashing.pack_fields(fields)) % 0x100000000
    c = hashing.csum16(hashing.pack_fields(([(w, 16)] if b_valid else []) + [(m, 3), (x, 8)]))
    d = hashing.csum16(hashing.pack_fields([(y, 4)] + ([(w, 16)] if b_valid else [])))
    assert out[:2] == bytes([x, yz])
    assert int.from_bytes(out[2:6], "big") == h
    assert int.from_bytes(out[6:8], "big") == c
    assert int.from_bytes(out[8:10], "big") == d


STRUCT_SOURCE = r"""
#include <core.p4>
#include <v1model.p4>
header l_t { bit<48> mac; int<8> s; bit<3> p; bit<5> q; bit<136> wide; bit<24> t; }
header o_t { bit<32> h; bit<16> c; bit<32> u; }
struct headers_t { l_t l; o_t o; }
struct meta_t { bit<24> t; bit<8> k; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.l); pk.extract(hdr.o); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.t = hdr.l.t;
        meta.k = (bit<8>) hdr.l.s;
        hash(hdr.o.h, HashAlgorithm.crc32, 32w0, {hdr.l.mac, hdr.l.s, hdr.l.p, hdr.l.q, hdr.l.wide},
             33w0x100000000);
        hash(hdr.o.u, HashAlgorithm.crc32, 32w0, {meta.t, meta.k}, 33w0x100000000);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) {
    apply { update_checksum(hdr.l.isValid(), {hdr.l.mac, hdr.l.t}, hdr.o.c, HashAlgorithm.csum16); }
}
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.l); pk.emit(hdr.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize("mac, s, pq, t", [(0x0A0B0C0D0E0F, -5, 0xA7, 0x123456),
                                           (0xFFFFFFFFFFFF, 127, 0xFF, 0xFFFFFF), (0, -128, 0, 0)])
def test_byte_aligned_lists_packed_with_struct_match_pack_fields(tmp_path, mac, s, pq, t):
    """Byte-aligned lists take the struct path: multi-item runs (48/24 bits),
    a signed field, fields sharing a byte and a run wider than 16 bytes."""
    from testbed.p4model.pipeline import load

    path = tmp_path / "struct_packing.p4"
    path.write_text(STRUCT_SOURCE)
    pipe = load(path, clock=ManualClock())
    assert "_PK" in pipe.source  # the lists above really took the struct path
    wide = (1 << 136) - 1 - 0x1234
    head = ((mac << 8 | (s & 0xFF)) << 8 | pq) << 136 | wide
    data = head.to_bytes(6 + 1 + 1 + 17, "big") + t.to_bytes(3, "big") + bytes(10)
    [(port, out)] = pipe.process(0, data)
    fields = [(mac, 48), (s & 0xFF, 8), (pq >> 5, 3), (pq & 0x1F, 5), (wide, 136)]
    assert int.from_bytes(out[28:32], "big") == zlib.crc32(hashing.pack_fields(fields))
    assert int.from_bytes(out[32:34], "big") == hashing.csum16(hashing.pack_fields([(mac, 48), (t, 24)]))
    assert int.from_bytes(out[34:38], "big") == zlib.crc32(hashing.pack_fields([(t, 24), (s & 0xFF, 8)]))


CSUM_SOURCE = r"""
#include <core.p4>
#include <v1model.p4>
header l_t { bit<3> p; bit<13> q; bit<48> mac; int<8> s; bit<4> n; bit<4> m; bit<24> t; }
header o_t { bit<16> c; bit<16> d; bit<16> e; }
struct headers_t { l_t l; o_t o; }
struct meta_t { bit<5> k; bit<11> j; bit<8> z; }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.l); pk.extract(hdr.o); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) {
    apply { verify_checksum(true, {hdr.l.mac, hdr.l.s, hdr.l.n}, hdr.o.e, HashAlgorithm.csum16); }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.o.e = (bit<16>) sm.checksum_error;
        meta.k = hdr.l.q[4:0]; meta.j = 11w0x5A5; meta.z = hdr.l.t[7:0];
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.l.isValid(), {hdr.l.p, hdr.l.q, hdr.l.mac, hdr.l.s, hdr.l.n, hdr.l.m, hdr.l.t},
                        hdr.o.c, HashAlgorithm.csum16);
        update_checksum(true, {meta.k, meta.j, meta.z}, hdr.o.d, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.l); pk.emit(hdr.o); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def csum_pipe(tmp_path_factory):
    from testbed.p4model.pipeline import load

    path = tmp_path_factory.mktemp("p4") / "csum.p4"
    path.write_text(CSUM_SOURCE)
    pipe = load(path, clock=ManualClock())
    for block in ("def ctl_C", "def ctl_V"):  # both lists are summed, not packed and hashed
        assert "HF" not in pipe.compiled.source.split(block, 1)[1].split("\ndef ", 1)[0]
    return pipe


@pytest.mark.parametrize("seed", range(40))
def test_csum16_from_field_sums_matches_csum16_of_packed_bytes(csum_pipe, seed):
    """update/verify_checksum with csum16 add the fields up instead of packing
    them: sub-byte and 13-bit fields, a signed one, odd byte counts (a 7-byte
    list; a 3-byte metadata list), and the all-zero case (seed 0)."""
    import random

    pipe = csum_pipe
    rng = random.Random(seed)
    zero = seed == 0
    p, q, mac, s, n, m, t = (0, 0, 0, 0, 0, 0, 0) if zero else (
        rng.getrandbits(3), rng.getrandbits(13), rng.getrandbits(48), rng.randint(-128, 127),
        rng.getrandbits(4), rng.getrandbits(4), rng.getrandbits(24))
    head = ((((((p << 13 | q) << 48 | mac) << 8 | (s & 0xFF)) << 4 | n) << 4 | m) << 24) | t
    e_ok = hashing.csum16(hashing.pack_fields([(mac, 48), (s & 0xFF, 8), (n, 4)]))
    e = e_ok if seed % 2 else e_ok ^ 1   # odd seeds carry a right checksum
    data = head.to_bytes(13, "big") + bytes(4) + e.to_bytes(2, "big") + b"pay"
    [(port, out)] = pipe.process(0, data)
    c = hashing.csum16(hashing.pack_fields([(p, 3), (q, 13), (mac, 48), (s & 0xFF, 8), (n, 4), (m, 4), (t, 24)]))
    d = hashing.csum16(hashing.pack_fields([(q & 0x1F, 5), (0x5A5, 11), (t & 0xFF, 8)]))
    assert int.from_bytes(out[13:15], "big") == c
    assert int.from_bytes(out[15:17], "big") == d
    assert int.from_bytes(out[17:19], "big") == (0 if seed % 2 else 1)  # checksum_error


RUNS_SOURCE = r"""
#include <core.p4>
#include <v1model.p4>
header v_t { bit<4> a; bit<12> b; bit<16> c; }
header w_t { bit<32> x; }
header u_t { bit<3> f; bit<13> g; }
header k_t { bit<8> y; }
header o_t { bit<8> sel; bit<16> c; bit<16> d; bit<16> e; }
struct headers_t { o_t o; v_t v; w_t[3] ws; u_t u; k_t k; }
struct meta_t { }
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.o); transition select(hdr.o.sel[0:0]) { 1: v; default: ws; } }
    state v { pk.extract(hdr.v); transition ws; }
    state ws {
        transition select(hdr.o.sel[2:1]) { 0: maybe_u; 1: w1; 2: w2; default: w3; }
    }
    state w1 { pk.extract(hdr.ws.next); transition maybe_u; }
    state w2 { pk.extract(hdr.ws.next); pk.extract(hdr.ws.next); transition maybe_u; }
    state w3 { pk.extract(hdr.ws.next); pk.extract(hdr.ws.next); pk.extract(hdr.ws.next); transition maybe_u; }
    state maybe_u { transition select(hdr.o.sel[3:3]) { 1: u; default: maybe_k; } }
    state u { pk.extract(hdr.u); transition maybe_k; }
    state maybe_k { transition select(hdr.o.sel[4:4]) { 1: k; default: accept; } }
    state k { pk.extract(hdr.k); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) {
    apply { verify_checksum(true, {hdr.v.a, hdr.v.b, hdr.v.c, hdr.ws[0].x, hdr.ws[1].x, hdr.ws[2].x,
                                   hdr.u.f, hdr.u.g}, hdr.o.e, HashAlgorithm.csum16); }
}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.o.e = (bit<16>) sm.checksum_error;
        // fields of invalid headers hold values that no checksum may count
        if (!hdr.v.isValid()) { hdr.v.c = 16w0xBEEF; }
        if (!hdr.ws[2].isValid()) { hdr.ws[2].x = 32w0xDEADBEEF; }
        if (!hdr.k.isValid()) { hdr.k.y = 8w0xA5; }
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true, {hdr.v.a, hdr.v.b, hdr.v.c, hdr.ws[0].x, hdr.ws[1].x, hdr.ws[2].x,
                               hdr.u.f, hdr.u.g}, hdr.o.c, HashAlgorithm.csum16);
        // a run of 8 bits: leaving it out moves the next by half a word, so packed
        update_checksum(true, {hdr.k.y, hdr.v.c}, hdr.o.d, HashAlgorithm.csum16);
    }
}
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.fixture(scope="module")
def runs_pipe(tmp_path_factory):
    from testbed.p4model.pipeline import load

    path = tmp_path_factory.mktemp("p4") / "runs.p4"
    path.write_text(RUNS_SOURCE)
    pipe = load(path, clock=ManualClock())
    verify = pipe.compiled.source.split("def ctl_V", 1)[1].split("\ndef ", 1)[0]
    compute = pipe.compiled.source.split("def ctl_C", 1)[1].split("\ndef ", 1)[0]
    assert "HF" not in verify and compute.count("HF") == 1  # the whole-word runs are summed
    return pipe


@pytest.mark.parametrize("seed", range(64))
def test_csum16_summed_over_runs_of_valid_headers_matches_packed_bytes(runs_pipe, seed):
    """A csum16 list spread over several headers, each a whole number of
    16-bit words (a header, a stack's elements, another header), any of them
    invalid: the summed checksum equals csum16 of the valid ones' bytes, in
    update_checksum and in verify_checksum (right and wrong checksums); a
    list with a half-word run gives the packed result too."""
    import random

    rng = random.Random(seed)
    with_v, stack, with_u, with_k = seed % 2, (seed // 2) % 4, (seed // 8) % 2, (seed // 16) % 2
    sel = with_v | stack << 1 | with_u << 3 | with_k << 4
    a, b, c = (0, 0, 0) if seed >= 32 else (rng.getrandbits(4), rng.getrandbits(12), rng.getrandbits(16))
    xs = [rng.getrandbits(32) for _ in range(stack)]
    f, g, y = rng.getrandbits(3), rng.getrandbits(13), rng.getrandbits(8)
    fields = ([(a, 4), (b, 12), (c, 16)] if with_v else []) + [(x, 32) for x in xs] + \
        ([(f, 3), (g, 13)] if with_u else [])
    right = hashing.csum16(hashing.pack_fields(fields))
    d = hashing.csum16(hashing.pack_fields(([(y, 8)] if with_k else []) + ([(c, 16)] if with_v else [])))
    e = right if seed % 3 else right ^ 0x10
    body = (((a << 12 | b) << 16 | c).to_bytes(4, "big") if with_v else b"") + \
        b"".join(x.to_bytes(4, "big") for x in xs) + ((f << 13 | g).to_bytes(2, "big") if with_u else b"") + \
        (bytes([y]) if with_k else b"")
    data = bytes([sel]) + bytes(4) + e.to_bytes(2, "big") + body + b"pay"
    [(port, out)] = runs_pipe.process(0, data)
    assert int.from_bytes(out[1:3], "big") == right
    assert int.from_bytes(out[3:5], "big") == d
    assert int.from_bytes(out[5:7], "big") == (0 if seed % 3 else 1)  # checksum_error
    assert out[7:] == body + b"pay"
