"""No packet makes the pipeline raise or hang; errors are counted and
located; the CPU port path (PacketOut in, PacketIn out)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.p4model.runtime.tables import ActionCall, TableEntry

from .conftest import load_program

PROGRAMS = ["basic_ipv4.p4", "v1m_parser.p4", "v1m_flow.p4", "v1m_misc.p4", "v1m_exprs.p4",
            "v1m_externs.p4"]


@pytest.fixture(scope="module")
def pipes():
    out = {}
    for name in PROGRAMS:
        p = load_program(name)
        p.pre.set_clone_session(5, [(0, 4)])
        p.pre.set_group(7, [(1, 3), (2, 2)])
        out[name] = p
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(PROGRAMS), port=st.integers(0, 511), data=st.binary(max_size=96))
def test_random_bytes_never_raise(pipes, name, port, data):
    out = pipes[name].process(port, data)
    assert isinstance(out, list)
    for p, d in out:
        assert 0 <= p < 512 and isinstance(d, bytes)


def test_python_error_in_generated_code_is_caught_and_located(pipes, caplog):
    pipe = pipes["basic_ipv4.p4"]
    table = next(name for name in pipe.tables if name.endswith("ipv4_lpm"))
    nhop = next(a for a in pipe.tables[table].action_names if a.endswith("set_nhop"))
    # an entry carrying a non-int argument makes the action fail at run time
    pipe.tables[table]._matcher.add(TableEntry(match=((0x0B000000, 8),),
                                               action=ActionCall(nhop, ("x", None))))
    before = pipe.stats["errors"]
    pkt = bytes(12) + b"\x08\x00" + bytes([0x45]) + bytes(15) + bytes([11, 0, 0, 1]) + b"pay"
    assert pipe.process(1, pkt) == []
    assert pipe.stats["errors"] == before + 1
    assert "basic_ipv4.p4:" in caplog.text


def test_packet_out_enters_on_cpu_port(pipes):
    pipe = pipes["v1m_flow.p4"]
    pipe.cpu_port = 64
    data = bytes([0]) + bytes(10) + b"x"
    (port, out), = pipe.packet_out(data)
    assert port == 1
    pipe.cpu_port = None
    with pytest.raises(ValueError):
        pipe.packet_out(data)
