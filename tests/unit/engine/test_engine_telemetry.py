"""The engine's telemetry export: per-port counts per cell type match the frames injected, the queue
peak restarts on each read, and a sampler thread gives one line per switch per 100 ms of run time."""

from __future__ import annotations

import json
import time

import pytest

from testbed.p4model.backend.native import compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")


def test_export_counts_cell_types_per_port_and_peaks_restart_on_read(program):
    from test_engine_differential import HOSTS, frame, run_native

    from testbed.cells.classify import OTHER

    # host 0 (L1 port 1) to host 1 (L1 port 2): one hop through L1, out of its port 2.
    # Odd seq: a cell of type seq % 7; even seq: a UDP frame to another port (OTHER).
    sends = [(1000 + i, 0, frame(0, 1, 200, 0, i)) for i in range(5)]  # a burst: L1 port 2 queues
    kept, engine, index = run_native(program, sends, pfc=False)
    assert len(kept) == 5
    l1 = index[HOSTS[0][0]]
    ports = {r["port"]: r for r in engine.sample() if r["switch"] == l1}
    out = ports[2]
    expected = {}
    for i in range(5):
        cls = i % 7 if i % 2 else OTHER
        expected[cls] = expected.get(cls, 0) + 1
    assert {c: n for c, n in enumerate(out["class_packets"]) if n} == expected
    assert sum(out["class_bytes"]) == 5 * 200
    assert out["tx"] == 5 and ports[1]["rx"] == 5
    assert 2 <= out["peak"] <= 5  # 100 Mbit/s: 200 B take 16 us, the frames came 1 ns apart
    assert out["queue_full"] == 0 and out["lost"] == 0
    again = {r["port"]: r for r in engine.sample() if r["switch"] == l1}
    assert again[2]["peak"] == 0  # nothing queued since the previous read
    assert again[2]["class_packets"] == out["class_packets"]  # the counts are cumulative


def test_the_python_tm_exports_the_same_records(program):
    from test_engine_differential import HOSTS, frame, run_python

    sends = [(1000 + i, 0, frame(0, 1, 200, 0, i)) for i in range(5)]
    _, switches = run_python(program, sends, pfc=False)
    ports = {r["port"]: r for r in switches[HOSTS[0][0]].tm.sample()}
    assert sum(ports[2]["class_packets"]) == 5 and sum(ports[2]["class_bytes"]) == 1000
    assert ports[2]["peak"] >= 2
    assert {r["port"]: r for r in switches[HOSTS[0][0]].tm.sample()}[2]["peak"] == 0


def test_the_sampler_writes_one_line_per_switch_per_100_ms(program, tmp_path):
    from test_engine_differential import run_native

    from testbed.p4model.telemetry import PortSampler, engine_records

    _, engine, index = run_native(program, [], pfc=False)
    names = {i: name for name, i in index.items()}
    path = tmp_path / "telemetry.jsonl"
    epoch = time.time()
    sampler = PortSampler(lambda t: engine_records(engine, names, {}, t), path, epoch, interval_s=0.1).start()
    time.sleep(1.0)
    sampler.stop()
    run_s = time.time() - epoch
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert not sampler.errors
    for name in index:
        mine = [r for r in rows if r["switch"] == name]
        assert abs(len(mine) - (run_s / 0.1 + 1)) <= 1.5, (name, len(mine), run_s)
        assert all(set(r["tx"]) == set(mine[0]["tx"]) and mine[0]["tx"] for r in mine)  # every port, every line
        times = [r["t_s"] for r in mine]
        assert times == sorted(times) and times[-1] - times[0] <= run_s


def test_a_bad_interval_is_one_line():
    from testbed.p4model.telemetry import PortSampler

    with pytest.raises(ValueError, match="telemetry interval 0: must be above 0 s"):
        PortSampler(lambda t: [], None, 0.0, interval_s=0)


def test_a_fabric_process_reads_its_python_switches_through_loop_reader(program):
    from test_engine_differential import HOSTS, frame, run_python

    from testbed.p4model.telemetry import loop_reader

    sends = [(1000 + i, 0, frame(0, 1, 200, 0, i)) for i in range(5)]
    _, switches = run_python(program, sends, pfc=False)
    rows = {r["switch"]: r for r in loop_reader(switches, object())(1.5)}
    assert set(rows) == set(switches)
    l1 = rows[HOSTS[0][0]]
    assert l1["t_s"] == 1.5 and l1["tx"][2] == {"packets": 5, "bytes": 1000}
    assert sum(v["packets"] for v in l1["tx_by_type"][2].values()) == 5


def test_a_bad_telemetry_interval_in_a_fabric_spec_is_one_line(tmp_path):
    import json as _json

    from testbed.p4model.fabric.spec import SpecError, load_spec

    path = tmp_path / "spec.json"
    path.write_text(_json.dumps({"switches": [{"name": "s1", "argv": ["--no-p4"]}], "telemetry_file": "t.jsonl", "telemetry_interval_s": -1}))
    with pytest.raises(SpecError, match="telemetry_interval_s must be a number of seconds above 0, got -1$"):
        load_spec(str(path))


def test_the_reader_takes_the_programs_loaded_after_it_was_made(program, monkeypatch):
    """A process starts its sampler before a controller loads the switches' programs: each read
    must hand switch_record the program loaded by then (its tx/rx/ECN counters), not None."""
    from test_engine_differential import run_python

    from testbed.p4model import telemetry

    _, switches = run_python(program, [], pfc=False)
    loaded = {name: s.datapath for name, s in switches.items()}
    for s in switches.values():
        s.datapath = None
    read = telemetry.loop_reader(switches, object())
    for name, s in switches.items():
        s.datapath = loaded[name]
    seen = {}
    real = telemetry.switch_record

    def recording(name, t_s, ports, pipeline):
        seen[name] = pipeline
        return real(name, t_s, ports, pipeline)

    monkeypatch.setattr(telemetry, "switch_record", recording)
    read(0.5)
    assert seen and all(seen[name] is loaded[name].pipeline for name in switches)
