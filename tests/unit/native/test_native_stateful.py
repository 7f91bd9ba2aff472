"""A program with a ternary+exact table switched on action_run, a register,
a counter, exit and a struct emitted whole: native
and Python give the same packets, ports, register values and counter
counts for random entries and frames; control-plane writes to the
register and counter reset reach the C arrays."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import compiler
from testbed.p4model.pipeline import load
from testbed.p4model.runtime.tables import ActionCall, TableEntry

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) on this machine")

PROGRAM = Path(__file__).parent / "stateful.p4"
MASKS = (0, 0xFF, 0xFF0000000000, 2**48 - 1)

entry = st.tuples(st.integers(0, 2**48 - 1), st.sampled_from(MASKS), st.integers(0, 3),
                  st.integers(1, 4), st.booleans(), st.integers(0, 7), st.integers(0, 2**32 - 1))
frame = st.tuples(st.binary(min_size=8, max_size=24), st.integers(0, 3), st.integers(0, 7))


@settings(max_examples=80, deadline=None)
@given(entries=st.lists(entry, max_size=8), frames=st.lists(frame, min_size=1, max_size=16),
       preset=st.integers(0, 2**32 - 1))
def test_stateful_native_equals_python(entries, frames, preset):
    pipes = [load(PROGRAM, backend="python"), load(PROGRAM, backend="native")]
    assert hasattr(pipes[1], "so_path")
    for pipe in pipes:
        table = pipe.tables["I.t"]
        for value, mask, etype, prio, fwd, port, add in entries:
            call = ActionCall("I.fwd", (port, add)) if fwd else ActionCall("I.drop", ())
            match = ((value & mask, mask), etype)
            if table.find(match, prio) is None:
                table.insert(TableEntry(match=match, priority=prio, action=call))
        pipe.registers["I.regs"].cp_write(1, preset)
    for data, etype, port in frames:
        data = data[:12] + bytes([0, etype]) + data[14:] if len(data) >= 14 else data
        assert pipes[1].process(port, data) == pipes[0].process(port, data)
    python, native = pipes
    assert list(native.registers["I.regs"].values) == list(python.registers["I.regs"].values)
    assert list(native.counters["I.cnt"].packets) == python.counters["I.cnt"].packets
    assert list(native.counters["I.cnt"].bytes) == python.counters["I.cnt"].bytes
    native.counters["I.cnt"].reset()
    assert not any(native.counters["I.cnt"].packets)
