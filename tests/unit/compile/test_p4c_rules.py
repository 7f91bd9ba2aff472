"""The compiled pipeline follows p4c's front-end rewrites the control plane
relies on (programs in tests/p4programs): a table without default_action
runs NoAction on a miss and reports it as its default entry; actions with
bound directional args take only their action data; a varbit field counts
at its current length in checksum and hash field lists."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2

from testbed.p4model.runtime import hashing
from testbed.p4model.control_plane import ControlPlane
from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.p4info import generate
from testbed.p4model.pipeline import load

PROGRAMS = Path(__file__).resolve().parents[2] / "p4programs"


@pytest.fixture(scope="module")
def rules():
    pipeline = load(PROGRAMS / "p4c_table_rules.p4")
    return pipeline, ControlPlane(pipeline, generate(pipeline.program))


def _ids(cp_info):
    return ({t.preamble.name: t.preamble.id for t in cp_info.tables},
            {a.preamble.name: a.preamble.id for a in cp_info.actions})


def test_miss_on_table_without_default_runs_noaction(rules):
    pipeline, _ = rules
    plain = pipeline.tables["Ing.plain"]
    assert plain.default.action == "NoAction" and "NoAction" in plain.default_only
    before = pipeline.stats["errors"]
    assert pipeline.process(0, bytes([0, 5, 0])) == [(2, bytes([0, 5, 0]))]
    assert pipeline.stats["errors"] == before


def test_default_entry_of_table_without_default_is_noaction(rules):
    pipeline, cp = rules
    tables, actions = _ids(generate(pipeline.program))
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = tables["Ing.plain"]
    entity.table_entry.is_default_action = True
    (got,) = cp.read(entity)
    assert got.table_entry.action.action.action_id == actions["NoAction"]
    # NoAction is @defaultonly there: not allowed in an entry
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = update.entity.table_entry
    te.table_id = tables["Ing.plain"]
    te.match.add(field_id=1).exact.value = b"\x07"
    te.action.action.action_id = actions["NoAction"]
    with pytest.raises(ControlPlaneError) as err:
        cp.write(update)
    assert err.value.code == "PERMISSION_DENIED"


def test_bound_out_arg_gets_only_action_data(rules):
    pipeline, cp = rules
    tables, actions = _ids(generate(pipeline.program))
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = update.entity.table_entry
    te.table_id = tables["Ing.setter"]
    te.match.add(field_id=1).exact.value = b"\x09"
    te.action.action.action_id = actions["Ing.setbyte"]
    te.action.action.params.add(param_id=1, value=b"\x5a")
    cp.write(update)
    assert pipeline.process(0, bytes([9, 6, 0])) == [(2, bytes([9, 0x5A, 0]))]


@pytest.mark.parametrize("opt", [b"", b"\xab", b"\x12\x34", b"\x01\x02\x03", b"\xde\xad\xbe\xef"])
def test_varbit_in_checksum_and_hash_lists(opt):
    pipeline = load(PROGRAMS / "varbit_checksum.p4")
    n = bytes([len(opt)])
    (port, out), = pipeline.process(0, n + bytes(4) + opt)
    assert port == 1
    assert out[1:3] == hashing.compute("csum16", n + opt).to_bytes(2, "big")
    assert out[3:5] == hashing.compute("crc16", opt + n).to_bytes(2, "big")
    assert out[5:] == opt
