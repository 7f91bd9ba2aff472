"""The compiler on hand-built IR (independent of the front end): basic
IPv4 forwarding end to end through Pipeline.process."""

from __future__ import annotations

import struct

import pytest

from testbed.p4model.runtime import hashing
from testbed.p4model.clock import ManualClock
from testbed.p4model.frontend import ir
from testbed.p4model.pipeline import Pipeline
from testbed.p4model.runtime.tables import ActionCall, TableEntry

from .irbuild import (HASH_ALGO, L, MARK_TO_DROP, PACKET_IN, PACKET_OUT, SM, UPDATE_CHECKSUM, V1,
                      assign, binop, bit, const, efn, empty_control, fcall, hdr_type, mem, program,
                      ref, stmt, struct_type, xcall)

ETH = hdr_type("ethernet_t", [("dstAddr", 48), ("srcAddr", 48), ("etherType", 16)])
IPV4 = hdr_type("ipv4_t", [("version", 4), ("ihl", 4), ("diffserv", 8), ("totalLen", 16),
                           ("identification", 16), ("flags", 3), ("fragOffset", 13), ("ttl", 8),
                           ("protocol", 8), ("hdrChecksum", 16), ("srcAddr", 32), ("dstAddr", 32)])
H = struct_type("headers", [("ethernet", ETH), ("ipv4", IPV4)])
M = struct_type("metadata", [])


def build_basic() -> ir.Program:
    v1 = V1(H, M)
    # parser
    pp = v1.parser_params()
    pk, hdr = pp[0], pp[1]
    pkref = ir.VarRef(pk, type=pk.type, loc=L)
    extract_eth = stmt(xcall(pkref, PACKET_IN, "extract", [mem(ref(hdr), "ethernet")]))
    extract_ip = stmt(xcall(pkref, PACKET_IN, "extract", [mem(ref(hdr), "ipv4")]))
    sel = ir.Select([mem(mem(ref(hdr), "ethernet"), "etherType")],
                    [(const(0x800, bit(16)), "parse_ipv4"), (ir.KeysetDefault(loc=L), "accept")])
    parser = ir.ParserDecl("MyParser", pp, states=[
        ir.ParserState("start", [extract_eth], sel, loc=L),
        ir.ParserState("parse_ipv4", [extract_ip], "accept", loc=L)])
    # ingress
    cp = v1.control_params()
    h, sm = ref(cp[0]), ref(cp[2])
    drop = ir.ActionDecl("drop", [], ir.Block([stmt(fcall(MARK_TO_DROP, [sm]))]),
                         cp_name="MyIngress.drop")
    dmac = ir.Param("dstAddr", bit(48))
    port = ir.Param("port", bit(9))
    ip = mem(h, "ipv4")
    eth = mem(h, "ethernet")
    fwd_body = ir.Block([
        assign(mem(sm, "egress_spec"), ref(port)),
        assign(mem(eth, "srcAddr"), mem(eth, "dstAddr")),
        assign(mem(eth, "dstAddr"), ref(dmac)),
        assign(mem(ip, "ttl"), binop("-", mem(ip, "ttl"), const(1, bit(8)))),
    ])
    fwd = ir.ActionDecl("ipv4_forward", [dmac, port], fwd_body, cp_name="MyIngress.ipv4_forward")
    noaction = ir.ActionDecl("NoAction", [], ir.Block([]), cp_name="NoAction")
    table = ir.TableDecl("ipv4_lpm", [ir.KeyElement(mem(ip, "dstAddr"), "lpm", "hdr.ipv4.dstAddr")],
                         [ir.ActionRef(fwd), ir.ActionRef(drop), ir.ActionRef(noaction)],
                         ir.ActionRef(drop), size=1024, cp_name="MyIngress.ipv4_lpm", loc=L)
    valid = ir.BuiltinCall("isValid", ip, type=ir.BoolT(), loc=L)
    apply = ir.Block([ir.If(valid, ir.CallStmt(ir.TableApply(table, type=ir.TableApplyResultT("t"),
                                                            loc=L), loc=L), loc=L)])
    ingress = ir.ControlDecl("MyIngress", cp, locals=[drop, fwd, table], apply=apply)
    egress = empty_control("MyEgress", v1.control_params())
    verify = empty_control("MyVerify", v1.ck_params())
    # compute checksum
    ckp = v1.ck_params()
    ip2 = mem(ref(ckp[0]), "ipv4")
    fields = ["version", "ihl", "diffserv", "totalLen", "identification", "flags", "fragOffset",
              "ttl", "protocol", "srcAddr", "dstAddr"]
    data = ir.ListExpr([mem(ip2, f) for f in fields], type=ir.TupleT(tuple()), loc=L)
    upd = stmt(fcall(UPDATE_CHECKSUM, [ir.BuiltinCall("isValid", ip2, type=ir.BoolT(), loc=L), data,
                                       mem(ip2, "hdrChecksum"),
                                       const(HASH_ALGO.members.index("csum16"), HASH_ALGO)]))
    compute = ir.ControlDecl("MyCompute", ckp, apply=ir.Block([upd]))
    dp = v1.deparser_params()
    poref = ir.VarRef(dp[0], type=dp[0].type, loc=L)
    deparser = ir.ControlDecl("MyDeparser", dp, apply=ir.Block([
        stmt(xcall(poref, PACKET_OUT, "emit", [mem(ref(dp[1]), "ethernet")])),
        stmt(xcall(poref, PACKET_OUT, "emit", [mem(ref(dp[1]), "ipv4")]))]))
    return program(parser, verify, ingress, egress, compute, deparser)


