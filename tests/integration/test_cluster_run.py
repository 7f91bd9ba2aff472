"""`testbed run` of a fabric over two servers, both this machine: `localhost` (no ssh) and
root@127.0.0.1 over a private sshd (local_sshd.py), the cluster edition's own way to try it.

A k=4 fat-tree split over the two completes a permutation with every message verified, its 8
cross-server cables in ssh tunnels whose delay the report's verdict gives, and `testbed clean`
leaves nothing: no process, interface, namespace or tunnel. A run killed with kill -9 while its
traffic runs is cleaned on both servers, and a run whose tunnels a server refuses fails in one line
and removes what it had built. Bad input gets one line: a server that cannot be reached when the
run starts, and a fabric that needs more servers than it names.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from leftovers import assert_parts_gone, processes_mentioning  # tests/integration is on sys.path
from local_sshd import LocalSshdUnavailable, local_sshd

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

SERVERS = """placement:
  servers:
    - {name: here, address: localhost}
    - {name: again, address: 127.0.0.1, user: root}
"""
FAT_TREE = """name: cluster-ft
duration_s: 14
seed: 1
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: 1, delay_us: 1000}
switch: {target: builtin}
fabric: {load_balancing: spray}
transport: {cc: none}
workload:
  - {kind: pingall}
  - {kind: permutation, start_s: 0.5, message_bytes: 65536, count: 1, cross_tor: true}
""" + SERVERS
LEAF_SPINE = """name: cluster-killed
duration_s: 30
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 1, delay_us: 1000}
switch: {target: builtin}
fabric: {load_balancing: spray}
transport: {cc: none}
workload:
  - {kind: permutation, start_s: 0.5, message_bytes: 524288, cross_tor: true}
""" + SERVERS


@pytest.fixture
def sshd():
    try:
        with local_sshd() as config:
            yield config
    except LocalSshdUnavailable as why:
        pytest.skip(f"ssh to this machine cannot be made to work here: {why}")


def _env(registry: Path, config: Path) -> dict:
    """The test's own registry, and its own calibration file, which a run over servers must not write."""
    return {**os.environ, "TESTBED_REGISTRY": str(registry), "TESTBED_SSH_CONFIG": str(config),
            "TESTBED_CALIBRATION": str(registry.parent / "calibration.json"), "PYTHONUNBUFFERED": "1"}


