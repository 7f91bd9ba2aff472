"""Shared by the bmv2 STF tests: skipping without the binaries, one bmv2
runner per program (compiled once), and running a file on a target."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from testbed.p4model.stf.bmv2 import Bmv2Runner, missing_tools
from testbed.p4model.stf.result import print_verdict
from testbed.p4model.stf.runner import builtin_loader, run_file

ROOT = Path(__file__).resolve().parents[2]
P4SRC = ROOT / "p4src"
P4SRC_STF = sorted((P4SRC / "tests").glob("*.stf"))


def p4src_program(stf: Path) -> Path:
    return P4SRC / (stf.name.split("_", 1)[0] + ".p4")


def p4src_queues(program: Path, stf: Path) -> int:
    """The file's `# priority-queues: N`, else: fabric.p4 queues credits at priority 1, so two
    queues, the fabric's setting (fabric_tenant_isolation.stf asks for a third, a tenant's)."""
    from testbed.p4model.stf.parser import file_priority_queues

    return file_priority_queues(stf) or (2 if program.name == "fabric.p4" else 1)


def skip_without_bmv2() -> None:
    missing = missing_tools()
    if missing:
        pytest.skip(f"needs {', '.join(missing)} on PATH (the Vagrant lab installs them; "
                    f"see /opt/p4lang/README.txt on a lab machine)")


class Runners:
    """Bmv2Runner per (program, queues), made on first use, closed at the end."""

    def __init__(self) -> None:
        self.runners: dict = {}

    def bmv2(self, program: Path, queues: int) -> Bmv2Runner:
        key = (str(program), queues)
        if key not in self.runners:
            self.runners[key] = Bmv2Runner(str(program), priority_queues=queues,
                                           out=io.StringIO())
        return self.runners[key]

    def run(self, target: str, program: Path, stf: Path, queues: int):
        """(FileResult, printed output) of one file on one target."""
        out = io.StringIO()
        if target == "bmv2":
            runner = self.bmv2(program, queues)
            runner.out = out
            result = runner.run_file(stf)
        else:
            result = run_file(builtin_loader(str(program)), stf, out, priority_queues=queues)
        print_verdict(result, out, f" ({target})")
        return result, out.getvalue()

    def close(self) -> None:
        for runner in self.runners.values():
            runner.close()


@pytest.fixture(scope="module")
def runners():
    skip_without_bmv2()
    made = Runners()
    yield made
    made.close()
