"""The STF runner end to end on a toy switch built from the real runtime
objects (tables, pre, externs) behind the ControlPlane: every control line
really goes through P4Runtime protobufs."""

import io
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "control_plane"))

from fake_switch import make_p4info, make_pipeline  # noqa: E402

from testbed.p4model.stf import run_files  # noqa: E402


def toy_switch(clock):
    """fwd[dst MAC] -> set_port(port) sends the packet there; a miss floods
    multicast group 1; clone session 4, when set, mirrors every packet;
    register reg[0] counts packets."""
    pipeline = make_pipeline(clock)

    def process(port, data):
        reg = pipeline.registers["MyIngress.reg"]
        reg.write(0, reg.values[0] + 1)
        out = []
        entry = pipeline.tables["MyIngress.fwd"].lookup((int.from_bytes(data[:6], "big"),))
        if entry is not None and entry.action.action == "MyIngress.set_port":
            out.append((entry.action.args[0], data))
        else:
            out.extend((p, data) for _rid, p in pipeline.pre.group(1))
        session = pipeline.pre.clone_session(4)
        if session is not None:
            out.extend((p, data) for _inst, p in session_ports(session))
        return out

    # The runner queues what ingress returns (EgressJob-like: port, priority,
    # length) and hands each dequeued job to egress, which here sends it as is.
    pipeline.ingress = lambda port, data: [SimpleNamespace(port=p, priority=0, length=len(d), data=d)
                                           for p, d in process(port, data)]
    pipeline.egress = lambda job, _meta: ([(job.port, job.data)], [])
    pipeline.drop_port = 511
    return pipeline, make_p4info()


def session_ports(session):
    replicas = getattr(session, "replicas", None)
    if replicas is None:
        replicas = [(rid, p) for rid, ports in session.nodes for p in ports]
    return replicas


def run(tmp_path, text, name="t.stf"):
    path = tmp_path / name
    path.write_text(text)
    out = io.StringIO()
    passed, failed = run_files(toy_switch, [path], out=out)
    return passed, failed, out.getvalue()


PKT = "000000000002 000000000001 0800 45"


def test_forwarding_passes(tmp_path):
    passed, failed, out = run(tmp_path, f"""
add fwd hdr.eth.dst:0x000000000002 set_port(port:3, tag:0)
packet 0 {PKT}
expect 3 {PKT}$
""")
    assert (passed, failed) == (1, 0), out
    assert out.splitlines()[-1] == "1 passed, 0 failed"


def test_mismatch_is_reported_with_a_diff(tmp_path):
    passed, failed, out = run(tmp_path, f"""
add fwd dst:0x000000000002 set_port(port:3, tag:0)
packet 0 {PKT}
expect 3 000000000002 000000000009 0800
""")
    assert (passed, failed) == (0, 1)
    assert "FAIL" in out and "1 byte(s) differ, first at offset 11" in out
    assert "^" in out
    assert out.splitlines()[-1] == "0 passed, 1 failed"


def test_unexpected_packet_on_an_observed_port_fails(tmp_path):
    _p, failed, out = run(tmp_path, f"""
add fwd dst:0x000000000002 set_port(port:3, tag:0)
packet 3 {PKT}
""")
    assert failed == 1 and "port 3, packet 1: unexpected" in out


def test_unobserved_ports_are_ignored_and_expect_without_data(tmp_path):
    passed, _f, out = run(tmp_path, f"""
add fwd dst:0x000000000002 set_port(port:7, tag:0)
packet 0 {PKT}
expect 5
""")
    assert passed == 1, out


def test_multicast_commands(tmp_path):
    passed, _f, out = run(tmp_path, f"""
mc_mgrp_create 1
mc_node_create 0 2 3
mc_node_create 1 4
mc_node_associate 1 0
mc_node_associate 1 1
packet 0 {PKT}
expect 2 {PKT}
expect 3 {PKT}
expect 4 {PKT}
""")
    assert passed == 1, out


def test_mirroring(tmp_path):
    passed, _f, out = run(tmp_path, f"""
add fwd dst:0x000000000002 set_port(port:3, tag:0)
mirroring_add 4 6
packet 0 {PKT}
expect 3 {PKT}
expect 6 {PKT}
""")
    assert passed == 1, out


def test_register_commands(tmp_path):
    passed, _f, out = run(tmp_path, f"""
register_write reg 0 41
packet 0 {PKT}
register_read MyIngress.reg 0
register_reset reg
register_read reg 0
""")
    assert passed == 1, out
    assert "MyIngress.reg[0] = 42" in out and "MyIngress.reg[0] = 0" in out


def test_refused_command_is_a_warning_and_the_packets_decide(tmp_path):
    passed, _f, out = run(tmp_path, f"""
add fwd dst:0x000000000002 set_port(port:3, tag:0)
add fwd dst:0x000000000002 set_port(port:4, tag:0)
packet 0 {PKT}
expect 3 {PKT}
""")
    assert passed == 1
    assert "t.stf:3: warning: add refused (ALREADY_EXISTS)" in out


def test_file_errors_are_one_line_with_file_and_line(tmp_path):
    _p, failed, out = run(tmp_path, "\n\nadd nosuch k:1 a()\n")
    assert failed == 1
    assert out.splitlines()[0].startswith(f"{tmp_path / 't.stf'}:3: no table named 'nosuch'")
    _p, failed, out = run(tmp_path, "add acl src:0x0a****** mark()\n")
    assert failed == 1 and "its entries need a priority" in out
    _p, failed, out = run(tmp_path, "add fwd dst:1 set_port(port:1)\n")
    assert failed == 1 and "needs tag" in out
    assert "Traceback" not in out


def test_ignored_commands(tmp_path):
    passed, _f, out = run(tmp_path, f"""
wait
check_counter hits(0) packets == 1
remove all
packet 0 {PKT}
""")
    assert passed == 1, out


@pytest.mark.parametrize("line", ["mc_node_create 1 2 999", "mirroring_add 4 512", "mc_node_update 0 600"])
def test_a_replication_port_wider_than_nine_bits_is_refused_at_its_line(tmp_path, line):
    passed, failed, out = run(tmp_path, f"mc_node_create 1 2\n{line}\n")
    assert (passed, failed) == (0, 1)
    assert "t.stf:2: port " in out and "is out of range: v1model ports are 9 bits (0..511)" in out
