"""The native fabric engine forwards one copy per packet: a program that can ask for more
(multicast, clone, resubmit, recirculate) is refused by the engine in one line naming the
construct, and a switch started with it runs the Python loop over its native pipeline, which
makes the copies (tests/unit/native/test_native_replication.py holds those to the Python target)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from testbed.p4model.backend.native import NativeUnsupported, compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")

NATIVE_TESTS = Path(__file__).resolve().parents[1] / "native"


def _pipeline(name: str):
    from testbed.p4model.backend.native.binding import NativePipeline
    from testbed.p4model.frontend import load_program

    return NativePipeline(load_program(NATIVE_TESTS / name))


def test_the_engine_refuses_a_program_that_asks_for_copies_in_one_line():
    from testbed.p4model.engine.binding import NativeFabric, engine_refusal

    replicating, plain = _pipeline("replicate.p4"), _pipeline("forward.p4")
    assert engine_refusal(plain) is None
    fabric = NativeFabric()
    with pytest.raises(NativeUnsupported) as info:
        fabric.set_pipeline(0, replicating, 511)
    text = str(info.value)
    assert "\n" not in text and "replicate.p4:" in text and "multicast" in text and "fabric engine" in text
    assert replicating not in fabric.pipelines


def test_a_switch_started_with_such_a_program_runs_the_python_loop(caplog):
    from testbed.p4model.switch.main import _engine_mode

    with caplog.at_level(logging.WARNING):
        assert _engine_mode(None, _pipeline("replicate.p4")) is False
    lines = [r.getMessage() for r in caplog.records if "Python loop drives the native pipeline" in r.getMessage()]
    assert len(lines) == 1 and "multicast" in lines[0] and "\n" not in lines[0]
    assert _engine_mode(None, _pipeline("forward.p4")) is True


def test_an_engine_switch_refuses_such_a_program_sent_later():
    from testbed.p4model.engine.realtime import _require_native
    from testbed.p4model.p4runtime.status import RpcError

    _require_native(_pipeline("forward.p4"))
    with pytest.raises(RpcError) as info:
        _require_native(_pipeline("replicate.p4"))
    assert "multicast" in str(info.value) and "\n" not in str(info.value)


def test_a_run_notes_that_its_switches_leave_the_engine():
    from testbed.emulation.packet_path import _native_check

    problem, engine = _native_check(NATIVE_TESTS / "replicate.p4")
    assert problem is None and "multicast" in engine and "fabric engine" in engine and "\n" not in engine
    assert _native_check(NATIVE_TESTS / "forward.p4") == (None, None)
