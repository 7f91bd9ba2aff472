"""Two processes building the same source at once into an empty cache both get a whole shared
object, the same one, and leave no temporary file: the native NIC (testbed.host.nic_native,
written under a temporary name and renamed) and the native back end's programs and engine
(testbed.p4model.backend.native.build, one compile per key under a lock, then renamed). Test
sessions running in parallel build into the same ~/.cache/testbed.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.targets import c_compiler

pytestmark = pytest.mark.skipif(c_compiler() is None, reason="no C compiler (cc/gcc) on this machine")

REPO = Path(__file__).resolve().parents[2]
BUILDER = """
import sys, time
from pathlib import Path
start = float(sys.argv[2])
while time.time() < start:
    time.sleep(0.001)
if sys.argv[1] == "nic":
    from testbed.host import nic_native
    print(nic_native.build())
else:
    from testbed.p4model.backend.native.build import build
    print(build(Path(sys.argv[3]).read_text(), "answer.c"))
"""


def build_twice_at_once(kind: str, env: dict, *args: str) -> list[str]:
    """The paths two processes started together print, each having built `kind`."""
    start = time.time() + 1.0   # both interpreters are up and waiting by then
    procs = [subprocess.Popen([sys.executable, "-c", BUILDER, kind, repr(start), *args], cwd=REPO,
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    paths = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        paths.append(out.strip())
    return paths


def test_two_processes_build_the_native_nic_at_once(tmp_path):
    cache = tmp_path / "cache"
    first, second = build_twice_at_once("nic", {"TESTBED_CACHE_DIR": str(cache)})
    assert first == second and Path(first).parent == cache
    assert sorted(p.name for p in cache.iterdir()) == [Path(first).name]   # no temporary file left
    ctypes.CDLL(first)


def test_two_processes_build_one_native_program_at_once(tmp_path):
    source = tmp_path / "answer.c"
    source.write_text(f"/* {tmp_path} */\nint answer(void) {{ return 42; }}\n")
    first, second = build_twice_at_once("program", {"XDG_CACHE_HOME": str(tmp_path / "xdg")}, str(source))
    native = tmp_path / "xdg" / "testbed" / "native"
    assert first == second and Path(first).parent == native
    key = Path(first).stem
    assert sorted(p.name for p in native.iterdir()) == [f"{key}.lock", f"{key}.so"]
    assert ctypes.CDLL(first).answer() == 42
