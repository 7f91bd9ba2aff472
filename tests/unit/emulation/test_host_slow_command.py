"""host_slow on the emulated fabric without Mininet: the fault runner's command file and signal, and
real agents on loopback taking it (their application's delay and their NIC's rate)."""

from __future__ import annotations

import json
import os
import threading
import time

from testbed.emulation import faults
from testbed.host import records
from testbed.host.agent import Agent
from testbed.host.config import TransportConfig
from testbed.host.nic import NicPorts
from testbed.host.slow import SlowCommand, SlowCommands, read_command, write_command
from testbed.host.workloads import MessageSpec
from testbed.scenario import parse_scenario

SCENARIO = """
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
workload: [{kind: pingall}]
faults:
  - {at_s: 0.3, kind: host_slow, target: h1, duration_s: 1.2, delay_ms: 150, rate_mbps: 4}
"""


def test_host_slow_plans_a_command_and_its_end():
    actions = faults.plan_faults(parse_scenario(SCENARIO, "s.yaml"))
    assert [(a.at_s, a.kind, a.target, a.slow) for a in actions] == [
        (0.3, "host_slow", "h1", SlowCommand(150, 4)), (1.5, "host_restore", "h1", SlowCommand(0, None))]
    assert all(not a.interfaces and a.agent is None for a in actions)  # no cable and no SIGSTOP


def test_a_command_file_is_whole_and_a_bad_one_is_one_line(tmp_path):
    path = tmp_path / "h1.command.json"
    write_command(path, SlowCommand(12.5, None))
    assert read_command(path) == SlowCommand(12.5, None) and not list(tmp_path.glob("*.partial"))
    path.write_text('{"delay_ms": -1}')
    try:
        read_command(path)
    except faults.TestbedError as error:
        assert "delay_ms must be >= 0" in str(error) and "\n" not in str(error)
    else:
        raise AssertionError("a negative delay was taken")


def test_nic_rate_cap_slows_the_wire_and_the_pacer_rate():
    nic = NicPorts(["h1-eth0", "h1-eth1"], 10e6)
    assert nic.rate_bps() == 20e6
    nic.rate_cap_bps = 4e6
    assert nic.rate_bps() == 4e6 and nic.wire_rate_bps() == 2e6
    assert nic.on_wire(0, 0.0, 1000, 0.0) == 1000 * 8 / 2e6  # a cell takes its share of the cap
    nic.rate_cap_bps = None
    assert nic.wire_rate_bps() == 10e6


def _ping_pong(steps: int) -> list[MessageSpec]:
    """h1 and h2 take turns, one every 50 ms: each message starts at its time once the other's last
    one arrived."""
    out, last = [], None
    for i in range(steps):
        src, dst = ("h1", "h2") if i % 2 == 0 else ("h2", "h1")
        out.append(MessageSpec(src, dst, i // 2, 2000, start_us=i * 50_000, deps=(last,) if last else ()))
        last = (src, i // 2)
    return out


def test_the_runner_signals_a_live_agent_which_delays_its_messages_and_caps_its_nic(tmp_path):
    hosts = {"h1": "127.0.0.21", "h2": "127.0.0.22"}
    wl = _ping_pong(40)
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16)
    command_file = tmp_path / "h1.command.json"
    epoch = time.time() + 0.2
    agents = {n: Agent(n, a, hosts, wl, cfg, tmp_path / "rec", seed=3, port=4801, grace_s=0.2, timeout_s=15,
                       epoch=epoch, command_file=command_file if n == "h1" else None)
              for n, a in hosts.items()}
    agents["h1"].commands.install()  # the test is the main thread: the handler runs here
    try:
        results = {}
        threads = [threading.Thread(target=lambda a=a: results.__setitem__(a.name, a.run()))
                   for a in agents.values()]
        for t in threads:
            t.start()
        actions = faults.plan_faults(parse_scenario(SCENARIO, "s.yaml"))
        runner = faults.FaultRunner(actions, epoch, tmp_path / "faults.jsonl", agents={"h1": os.getpid()},
                                    commands={"h1": command_file}).start()
        while any(t.is_alive() for t in threads):  # signals reach the main thread between these sleeps
            time.sleep(0.01)
        assert runner.finish() == []
    finally:
        agents["h1"].commands.close()
    assert {n: r.reason for n, r in results.items()} == {"h1": "done", "h2": "done"}
    logged = [json.loads(line) for line in (tmp_path / "faults.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["delay_ms"], r["rate_mbps"]) for r in logged] == [("host_slow", 150, 4),
                                                                            ("host_restore", 0, None)]
    stats = json.loads((tmp_path / "rec" / "h1.stats.json").read_text())
    series = stats["series"]  # the simulator's keys too
    assert series["messages_delivered"][-1] == 20 and series["messages_acked"][-1] == 20
    assert series["tx_bytes"][-1] > 20 * 2000 and series["rx_bytes"][-1] > 20 * 2000
    assert len(series["tx_bytes"]) == len(series["t_s"])
    changes = stats["slow_changes"]
    assert [(c["delay_ms"], c["nic_rate_mbps"]) for c in changes] == [(150, 4.0), (0, 20.0)]
    # the signal wakes the agent's loop (its wake-up socket), which applies the command after the
    # runner sent it and before the next one: observed directly, not as a latency that a loaded
    # machine can stretch
    assert agents["h1"].commands.woken >= 2
    signalled = [r["t_s"] for r in logged]
    assert signalled[0] <= changes[0]["t_s"] < signalled[1] <= changes[1]["t_s"]
    recs = {n: records.read_jsonl(tmp_path / "rec" / f"{n}.jsonl") for n in hosts}
    arrived = {(r["src"], r["msg_id"]): r["delivered_us"] / 1e6 for n in hosts for r in recs[n]
               if r["kind"] == "message_delivered"}
    # each message's wait between its turn (the other's message arrived) and its start
    waits = {}
    for spec in wl:
        sent = next(r for r in recs[spec.src] if r["kind"] == "message_sent" and r["msg_id"] == spec.msg_id)
        if spec.deps:
            turn = max(arrived[spec.deps[0]], spec.start_us / 1e6)
            waits[(spec.src, spec.msg_id)] = (turn, sent["start_us"] / 1e6 - turn)
    slow = [w for (src, _), (turn, w) in waits.items() if src == "h1" and 0.35 < turn < 1.4]
    fast = [w for (src, _), (turn, w) in waits.items() if src == "h2" or turn > 1.6]
    assert slow and all(0.14 < w < 0.3 for w in slow)  # h1's application waited its 150 ms
    assert fast and all(w < 0.1 for w in fast)  # h2 never, nor h1 once it ended
