"""A run's agent processes (emulation/agents.py) on loopback: a host alone (`testbed host`) and a
group (`testbed hosts`) started from one plan, ready, ended, each host's exit code and its pid."""

import json
import subprocess
import sys
import time

from testbed.emulation.agents import AgentSet, AgentStartError
from testbed.host import workloads

PORT = 4937
HOSTS = {"h1": "127.0.6.1", "h2": "127.0.6.2", "h3": "127.0.6.3"}


def _member_argv(d, name, *extra):
    return ["--name", name, "--addr", HOSTS[name], "--port", str(PORT), "--peers-file", str(d / "peers.json"),
            "--workload-file", str(d / "wl.json"), "--cc", "tita", "--link-rate-mbps", "20",
            "--link-delay-us", "500", "--records", str(d / "rec"), "--epoch-file", str(d / "epoch"),
            "--grace-s", "0.3", *extra]


def _setup(tmp_path, timeout_s="30", size=100_000):
    wl = workloads.permutation(list(HOSTS), size, seed=3, start_us=50_000)
    (tmp_path / "peers.json").write_text(json.dumps(HOSTS))
    (tmp_path / "wl.json").write_text(json.dumps({"seed": 5, "messages": [m.to_json() for m in wl]}))
    (tmp_path / "rec").mkdir()
    (tmp_path / "agents").mkdir()
    return {h: _member_argv(tmp_path, h, "--timeout-s", timeout_s) for h in HOSTS}


def _local(host, argv, log):
    return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)


def _epoch(tmp_path):
    (tmp_path / "epoch.partial").write_text(repr(time.time() + 0.3))
    (tmp_path / "epoch.partial").replace(tmp_path / "epoch")


def test_a_host_alone_and_a_group_run_one_plan(tmp_path):
    argv = _setup(tmp_path)
    agents = AgentSet(tmp_path / "agents", tmp_path / "rec", tmp_path, realtime_priority=0)
    started = []
    agents.start([["h1"], ["h2", "h3"]], argv, start_in=_local, netns=lambda host: None,
                 on_start=lambda pid, label, command: started.append((label, command[3])))
    assert started == [("agent h1", "host"), ("agents-1", "hosts")]
    group_file = json.loads((tmp_path / "agents" / "agents-1.json").read_text())
    assert [m["argv"][1] for m in group_file["members"]] == ["h2", "h3"]
    pids = agents.pids()
    assert pids["h2"] == pids["h3"] != pids["h1"]
    agents.wait_ready(timeout_s=60)
    _epoch(tmp_path)
    codes, notes = agents.wait(time.monotonic() + 60)
    assert codes == {"h1": 0, "h2": 0, "h3": 0} and notes == []
    stats = {h: json.loads((tmp_path / "rec" / f"{h}.stats.json").read_text()) for h in HOSTS}
    assert all(s["end_reason"] == "done" for s in stats.values())
    assert stats["h1"]["cpu_s"] is not None and "agent_process" not in stats["h1"]
    assert stats["h2"]["agent_process"] == stats["h3"]["agent_process"] == "agents-1"
    assert agents.log_of("h3") == tmp_path / "agents" / "agents-1.log"


def test_a_member_that_does_not_finish_gets_its_own_code(tmp_path):
    argv = _setup(tmp_path, timeout_s="0.5", size=4_000_000)  # 1.6 s at 20 Mbit/s: longer than allowed
    agents = AgentSet(tmp_path / "agents", tmp_path / "rec", tmp_path, realtime_priority=0)
    agents.start([["h1", "h2", "h3"]], argv, start_in=_local, netns=lambda host: None)
    agents.wait_ready(timeout_s=60)
    _epoch(tmp_path)
    codes, _notes = agents.wait(time.monotonic() + 60)
    assert set(codes) == set(HOSTS) and all(code == 3 for code in codes.values()), codes


def test_a_process_that_ends_before_it_is_ready_is_named_in_one_line(tmp_path):
    argv = _setup(tmp_path)
    argv["h3"] = _member_argv(tmp_path, "h3", "--cc", "no-such-cc")
    agents = AgentSet(tmp_path / "agents", tmp_path / "rec", tmp_path, realtime_priority=0)
    agents.start([["h1"], ["h2", "h3"]], argv, start_in=_local, netns=lambda host: None)
    try:
        agents.wait_ready(timeout_s=60)
    except AgentStartError as error:
        message = str(error)
    else:
        raise AssertionError("a group with a bad member was taken as ready")
    finally:
        agents.terminate()
    assert "agents-1 (h2, h3) exited with code 2 before it was ready" in message
    assert "\n" not in message.split("log ")[0]
