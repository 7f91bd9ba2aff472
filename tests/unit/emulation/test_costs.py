"""A run's CPU per packet, and that only a run that kept real time calibrates."""

import json

from testbed.emulation import costs
from testbed.scenario import capacity


def tm(enqueued, lag_us):
    return {"tm": {"totals": {"enqueued": enqueued}, "fidelity": {"dequeue": {"p99_lag_us": lag_us}}}}


def agent(tmp_path, name, cpu_s, tx, rx, late_us):
    (tmp_path / f"{name}.stats.json").write_text(json.dumps(
        {"cpu_s": cpu_s, "tx_datagrams": tx, "rx_datagrams": rx, "pacer_lateness": {"p99_us": late_us}}))


def test_costs_per_packet_and_calibration_only_in_real_time(tmp_path, monkeypatch):
    monkeypatch.setattr(capacity, "CALIBRATION_PATH", tmp_path / "calibration.json")
    agent(tmp_path, "h1", 1.0, 6000, 4000, 300.0)
    out = costs.measure_costs({"s1": 2.0, "s2": 2.0}, {"s1": tm(10_000, 200), "s2": tm(10_000, 250)},
                              tmp_path, 1000.0, "run a")
    assert out == {"switch_us_per_packet": 200.0, "agent_us_per_datagram": 100.0, "switch_packets": 20_000,
                   "agent_datagrams": 10_000, "calibrates": True, "switch_mode": "per_switch"}
    assert capacity.load_costs().switch_us_per_packet == 200.0
    agent(tmp_path, "h1", 1.0, 6000, 4000, 5000.0)  # a host fell behind: figures kept, not calibrated
    late = costs.measure_costs({"s1": 9.0}, {"s1": tm(10_000, 200)}, tmp_path, 1000.0, "run b")
    assert late["calibrates"] is False and late["switch_us_per_packet"] == 900.0
    assert capacity.load_costs().switch_us_per_packet == 200.0
    small = costs.measure_costs({"s1": 1.0}, {"s1": tm(10, 0)}, tmp_path / "none", 1000.0, "run c")
    assert small["switch_us_per_packet"] is None and small["agent_us_per_datagram"] is None
