"""The switch targets and what decides them, shared by the layers that must know.

`auto` means bmv2 where it is usable on this machine (the Vagrant lab
installs it), otherwise the builtin target; the pre-flight capacity check
needs that answer before the emulation layer resolves it for a run.

"Usable" is more than "on PATH": the testbed sets bmv2's queue rates and
reads its registers through simple_switch_CLI (Thrift), and a
simple_switch_grpc built the default way (without `--with-thrift`) never
opens a Thrift port.  Such a build is told apart by its `--help`, which
then has no `--thrift-port`, before any switch is started.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess

BMV2_BINARY = "simple_switch_grpc"
BMV2_COMPILER = "p4c-bm2-ss"
BMV2_CLI = "simple_switch_CLI"


@functools.lru_cache(maxsize=None)
def _help_text(binary: str) -> str:
    """What `binary --help` prints (both streams); cached, as PATH does not change in a run."""
    try:
        result = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"<{binary} --help failed: {error}>"
    return result.stdout + result.stderr


def bmv2_problem() -> str | None:
    """Why bmv2 cannot run a scenario here, in one line; None when it can."""
    missing = [b for b in (BMV2_BINARY, BMV2_COMPILER, BMV2_CLI) if shutil.which(b) is None]
    if missing:
        return f"not on PATH: {', '.join(missing)}"
    if "--thrift-port" not in _help_text(BMV2_BINARY):
        return (f"{shutil.which(BMV2_BINARY)} was built without Thrift (its --help has no --thrift-port), "
                f"and the testbed sets bmv2's queue rates and reads its registers through {BMV2_CLI}; "
                "rebuild bmv2's targets/simple_switch_grpc with ./configure --with-thrift")
    cli_help = _help_text(BMV2_CLI)
    if "Traceback" in cli_help or "--thrift-port" not in cli_help:
        last = cli_help.strip().splitlines()[-1:] or ["no output"]
        return (f"{shutil.which(BMV2_CLI)} does not run ({last[0]}); it needs a python3 with the "
                "'thrift' module first on PATH")
    return None


def c_compiler() -> str | None:
    """The C compiler the native back end uses ($CC, else cc, else gcc), or None when there is none."""
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


PER_PACKET_LOG_LEVELS = ("debug", "trace")  # levels at which the Python path logs every packet


def packet_path(target: str, backend: str, log_level: str = "warn") -> str:
    """How builtin switches move packets, as far as the scenario and the machine decide it:
    "native" (the program in C on the native engine) for backend native, and for auto when a C
    compiler is present and the switches are not asked to log every packet (debug, trace: only
    the Python path does); "python" otherwise (and for bmv2, which has its own).
    A program the native back end cannot lower still runs on the Python path under auto: the run
    says so in its notes (testbed/emulation/packet_path.py)."""
    if effective_target(target) != "builtin" or backend == "python":
        return "python"
    if backend == "native":
        return "native"
    return "native" if c_compiler() is not None and log_level not in PER_PACKET_LOG_LEVELS else "python"


def bmv2_available() -> bool:
    return bmv2_problem() is None


def effective_target(target: str) -> str:
    """What `auto` becomes on this machine; other names as given."""
    if target == "auto":
        return "bmv2" if bmv2_available() else "builtin"
    return target


def process_mode(target: str, processes) -> str:
    """"fabric" when builtin switches share fabric processes, else "per_switch"."""
    if effective_target(target) != "builtin" or processes == "per_switch":
        return "per_switch"
    return "fabric"


def bmv2_queue_rate_pps(rate_bps: float, cell_wire_bytes: int) -> int:
    """bmv2's queue rate for a link: it counts packets, so a link of `rate_bps` becomes
    the packets/s of one data cell (its wire size) after another.  Shared by the
    controller that sets it and the report that states it."""
    return max(1, int(rate_bps / (cell_wire_bytes * 8)))
