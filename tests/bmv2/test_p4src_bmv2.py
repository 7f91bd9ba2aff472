"""The STF files of p4src/tests on bmv2: compiled by p4c-bm2-ss, run on
simple_switch by the package's bmv2 runner (testbed/p4model/stf/bmv2.py,
`testbed stf --target bmv2`), as the issue's acceptance asks ("the
programs compile with p4c and pass the same STF files on bmv2").
fabric.p4 runs with --priority-queues 2, the fabric's configuration, so
credits (priority 1) are queued, not dropped.  Skipped with the reason
where the binaries are missing (CI)."""

from __future__ import annotations

import pytest

from stf_targets import P4SRC_STF, p4src_program, p4src_queues, runners  # noqa: F401

pytestmark = pytest.mark.bmv2


@pytest.mark.parametrize("stf", P4SRC_STF, ids=lambda p: p.name)
def test_stf_passes_on_bmv2(stf, runners):  # noqa: F811
    program = p4src_program(stf)
    result, out = runners.run("bmv2", program, stf, p4src_queues(program, stf))
    assert result.passed, out
    assert "warning" not in out, out
