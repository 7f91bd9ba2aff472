"""The transport compiled from its own Python source by mypyc, loaded only while it is that source.

The model: MODULES (the sans-IO transport, its congestion controls, the application's workload
runner, the cell codec, and the simulator's hosts around them) are compiled together by mypyc into one group of C extension modules.
A build lives in the cache, `cache_dir()/<key>/`, where the key is the SHA-256 of each module's
name and source bytes, the compiler's version (the `mypy` package's) and the interpreter's
extension suffix. Its `manifest.json` keeps every module's own hash, so a stale build can say
which files changed. The `.py` files stay the reference: a build is only ever used for the exact
bytes it was made from.

The rule, applied once per process when `testbed` is imported (`install()`):

* `TESTBED_TRANSPORT=interpreted`: the source runs as it is; nothing is said.
* The compiler package (mypy) is not installed: the source runs; one line says so.
* A build under the current key: a meta-path finder maps each of MODULES, and the group's
  shared module, to its `.so` there. It is all or none: the modules of one mypyc group share
  their native classes, and a mix would hold two `CellPacket` classes.
* No such build (a source changed, or none was made): the source runs; one line names the
  first changed file and the command that builds it (or says there is no C compiler).

Building: `python -m testbed.compiled` (scripts/install-deps.sh runs it). It copies the package
into a private temporary directory in the cache, hashes the copy, compiles it there and renames
the finished directory into place. So a reader never sees half a build, and a build is always of
the bytes its key names. Builds of one key take a lock: the second waits, then finds it done.
Without mypy, a C compiler or Python's headers it builds nothing and says why in one line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import sysconfig
from pathlib import Path

# Every process imports this module first: what only a build or a stale build's line needs (json,
# subprocess, tempfile, fcntl) is imported where it is used.

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # testbed/
# The compiled modules, as paths below the package. testbed/host/cc/__init__.py (a table of
# names) stays interpreted: a compiled package __init__ gains nothing and needs its own path rule.
MODULES = (
    "cells/wire.py",
    "cells/segment.py",
    "host/pacing.py",
    "host/entropy.py",
    "host/reorder.py",
    "host/reliability.py",
    "host/sender.py",
    "host/receiver.py",
    "host/endpoint.py",
    "host/app.py",
    "host/message.py",
    "host/workloads.py",
    "host/cc/base.py",
    "host/cc/none.py",
    "host/cc/tita.py",
    "host/cc/dcqcn.py",
    "host/cc/nscc.py",
    "simulation/program_host.py",  # the program network's hosts: on the path of every simulated cell
)
COMPILER = "mypy"  # the PyPI package whose mypyc compiles MODULES; pinned in pyproject.toml
# mypy checks the compiled modules only: what they import from the rest of the package is read
# for its types, and its own type errors are not the build's.
MYPY_FLAGS = ("--ignore-missing-imports", "--follow-imports=silent",
              "--disable-error-code", "annotation-unchecked")
OPT_LEVEL = "3"
ENV = "TESTBED_TRANSPORT"  # "interpreted": the source as it is


class CompileUnavailable(Exception):
    """No build can be made here; the message says why."""


def module_name(rel: str) -> str:
    return "testbed." + rel[:-3].replace("/", ".")


def cache_dir() -> Path:
    """Where builds go: $TESTBED_CACHE_DIR (default $XDG_CACHE_HOME/testbed or ~/.cache/testbed),
    the native NIC's cache, in transport/."""
    explicit = os.environ.get("TESTBED_CACHE_DIR")
    if explicit:
        return Path(explicit) / "transport"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "testbed" / "transport"


def compiler_version() -> str | None:
    """The installed mypy's version, from its distribution's directory name (importing mypy, or
    importlib.metadata, costs tens of milliseconds at every start); None: not installed."""
    spec = importlib.util.find_spec(COMPILER)
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    for dist in site.glob(f"{COMPILER}-*.dist-info"):
        return dist.name[len(COMPILER) + 1:-len(".dist-info")]
    return "unknown"


def source_hashes(package_dir: Path = PACKAGE_DIR) -> dict[str, str]:
    return {rel: hashlib.sha256((package_dir / rel).read_bytes()).hexdigest() for rel in MODULES}


def build_key(hashes: dict[str, str], version: str) -> str:
    h = hashlib.sha256()
    for part in [*(f"{rel}={digest}" for rel, digest in hashes.items()), version,
                 sysconfig.get_config_var("EXT_SUFFIX") or "", OPT_LEVEL, " ".join(MYPY_FLAGS)]:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


class _Finder:
    """Each compiled module's name -> its extension module file in one build (a meta-path finder:
    `find_spec` is all the import system asks of one)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(self, fullname, path=None, target=None):
        so = self.files.get(fullname)
        if so is None:
            return None
        return importlib.util.spec_from_file_location(fullname, so)


def build_files(build: Path) -> dict[str, Path]:
    """Module name -> .so of a finished build: the shims of MODULES and the group's own module."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    files = {}
    for so in build.rglob("*" + suffix):
        name = ".".join(so.relative_to(build).parts)[:-len(suffix)]
        files[name] = so
    return files


def _say(line: str) -> None:
    print(f"testbed: {line}", file=sys.stderr, flush=True)


