"""Constructs the native back end lowers beyond the plain blocks, against the Python pipeline (the
reference) on random frames: the same frames out of the same ports, the same counters.

ctor.p4: controls with constructor arguments (values, and a control instance passed to two
controls that apply it, so one instance and its counter run twice per packet).
subparser.p4: sub-parsers (by-reference stacks and headers, scalar in/out/inout arguments,
locals, accept/reject/no match returning to the caller, errors ending the parse, nesting).
tuple.p4: local variables of tuple types (initialised in order around a call with an inout
argument, assigned whole, elements by constant index).
hdrstruct.p4: headers with (nested) struct fields: extract, lookahead, ==, hash, whole and
field writes, a table key on a nested field, emit.
widebytes.p4: a bit<200> field as data (extract at an odd bit offset, lookahead, copies, ==,
emit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler
from testbed.p4model.clock import ManualClock
from testbed.p4model.pipeline import load

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) on this machine")

HERE = Path(__file__).parent
PROGRAMS = ("ctor.p4", "subparser.p4", "tuple.p4", "hdrstruct.p4", "widebytes.p4")


@pytest.fixture(scope="module", params=PROGRAMS)
def pair(request):
    program = HERE / request.param
    native = load(program, backend="native", clock=ManualClock())
    assert native.backend == "native"
    return load(program, backend="python", clock=ManualClock()), native


def _counts(pipe) -> dict:
    return {name: [c.read(i) for i in range(c.size)] for name, c in pipe.counters.items()}


@settings(max_examples=200, deadline=None)
@given(frames=st.lists(st.tuples(st.integers(0, 15), st.binary(min_size=12, max_size=12),
                                 st.sampled_from([b"\x88\xb7", b"\x88\xb8", b"\x08\x00"]),
                                 st.lists(st.tuples(st.sampled_from([0, 1, 1, 2, 3, 4, 5, 9, 0xee]),
                                                    st.binary(min_size=3, max_size=3)), max_size=16),
                                 st.binary(max_size=6)), min_size=1, max_size=5))
def test_native_equals_python(pair, frames):
    """Frames of an Ethernet header, a run of (kind, 3 bytes) records and a rest."""
    python, native = pair
    for port, addresses, kind, records, rest in frames:
        data = addresses + kind + b"".join(bytes([k]) + v for k, v in records) + rest
        assert native.process(port, data) == python.process(port, data), (port, data.hex())
    assert _counts(native) == _counts(python)
