"""`testbed clean` removes what manifests list, and only that."""

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from testbed.emulation import cleanup, manifest as manifest_mod
from testbed.emulation.manifest import Manifest

pytestmark = pytest.mark.integration


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setattr(manifest_mod, "REGISTRY_DIR", tmp_path / "registry")
    return tmp_path / "registry"


def _exists(name):
    return Path(f"/sys/class/net/{name}").exists()


def _netns():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()


def test_clean_removes_listed_processes_interfaces_and_namespaces(tmp_path, registry):
    tag = uuid.uuid4().hex[:6]
    veth, peer, ns = f"tbA{tag}", f"tbB{tag}", f"tbns{tag}"
    m = Manifest(run_id=f"test-{tag}", path=tmp_path / "manifest.json")
    m.plan_interfaces([veth])
    m.plan_namespaces([ns])
    subprocess.run(["ip", "link", "add", veth, "type", "veth", "peer", "name", peer], check=True)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    listed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    m.add_process(listed.pid, "switch", listed.args)
    try:
        results = cleanup.clean_all()
        assert len(results) == 1
        report = results[0][1]
        assert not report.problems
        assert listed.wait(timeout=5) is not None
        assert bystander.poll() is None, "a process the run did not start was killed"
        assert not _exists(veth) and not _exists(peer)
        assert ns not in _netns()
        assert cleanup.clean_all() == [], "a cleaned run stays registered"
    finally:
        bystander.kill()
        listed.kill()
        if _exists(veth):
            subprocess.run(["ip", "link", "delete", veth])
        if ns in _netns():
            subprocess.run(["ip", "netns", "delete", ns])


def test_recycled_pid_is_not_killed(tmp_path, registry):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        m = Manifest(run_id="test-recycled", path=tmp_path / "m.json")
        m.add_process(other.pid, "host", ["h1"])
        m.processes[0].start_time -= 1  # as if the pid now belonged to someone else
        m.save()
        report = cleanup.clean_manifest(Manifest.load(m.path))
        assert report.killed == []
        assert other.poll() is None
    finally:
        other.kill()


def test_interfaces_not_listed_survive(tmp_path, registry):
    tag = uuid.uuid4().hex[:6]
    keep, keep_peer = f"tbK{tag}", f"tbL{tag}"
    subprocess.run(["ip", "link", "add", keep, "type", "veth", "peer", "name", keep_peer], check=True)
    try:
        m = Manifest(run_id=f"test-{tag}", path=tmp_path / "m.json")
        m.plan_interfaces([f"tbX{tag}"])  # planned but never created
        report = cleanup.clean_manifest(m)
        assert report.empty() and not report.problems
        assert _exists(keep)
    finally:
        subprocess.run(["ip", "link", "delete", keep])
