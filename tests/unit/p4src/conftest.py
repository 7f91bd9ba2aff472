"""Shared helpers for the tests of p4src/: paths and the STF file -> program map."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
P4SRC = ROOT / "p4src"
STF_DIR = P4SRC / "tests"


def program_for(stf: Path) -> Path:
    """STF files are named <program>_<what>.stf and test p4src/<program>.p4."""
    return P4SRC / (stf.name.split("_", 1)[0] + ".p4")


def stf_files() -> list[Path]:
    return sorted(STF_DIR.glob("*.stf"))
