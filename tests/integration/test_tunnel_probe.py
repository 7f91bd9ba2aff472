"""The tunnel probe on a veth pair (root): every probe echoed, a one-way delay of a kernel hop,
and the reflector ends when its starter closes its stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def veth():
    if os.geteuid() != 0:
        pytest.skip("a veth pair needs root")
    names = (f"tbpa{os.getpid() % 10000}", f"tbpb{os.getpid() % 10000}")
    subprocess.run(["ip", "link", "add", names[0], "type", "veth", "peer", "name", names[1]], check=True)
    try:
        for name in names:
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
        yield names
    finally:
        subprocess.run(["ip", "link", "del", names[0]], capture_output=True)


def test_probes_are_echoed_and_timed_and_the_reflector_ends_with_its_stdin(veth):
    near, far = veth
    reflector = subprocess.Popen([sys.executable, "-m", "testbed.emulation.tunnel_probe", "reflect", "--seconds",
                                  "60", far], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert reflector.stdout.readline().strip() == "ready"
        done = subprocess.run([sys.executable, "-m", "testbed.emulation.tunnel_probe", "send", "--count", "50",
                               "--gap-ms", "1", near], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout)[near]
        assert got["sent"] == 50 and got["received"] == 50
        assert 0 < got["one_way_us"]["p50"] <= got["one_way_us"]["p99"] <= got["one_way_us"]["max"] < 1e6
        assert got["jitter_us"] >= 0
        started = time.monotonic()
        reflector.stdin.close()
        assert reflector.wait(timeout=10) == 0 and time.monotonic() - started < 5
    finally:
        if reflector.poll() is None:
            reflector.kill()
            reflector.wait()
