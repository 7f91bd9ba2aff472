"""Compile generated C to a shared object, cached by content.

Rule: the cache key is SHA-256 of (generated source, the compiler's
`--version` first line, the flags).  The .so lives at
$XDG_CACHE_HOME/testbed/native/<key>.so (default ~/.cache/testbed/native);
a second load of the same program with the same compiler only opens it, and
loads at once (the switches of a fabric process) wait for one compile.
The compiler is $CC, else `cc`, else `gcc`.  TESTBED_NATIVE_KEEP_C=1 keeps
the generated .c beside the .so (to read it).  A compiler failure becomes
one NativeBuildError line naming the program and the first diagnostic."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from testbed.p4model.backend.native.errors import NativeBuildError
from testbed.targets import c_compiler

FLAGS = ("-O2", "-shared", "-fPIC", "-std=c11", "-w")


def compiler() -> str | None:
    """The C compiler to use, or None when the machine has none (testbed.targets.c_compiler)."""
    return c_compiler()


@functools.lru_cache(maxsize=None)
def compiler_version(cc: str) -> str:
    out = subprocess.run([cc, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout.splitlines() or [cc])[0]


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "testbed" / "native"


def cache_key(source: str, cc: str) -> str:
    h = hashlib.sha256()
    for part in (source, compiler_version(cc), " ".join(FLAGS)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def build(source: str, program: str, loc=None) -> Path:
    """The path of the .so built from `source` (compiled now, or found in
    the cache).  program: the P4 file's name, for the error line."""
    cc = compiler()
    if cc is None:
        raise NativeBuildError(loc, program, "no C compiler (cc/gcc) on this machine")
    out_dir = cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    key = cache_key(source, cc)
    so = out_dir / f"{key}.so"
    keep = os.environ.get("TESTBED_NATIVE_KEEP_C")
    if keep:
        (out_dir / f"{key}.c").write_text(source)
    if so.exists():
        return so
    with open(out_dir / f"{key}.lock", "w") as lock:  # one compile per key: the others wait for it
        fcntl.flock(lock, fcntl.LOCK_EX)
        if so.exists():
            return so
        _compile(cc, source, program, loc, out_dir, so)
    return so


def _compile(cc: str, source: str, program: str, loc, out_dir: Path, so: Path) -> None:
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        c_file = Path(tmp) / "prog.c"
        c_file.write_text(source)
        tmp_so = Path(tmp) / "prog.so"
        res = subprocess.run([cc, *FLAGS, "-o", str(tmp_so), str(c_file)],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            first = next((ln for ln in res.stderr.splitlines() if "error" in ln), None)
            diag = (first or res.stderr.strip().splitlines()[-1:] or ["exit %d" % res.returncode])
            diag = diag if isinstance(diag, str) else diag[0]
            raise NativeBuildError(loc, program, " ".join(diag.replace(str(c_file), "generated.c").split()))
        os.replace(tmp_so, so)   # atomic: a concurrent loader sees all of it or none