def _changed_since_last_build(hashes: dict[str, str]) -> str:
    """Which files differ from the nearest build in the cache (the fewest files apart), as a clause."""
    import json
    changed: list[str] | None = None
    for manifest in cache_dir().glob("*/manifest.json"):
        try:
            built = json.loads(manifest.read_text()).get("sources", {})
        except (OSError, ValueError):
            continue
        differ = [rel for rel, digest in hashes.items() if built.get(rel) != digest]
        if changed is None or len(differ) < len(changed):
            changed = differ
    if changed is None:
        return "no compiled build was made yet"
    if not changed:
        return "the compiled build is of another compiler version"
    more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
    return f"testbed/{changed[0]}{more} changed since the compiled build"


_state: str | None = None  # what install() chose: "compiled", "interpreted" or why not


def state() -> str | None:
    """What this process runs: "compiled", "interpreted" (asked for), "building" (the build
    command), or the reason it runs the source (None: install() was not called)."""
    return _state


def install() -> str:
    """Apply the module's rule once; returns `state()`."""
    global _state
    if _state is not None:
        return _state
    if os.environ.get(ENV, "").lower() == "interpreted":
        _state = "interpreted"
        return _state
    argv = getattr(sys, "orig_argv", [])
    if any(a == "-m" and b == __name__ for a, b in zip(argv, argv[1:])):
        _state = "building"  # `python -m testbed.compiled`: the build says what it does
        return _state
    version = compiler_version()
    if version is None:
        _state = f"the transport runs interpreted: the compiler ({COMPILER}) is not installed"
        _say(_state)
        return _state
    try:
        hashes = source_hashes()
    except OSError as e:
        _state = f"the transport runs interpreted: its source cannot be read ({e})"
        _say(_state)
        return _state
    build = cache_dir() / build_key(hashes, version)
    files = build_files(build) if (build / "manifest.json").is_file() else {}
    if not files:
        why = (_changed_since_last_build(hashes) + "; `python -m testbed.compiled` builds it"
               if _c_compiler() is not None else "no C compiler (cc or gcc) on PATH")
        _state = f"the transport runs interpreted: {why}"
        _say(_state)
        return _state
    loaded = [m for m in map(module_name, MODULES) if m in sys.modules]
    if loaded:  # imported before `testbed` itself: cannot happen through a normal import
        _state = f"the transport runs interpreted: {loaded[0]} was imported before testbed"
        _say(_state)
        return _state
    sys.meta_path.insert(0, _Finder(files))
    _state = "compiled"
    return _state


# -- building -------------------------------------------------------------------------------

_SETUP = """
import json, sys
from setuptools import setup
from mypyc.build import mypycify
args = json.loads(sys.argv[1])
setup(name="testbed-transport", script_args=["build_ext", "--build-lib", args["lib"],
      "--build-temp", args["temp"]],
      ext_modules=mypycify(args["flags"] + args["paths"], opt_level=args["opt"], target_dir=args["c"]))
"""


def _c_compiler() -> str | None:
    return shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")


def _first_error(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    first = next((ln for ln in lines if " error" in ln or ln.startswith("error")), None)
    return first or (lines[-1] if lines else "no output")


def build() -> Path:
    """The build of the current source: found in the cache, or compiled now (minutes)."""
    import fcntl
    version = compiler_version()
    if version is None:
        raise CompileUnavailable(f"the compiler ({COMPILER}) is not installed")
    if _c_compiler() is None:
        raise CompileUnavailable("no C compiler (cc or gcc) on PATH")
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not include.is_file():
        raise CompileUnavailable(f"Python's headers are missing ({include}; Debian: python3-dev)")
    root = cache_dir()
    target = root / build_key(source_hashes(), version)
    if (target / "manifest.json").is_file():
        return target
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = open(root / ".build.lock", "w")
    except OSError as e:
        raise CompileUnavailable(f"the cache {root} is not writable: {e.strerror}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time: the next finds it done
        if (target / "manifest.json").is_file():
            return target
        return _compile(root, version)


def _compile(root: Path, version: str) -> Path:
    import json
    import subprocess
    import tempfile
    import time
    with tempfile.TemporaryDirectory(dir=root, prefix=".build-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(PACKAGE_DIR, src / "testbed",
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
        hashes = source_hashes(src / "testbed")  # the bytes compiled are the bytes the key names
        key = build_key(hashes, version)
        out = Path(tmp) / key
        args = {"lib": str(out), "temp": str(Path(tmp) / "temp"), "c": str(Path(tmp) / "c"),
                "flags": list(MYPY_FLAGS), "paths": [f"testbed/{rel}" for rel in MODULES], "opt": OPT_LEVEL}
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-c", _SETUP, json.dumps(args)], cwd=src,
                              capture_output=True, text=True)
        seconds = time.monotonic() - started
        log = done.stdout + done.stderr
        (root / "last-build.log").write_text(log)
        if done.returncode != 0:
            raise CompileUnavailable(f"mypyc could not build the transport: {_first_error(log)} "
                                     f"(full output: {root / 'last-build.log'})")
        if set(map(module_name, MODULES)) - set(build_files(out)):
            raise CompileUnavailable(f"mypyc's build lacks modules (full output: {root / 'last-build.log'})")
        (out / "manifest.json").write_text(json.dumps(
            {"key": key, "compiler": f"{COMPILER} {version}", "seconds": round(seconds, 1),
             "python": sys.version.split()[0], "sources": hashes}, indent=1))
        target = root / key
        try:
            os.rename(out, target)  # atomic: a loader sees the whole build or none
        except OSError:
            if not (target / "manifest.json").is_file():
                raise
        return target
