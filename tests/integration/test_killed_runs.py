"""`testbed run` killed with kill -9 while it builds, while its traffic runs and while it tears
down: `testbed report` on what it left gives one line or a report marked partial (never a
traceback), and `testbed clean` then removes every process, interface and namespace its
manifest lists."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """name: killed
duration_s: 20
topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
links: {rate_mbps: 1, delay_us: 1000}
switch: {target: builtin}
fabric: {load_balancing: spray}
transport: {cc: none}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 262144, cross_tor: true}
"""

MOMENTS = {
    "build": "building the network",
    "traffic": "traffic:",
    "teardown": "4/4 messages",  # every message delivered: the run is ending (grace, then teardown)
}


def _testbed(*args, env, timeout=120):
    return subprocess.run([sys.executable, "-m", "testbed.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _alive(pid: int, start: int) -> bool:
    """Still running: the same process, and not a zombie (an orphan whose reaper has not come yet
    holds nothing)."""
    from testbed.emulation.cleanup import _running

    return _running(pid, start)


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_run_killed_at_each_moment_is_reported_and_cleaned(tmp_path, registry, moment):
    scenario = tmp_path / "killed.yaml"
    scenario.write_text(SCENARIO)
    env = {**os.environ, "TESTBED_REGISTRY": str(registry), "PYTHONUNBUFFERED": "1"}
    run = subprocess.Popen([sys.executable, "-m", "testbed.cli", "run", "--fit", str(scenario),
                            "--runs-dir", str(tmp_path / "runs")], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    deadline = time.monotonic() + 240
    try:
        for line in run.stdout:
            seen.append(line.rstrip())
            if MOMENTS[moment] in line:
                time.sleep(0.5 if moment != "teardown" else 0.0)
                break
            assert time.monotonic() < deadline, "\n".join(seen[-20:])
        else:
            pytest.fail("the run ended before the moment to kill it:\n" + "\n".join(seen[-20:]))
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
    finally:
        if run.poll() is None:
            run.kill()
    manifests = [Path(p.read_text()) for p in registry.glob("*.path")]
    assert manifests, f"no manifest registered when killed at {moment}"
    listed = [json.loads(m.read_text()) for m in manifests]
    (run_dir,) = [p for p in (tmp_path / "runs" / "killed").iterdir() if p.is_dir()]

    report = _testbed("report", str(run_dir), env=env)
    assert "Traceback" not in report.stderr + report.stdout, report.stderr
    if report.returncode != 0:
        assert len(report.stderr.strip().splitlines()) == 1, report.stderr
    else:
        assert (run_dir / "report.md").read_text().startswith("**Partial report:")

    clean = _testbed("clean", env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "removed" in clean.stdout and "left alone" not in clean.stdout, clean.stdout
    for data in listed:
        for record in data["processes"]:
            assert not _alive(record["pid"], record["start_time"]), f"{record['role']} left running"
        for name in data["interfaces"]:
            assert not Path(f"/sys/class/net/{name}").exists(), f"interface {name} left behind"
    assert list(registry.glob("*.path")) == []
