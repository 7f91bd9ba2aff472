"""The real UDP driver on loopback (127.0.0.0/8 only): bytes verified end to end."""

import json
import subprocess
import sys
import threading

import pytest

from testbed.host import records, workloads
from testbed.host.agent import Agent, AgentError, load_workload
from testbed.host.config import TransportConfig

BASE_PORT = 4793


def write_files(tmp_path, hosts, wl, seed=11):
    (tmp_path / "peers.json").write_text(json.dumps(hosts))
    (tmp_path / "wl.json").write_text(json.dumps({"seed": seed, "messages": [m.to_json() for m in wl]}))


def run_agents(tmp_path, hosts, wl, cc, port=BASE_PORT, timeout_s=20.0):
    cfg = TransportConfig(cc=cc, link_rate_bps=20e6, bdp_cells=16)
    agents = [Agent(n, a, hosts, wl, cfg, tmp_path / "rec", seed=11, port=port, grace_s=0.2,
                    timeout_s=timeout_s) for n, a in hosts.items()]
    results = {}
    threads = [threading.Thread(target=lambda a=a: results.__setitem__(a.name, a.run())) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return agents, results


@pytest.mark.parametrize("cc", ["tita", "dcqcn", "none"])
def test_three_agents_deliver_verified_messages(tmp_path, cc):
    hosts = {"h1": "127.0.0.2", "h2": "127.0.0.3", "h3": "127.0.0.4"}
    wl = workloads.combine(workloads.ring_allreduce(list(hosts), 24_000),
                           workloads.incast(["h1", "h2"], "h3", 40_000))
    agents, results = run_agents(tmp_path, hosts, wl, cc)
    assert {n: r.reason for n, r in results.items()} == {n: "done" for n in hosts}
    recs = [r for n in hosts for r in records.read_jsonl(tmp_path / "rec" / f"{n}.jsonl")]
    got = [r for r in recs if r["kind"] == "message_delivered"]
    assert len(got) == len(wl) and all(r["verified"] for r in got)
    assert all(a.runner.verify_failures == 0 and a.ep.stats()["corrupt_messages"] == 0 for a in agents)
    summary = records.summarize(wl, recs)
    assert summary["allreduce"]["delivered"] == 12 and summary["allreduce"]["busbw_bps"] > 0
    stats = json.loads((tmp_path / "rec" / "h3.stats.json").read_text())
    assert stats["end_reason"] == "done" and stats["messages_expected_missing"] == 0
    # the messages to h3 were built ahead: each was compared cell by cell as it came
    assert stats["messages_checked_cell_by_cell"] == sum(1 for m in wl if m.dst == "h3" and not m.op)


def test_agent_with_vanished_peer_times_out_cleanly(tmp_path):
    hosts = {"h1": "127.0.0.5", "h2": "127.0.0.6"}  # h2 is never started
    wl = [workloads.MessageSpec("h1", "h2", 0, 5000)]
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16)
    agent = Agent("h1", hosts["h1"], hosts, wl, cfg, tmp_path / "rec", seed=1, timeout_s=0.5)
    result = agent.run()
    assert result.exit_code == 3 and result.reason == "timeout"
    stats = json.loads((tmp_path / "rec" / "h1.stats.json").read_text())
    assert stats["messages_pending"] == 0 and stats["timeouts"] > 0


def test_cli_runs_agents_as_processes(tmp_path):
    hosts = {"h1": "127.0.0.7", "h2": "127.0.0.8"}
    wl = workloads.combine([workloads.MessageSpec("h1", "h2", 0, 30_000)],
                           [workloads.MessageSpec("h2", "h1", 0, 10_000)])
    write_files(tmp_path, hosts, wl)
    procs = [subprocess.Popen(
        [sys.executable, "-m", "testbed.cli", "host", "--name", n, "--addr", a,
         "--peers-file", str(tmp_path / "peers.json"), "--workload-file", str(tmp_path / "wl.json"),
         "--cc", "tita", "--cell-size", "1024", "--link-rate-mbps", "20",
         "--records", str(tmp_path / "rec"), "--grace-s", "0.3", "--timeout-s", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n, a in hosts.items()]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    for n in hosts:
        got = [r for r in records.read_jsonl(tmp_path / "rec" / f"{n}.jsonl")
               if r["kind"] == "message_delivered"]
        assert len(got) == 1 and got[0]["verified"]


def test_bad_files_raise_clear_errors(tmp_path):
    (tmp_path / "wl.json").write_text("{not json")
    with pytest.raises(AgentError, match="wl.json"):
        load_workload(tmp_path / "wl.json")
    cfg = TransportConfig()
    with pytest.raises(AgentError, match="h9"):
        Agent("h1", "127.0.0.9", {"h1": "127.0.0.9"}, [workloads.MessageSpec("h1", "h9", 0, 10)],
              cfg, tmp_path, seed=1)


def test_an_agents_cpu_is_its_loops_and_leaves_out_the_records_written_after_it(tmp_path, monkeypatch):
    """`cpu_s` in the stats is the loop's CPU, from begin() to end(): the records written after the
    loop (its messages' JSON lines first) are not per-cell work and are not counted."""
    import time

    write_jsonl = records.write_jsonl
    burnt = []

    def slow_write_jsonl(path, rows):
        started = time.process_time()
        while time.process_time() - started < 0.3:  # CPU, not sleep: what a slow JSON dump costs
            pass
        burnt.append(time.process_time() - started)
        write_jsonl(path, rows)

    monkeypatch.setattr(records, "write_jsonl", slow_write_jsonl)
    hosts = {"h1": "127.0.0.7", "h2": "127.0.0.8"}  # h2 is never started: h1 retransmits until its timeout
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16)
    agent = Agent("h1", hosts["h1"], hosts, [workloads.MessageSpec("h1", "h2", 0, 5000)], cfg, tmp_path / "rec",
                  seed=1, timeout_s=0.3)
    assert agent.run().reason == "timeout"
    stats = json.loads((tmp_path / "rec" / "h1.stats.json").read_text())
    assert burnt and stats["cpu_s"] is not None and stats["cpu_s"] < burnt[0]
