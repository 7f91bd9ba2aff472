"""The switch targets and what decides them, shared by the layers that must know.

`auto` means bmv2 where both of its binaries are on PATH (the Vagrant lab
installs them), otherwise the builtin target; the pre-flight capacity check
needs that answer before the emulation layer resolves it for a run.
"""

from __future__ import annotations

import shutil

BMV2_BINARY = "simple_switch_grpc"
BMV2_COMPILER = "p4c-bm2-ss"


def bmv2_available() -> bool:
    return shutil.which(BMV2_BINARY) is not None and shutil.which(BMV2_COMPILER) is not None


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