def ipv4_packet(dst="10.0.1.1", ttl=64, payload=b"hello"):
    parts = [int(x) for x in dst.split(".")]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0, ttl, 17, 0,
                     bytes([10, 0, 0, 1]), bytes(parts))
    ck = hashing.csum16(ip)
    ip = ip[:10] + ck.to_bytes(2, "big") + ip[12:]
    eth = bytes.fromhex("000000000001") + bytes.fromhex("000000000002") + b"\x08\x00"
    return eth + ip + payload


@pytest.fixture()
def pipe():
    p = Pipeline(build_basic(), clock=ManualClock())
    p.tables["MyIngress.ipv4_lpm"].insert(TableEntry(
        match=((0x0A000100, 24),), action=ActionCall("MyIngress.ipv4_forward", (0xAABBCCDDEEFF, 3))))
    return p


def test_forwarding_rewrites_and_recomputes_checksum(pipe):
    out = pipe.process(1, ipv4_packet(ttl=64))
    assert len(out) == 1
    port, data = out[0]
    assert port == 3
    assert data[:6] == bytes.fromhex("aabbccddeeff")
    assert data[6:12] == bytes.fromhex("000000000001")
    assert data[14 + 8] == 63
    assert hashing.csum16(data[14:34]) == 0     # checksum valid after update
    assert data[34:] == b"hello"


def test_miss_runs_default_drop(pipe):
    assert pipe.process(1, ipv4_packet(dst="10.9.9.9")) == []


def test_non_ipv4_passes_to_port0_unchanged(pipe):
    pkt = bytes(12) + b"\x86\xdd" + b"x" * 30
    assert pipe.process(2, pkt) == [(0, pkt)]


def test_short_packet_is_payload_and_still_runs_ingress(pipe):
    pkt = ipv4_packet()[:20]     # ethernet + 6 bytes: PacketTooShort in parse_ipv4
    assert pipe.process(1, pkt) == [(0, pkt)]


def test_generated_source_has_locations(pipe):
    assert "# t.p4:1:1" in pipe.source
    assert "def tbl_MyIngress_ipv4_lpm" in pipe.source


def test_unknown_extern_is_a_one_line_unsupported_error():
    from testbed.p4model.errors import P4Unsupported

    prog = build_basic()
    ingress = prog.block("ingress").type.decl
    weird = ir.ExternDecl("mystery", [], [])
    ingress.locals.append(ir.Instance("m", ir.ExternT(weird), cp_name="MyIngress.m",
                                      loc=ir.Loc("t.p4", 7, 3)))
    with pytest.raises(P4Unsupported) as info:
        Pipeline(prog, clock=ManualClock())
    assert str(info.value) == "t.p4:7:3: unsupported: extern mystery"


def test_dump_env_writes_generated_source(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_P4_DUMP", str(tmp_path))
    Pipeline(build_basic(), clock=ManualClock())
    text = (tmp_path / "t.py").read_text()
    assert "prs_MyParser" in text and "class H_ipv4_t" in text
