"""The native half of the NIC (`pacer.c`): built with the system's C compiler at first use.

The shared object is cached under $TESTBED_CACHE_DIR (default $XDG_CACHE_HOME/testbed or
~/.cache/testbed) as nic-<hash of the source and the compiler command>.so, so a changed
source or compiler builds anew and concurrent agents never load a half-written file (each
builds into a private temporary name and renames it into place).  `load()` returns the
library with its functions' signatures set, or raises NativeUnavailable naming why (no
compiler, a failed build, TESTBED_NIC=python); the agent then uses the pure-Python NIC.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).with_name("pacer.c")
CFLAGS = ["-O2", "-shared", "-fPIC", "-pthread"]


class NativeUnavailable(Exception):
    """The native NIC cannot be used here; the message says why."""


_lib: ctypes.CDLL | None = None
_why_not: str | None = None


def cache_dir() -> Path:
    explicit = os.environ.get("TESTBED_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "testbed"


def compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def build() -> Path:
    """The cached shared object, compiled now if it is not there yet."""
    cc = compiler()
    if cc is None:
        raise NativeUnavailable("no C compiler (cc or gcc) on PATH")
    source = SOURCE.read_bytes()
    key = hashlib.sha256(source + " ".join([cc, *CFLAGS]).encode()).hexdigest()[:16]
    target = cache_dir() / f"nic-{key}.so"
    if target.exists():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".nic-", suffix=".so", dir=target.parent)
        os.close(fd)
    except OSError as e:
        raise NativeUnavailable(f"cache directory {target.parent} is not writable: {e.strerror}") from None
    try:
        done = subprocess.run([cc, *CFLAGS, "-o", tmp, str(SOURCE)], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise NativeUnavailable(f"{cc} could not build {SOURCE.name}: {first}")
        os.replace(tmp, target)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NativeUnavailable(f"building {SOURCE.name} failed: {e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def load() -> ctypes.CDLL:
    """The native NIC library (built and loaded once per process)."""
    global _lib, _why_not
    if _lib is not None:
        return _lib
    if os.environ.get("TESTBED_NIC", "").lower() == "python":
        raise NativeUnavailable("TESTBED_NIC=python asks for the pure-Python NIC")
    if _why_not is not None:
        raise NativeUnavailable(_why_not)
    try:
        lib = ctypes.CDLL(str(build()))
    except NativeUnavailable as e:
        _why_not = str(e)
        raise
    except OSError as e:
        _why_not = f"the built NIC library cannot be loaded: {e}"
        raise NativeUnavailable(_why_not) from None
    c = ctypes
    lib.nic_open.restype = c.c_void_p
    lib.nic_open.argtypes = []
    lib.nic_start.restype = c.c_int
    lib.nic_start.argtypes = [c.c_void_p]
    lib.nic_submit.restype = c.c_int
    lib.nic_submit.argtypes = [c.c_void_p, c.c_int, c.c_uint32, c.c_uint16, c.c_int, c.c_int64,
                               c.c_char_p, c.c_size_t]
    lib.nic_submit_many.restype = c.c_int
    lib.nic_submit_many.argtypes = [c.c_void_p, c.c_char_p, c.c_size_t]
    lib.nic_counts.restype = None
    lib.nic_counts.argtypes = [c.c_void_p, c.c_size_t, c.POINTER(c.c_uint64)]
    lib.nic_lateness.restype = c.c_size_t
    lib.nic_lateness.argtypes = [c.c_void_p, c.c_size_t, c.c_size_t, c.POINTER(c.c_int64), c.c_size_t]
    lib.nic_lanes.restype = c.c_int
    lib.nic_lanes.argtypes = [c.c_void_p, c.c_size_t]
    lib.nic_drop_lane.restype = c.c_size_t
    lib.nic_drop_lane.argtypes = [c.c_void_p, c.c_size_t]
    lib.nic_stop.restype = c.c_size_t
    lib.nic_stop.argtypes = [c.c_void_p]
    lib.nic_free.restype = None
    lib.nic_free.argtypes = [c.c_void_p]
    lib.nic_recv.restype = c.c_int
    lib.nic_recv.argtypes = [c.c_int, c.c_void_p, c.c_size_t, c.c_int, c.POINTER(c.c_int32),
                             c.POINTER(c.c_uint32), c.POINTER(c.c_int32), c.POINTER(c.c_int64)]
    _lib = lib
    return lib