def _testbed(*args, env, timeout=600):
    return subprocess.run([sys.executable, "-m", "testbed.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _assert_nothing_left(manifest: dict, run_dir: Path) -> None:
    """Every process, interface and namespace the manifest lists, on both servers (this machine), is
    gone, and no process of the run (its files, its tunnels) is left."""
    parts = [manifest] + list(manifest["remote"].values())
    assert len(parts) == 2, "the second server's part is recorded apart"
    assert_parts_gone(parts)
    assert any(n.startswith("tap6") for p in parts for n in p["interfaces"]), "tunnel ends are recorded"
    assert any(r["role"] == "tunnel" for p in parts for r in p["processes"]), "tunnels are recorded"
    assert any(r["role"].startswith("fabric") for r in manifest["remote"]["root@127.0.0.1"]["processes"])
    assert not processes_mentioning(str(run_dir)), "a process of the run is left"
    control = manifest["ssh_control_dir"]
    assert not processes_mentioning(control) and not Path(control).exists(), "a shared ssh connection is left"
    assert not processes_mentioning("Tunnel=ethernet"), "a tunnel is left"
    assert not [n for n in os.listdir("/sys/class/net") if re.fullmatch(r"tap6\d{3}", n)]


def test_a_fat_tree_over_two_servers_verifies_every_message_and_leaves_nothing(tmp_path, registry, sshd):
    path = tmp_path / "cluster-ft.yaml"
    path.write_text(FAT_TREE)
    env = _env(registry, sshd)
    run = _testbed("run", "--fit", str(path), "--runs-dir", str(tmp_path / "runs"), env=env)
    (out_dir,) = (tmp_path / "runs" / "cluster-ft").iterdir()
    run_dir = out_dir / "base"
    context = run.stdout[-3000:] + run.stderr[-2000:]
    assert run.returncode == 0, context
    assert "2 servers, 8 cables between them in ssh tunnels" in run.stdout, context
    result = json.loads((run_dir / "result.json").read_text())
    assert result["failed"] is None and result["pingall"]["failed"] == [], context
    assert len(result["agents"]) == 16 and set(result["agents"].values()) == {0}, result["notes"]
    assert set(result["switch_processes"]["servers"].values()) == {"here", "again"}
    summary = json.loads((out_dir / "summary.json").read_text())["base"]
    assert summary["messages_planned"] == summary["messages_delivered_verified"] == summary["messages_completed"] == 16
    tunnels = result["tunnels"]
    assert len(tunnels) == 8 and all(t["received"] > 0.9 * t["sent"] for t in tunnels.values()), tunnels
    cables = summary["fidelity"]["cross_server_cables"]
    modelled = yaml.safe_load((run_dir / "scenario.resolved.yaml").read_text())["links"]["fabric"]["delay_us"]
    assert set(cables) == set(tunnels) and {c["modelled_delay_us"] for c in cables.values()} == {modelled}
    first = (out_dir / "report.md").read_text().splitlines()[0]
    assert "8 cables between servers in tunnels adding one-way p99 " in first, first
    assert result["costs"]["calibrates"] is False and not (registry.parent / "calibration.json").exists()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    clean = _testbed("clean", env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    _assert_nothing_left(manifest, run_dir)


def test_a_run_killed_while_its_traffic_runs_is_cleaned_on_both_servers(tmp_path, registry, sshd):
    path = tmp_path / "cluster-killed.yaml"
    path.write_text(LEAF_SPINE)
    env = _env(registry, sshd)
    run = subprocess.Popen([sys.executable, "-m", "testbed.cli", "run", "--fit", str(path),
                            "--runs-dir", str(tmp_path / "runs")], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    deadline = time.monotonic() + 300
    try:
        for line in run.stdout:
            seen.append(line.rstrip())
            if "traffic:" in line:
                time.sleep(1.0)
                break
            assert time.monotonic() < deadline, "\n".join(seen[-20:])
        else:
            pytest.fail("the run ended before its traffic:\n" + "\n".join(seen[-20:]))
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
    finally:
        if run.poll() is None:
            run.kill()
    (manifest_path,) = [Path(p.read_text()) for p in registry.glob("*.path")]
    manifest = json.loads(manifest_path.read_text())
    remote = manifest["remote"]["root@127.0.0.1"]
    assert remote["namespaces"] and any(Path(f"/var/run/netns/{n}").exists() for n in remote["namespaces"])
    clean = _testbed("clean", env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert " on again" in clean.stdout or "removed" in clean.stdout, clean.stdout
    _assert_nothing_left(manifest, manifest_path.parent)
    assert list(registry.glob("*.path")) == []


def test_bad_input_over_servers_gets_one_line(tmp_path, registry, sshd):
    env = _env(registry, sshd)
    # a server that cannot be reached when the run starts: nothing listens on its port
    dead = tmp_path / "dead_config"
    with __import__("socket").socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead.write_text(sshd.read_text().replace(re.search(r"Port \d+", sshd.read_text()).group(0), f"Port {port}"))
    path = tmp_path / "unreachable.yaml"
    path.write_text(FAT_TREE.replace("cluster-ft", "unreachable"))
    run = _testbed("run", "--fit", str(path), "--runs-dir", str(tmp_path / "runs"),
                   env={**env, "TESTBED_SSH_CONFIG": str(dead)})
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stdout + run.stderr
    assert "server again (root@127.0.0.1) cannot be reached with ssh" in run.stderr
    assert f"port {port}: Connection refused" in run.stderr, run.stderr
    # a fabric that needs more servers than the two it names (its memory)
    path = tmp_path / "big.yaml"
    path.write_text(FAT_TREE.replace("cluster-ft", "big").replace("k: 4", "k: 16"))
    run = _testbed("run", "--fit", str(path), "--runs-dir", str(tmp_path / "runs"), env=env)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stdout + run.stderr
    assert "needs more servers than the 2 given" in run.stderr, run.stderr
    # more servers than switches: refused where the scenario names them
    path = tmp_path / "few.yaml"
    path.write_text("name: few\ntopology: {kind: leaf_spine, leaves: 1, spines: 1, hosts_per_leaf: 2}\n"
                    "switch: {target: builtin}\nworkload:\n  - {kind: permutation, message_bytes: 20000, cross_tor: false}\n"
                    + SERVERS + "    - {name: third, address: 127.0.0.2, user: root}\n")
    run = _testbed("run", "--fit", str(path), "--runs-dir", str(tmp_path / "runs"), env=env)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stdout + run.stderr
    assert "placement.servers" in run.stderr and "3 servers for 2 switches" in run.stderr, run.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("manifest.json"))


def test_a_server_that_refuses_tunnels_fails_the_run_in_one_line_and_nothing_is_left(tmp_path, registry):
    path = tmp_path / "cluster-refused.yaml"
    path.write_text(LEAF_SPINE.replace("cluster-killed", "cluster-refused"))
    try:
        with local_sshd(permit_tunnel=False) as config:
            run = _testbed("run", "--fit", str(path), "--runs-dir", str(tmp_path / "runs"), env=_env(registry, config))
    except LocalSshdUnavailable as why:
        pytest.skip(f"ssh to this machine cannot be made to work here: {why}")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and "the tunnel of cable " in run.stderr, run.stderr
    assert "server again (root@127.0.0.1)" in run.stderr and "forwarding failed" in run.stderr.lower(), run.stderr
    (manifest_path,) = (tmp_path / "runs").rglob("manifest.json")
    manifest = json.loads(manifest_path.read_text())
    assert manifest["finished"] and list(registry.glob("*.path")) == []
    assert_parts_gone([manifest] + list(manifest["remote"].values()))
    assert not processes_mentioning(str(manifest_path.parent)) and not processes_mentioning("Tunnel=ethernet")
