"""Whole fabrics on the builtin target killed with -9 and cleaned, and a run that finds its
interface taken.

The ping-all of a leaf-spine (every pair answers, no interface or registry entry left) and of a
k=4 fat-tree (240 pairs, no interface left) is checked on the runs that carry their traffic, in
every switch mode: test_transport_fabric.py's PFC test and test_fattree_traffic.py's RTT test."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PINGALL = """
name: {name}
duration_s: 5
topology: {topology}
links: {{rate_mbps: 10, delay_us: 100}}
switch: {{target: builtin, processes: {processes}}}
transport: {{cc: none}}
workload:
  - {{kind: pingall}}
"""


def interfaces() -> set[str]:
    return set(os.listdir("/sys/class/net"))


def test_kill_9_then_clean_leaves_nothing(tmp_path, registry, processes):
    text = PINGALL.format(name="long", topology="{kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}",
                          processes=processes) + "  - {kind: permutation, start_s: 0, message_bytes: 50000000, count: 1}\n"
    kill_and_clean(tmp_path, registry, text, lambda run_dir, data: any(p["role"].startswith("agent")
                                                                         for p in data["processes"]))


def test_kill_9_mid_fault_then_clean_leaves_nothing(tmp_path, registry):
    """Killed while an agent is stopped and a cable is down: clean still removes everything."""
    text = PINGALL.format(name="long", topology="{kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}",
                          processes="auto").replace("duration_s: 5", "duration_s: 200") + (
        "  - {kind: permutation, start_s: 0, message_bytes: 50000000, count: 1}\n"
        "faults:\n"
        "  - {at_s: 0.2, kind: agent_stall, target: h1, duration_s: 100}\n"
        "  - {at_s: 0.3, kind: link_down, target: leaf1-spine1}\n")

    def mid_fault(run_dir, data):
        faults = run_dir / "faults.jsonl"
        return faults.exists() and len(faults.read_text().splitlines()) >= 2

    kill_and_clean(tmp_path, registry, text, mid_fault)


def kill_and_clean(tmp_path, registry, text: str, ready) -> None:
    """Start `testbed run`, kill -9 it once ready(run_dir, manifest) holds, then `testbed clean`:
    every interface it made and every process it started must be gone."""
    scenario = tmp_path / "long.yaml"
    scenario.write_text(text)
    before = interfaces()
    run = subprocess.Popen([sys.executable, "-m", "testbed.cli", "run", "--force", str(scenario), "--runs-dir",
                            str(tmp_path / "runs")],
                           env={**os.environ, "TESTBED_REGISTRY": str(registry)},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    manifest_path = None
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:  # wait until the run is where the test wants it
            paths = list(tmp_path.glob("runs/long/*/base/manifest.json"))
            if paths:
                data = json.loads(paths[0].read_text())
                if ready(paths[0].parent, data):
                    manifest_path = paths[0]
                    break
            assert run.poll() is None, f"run ended early:\n{run.stdout.read()}"
            time.sleep(0.2)
        assert manifest_path, "the run never got there"
        run.send_signal(signal.SIGKILL)
        run.wait()
        data = json.loads(manifest_path.read_text())
        assert interfaces() != before, "nothing to clean: the test proves nothing"
        clean = subprocess.run([sys.executable, "-m", "testbed.cli", "clean"], capture_output=True, text=True,
                               env={**os.environ, "TESTBED_REGISTRY": str(registry)})
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert interfaces() == before
        for process in data["processes"]:  # gone, another process now, or a zombie waiting for its reaper
            stat = Path(f"/proc/{process['pid']}/stat")
            fields = stat.read_text().rsplit(")", 1)[1].split() if stat.exists() else None
            assert fields is None or fields[19] != str(process["start_time"]) or fields[0] == "Z", process
        again = subprocess.run([sys.executable, "-m", "testbed.cli", "clean"], capture_output=True, text=True,
                               env={**os.environ, "TESTBED_REGISTRY": str(registry)})
        assert "nothing to clean" in again.stdout
    finally:
        if run.poll() is None:
            run.kill()


def test_an_interface_left_by_another_run_refuses_the_run_in_one_line_and_survives(tmp_path, registry):
    """A name the fabric would create that already exists (a killed run's, or a run beside this
    one) stops the run before anything is made or recorded: one line naming it, no traceback, and
    the interface is still there after the run and after `testbed clean` (it is not this run's)."""
    scenario = tmp_path / "taken.yaml"
    scenario.write_text(PINGALL.format(name="taken", topology="{kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}",
                                       processes="per_switch"))
    subprocess.run(["ip", "link", "add", "leaf2-eth2", "type", "veth", "peer", "name", "taken-peer"], check=True)
    try:
        env = {**os.environ, "TESTBED_REGISTRY": str(registry)}
        run = subprocess.run([sys.executable, "-m", "testbed.cli", "run", "--force", str(scenario),
                              "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, env=env)
        assert run.returncode != 0
        assert "Traceback" not in run.stdout + run.stderr
        assert "interface leaf2-eth2 already exists" in run.stdout + run.stderr
        assert set(interfaces()) & {"leaf1-eth1", "spine1-eth1", "h1-eth0"} == set(), "the run made interfaces"
        subprocess.run([sys.executable, "-m", "testbed.cli", "clean"], capture_output=True, text=True, env=env)
        assert "leaf2-eth2" in interfaces()
    finally:
        subprocess.run(["ip", "link", "delete", "leaf2-eth2"], capture_output=True)
