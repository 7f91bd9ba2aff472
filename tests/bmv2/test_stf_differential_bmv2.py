"""Differential STF runs (`testbed stf --target both`): the same program and
packets through the builtin target and bmv2, each file's outputs compared
port by port and packet by packet between the two, and each target against
the file's expectations.

Programs: p4src/ with its STF files, our queue regressions in
tests/p4programs/differential/ (with the priority-queue count each file is
written for), and the other own programs of tests/p4programs/.  A few of
those do not mean the same on both targets; they are listed with why."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.p4model.stf.differential import differences

from stf_targets import ROOT, P4SRC_STF, p4src_program, p4src_queues, runners  # noqa: F401

pytestmark = pytest.mark.bmv2

PROGRAMS = ROOT / "tests" / "p4programs"
QUEUE_CASES = [   # (program, STF file, --priority-queues)
    ("queue_priority", "queue_priority_1q", 1),
    ("queue_priority", "queue_priority_2q", 2),
    ("queue_replicas", "queue_replicas", 2),
    ("queue_egress_copies", "queue_egress_copies", 1),
]
# tests/p4programs files bmv2 does not run as the builtin target does.
NOT_ON_P4C = {   # p4c-bm2-ss 1.2.5.8 rejects the program
    "fe_implicit_casts": "p4c refuses the implicit bit<8> -> enum cast the builtin front end allows",
    "fe_loops": "p4c 1.2.5.8 has no for loops",
    "fe_parser_switch": "p4c 1.2.5.8 has no switch statement in parser states",
}
DIFFERENT = {    # both run it, bmv2's output differs (our regressions follow the P4 spec)
    "conf_exit_copy_out": "p4c/bmv2: an exit in an action called by another action drops the "
                          "copy-out of its inout argument (packet 2, byte 2: 00, not 0C)",
    "conf_lvalue_once": "p4c/bmv2: the stack index of a left-hand side is read after the "
                        "right-hand side's call changed it (0x77 lands in s[0], not s[3])",
}


def _agree(runners, program: Path, stf: Path, queues: int) -> None:  # noqa: F811
    builtin, out_builtin = runners.run("builtin", program, stf, queues)
    bmv2, out_bmv2 = runners.run("bmv2", program, stf, queues)
    problems = differences(builtin, bmv2)
    report = "\n".join([out_builtin, out_bmv2, *(line for lines in problems for line in lines)])
    assert builtin.passed and bmv2.passed, report
    assert not problems, report


@pytest.mark.parametrize("stf", P4SRC_STF, ids=lambda p: p.name)
def test_p4src_targets_agree(stf, runners):  # noqa: F811
    program = p4src_program(stf)
    _agree(runners, program, stf, p4src_queues(program, stf))


@pytest.mark.parametrize("program,stf,queues", QUEUE_CASES, ids=[c[1] for c in QUEUE_CASES])
def test_queue_regressions_agree(program, stf, queues, runners):  # noqa: F811
    where = PROGRAMS / "differential"
    _agree(runners, where / f"{program}.p4", where / f"{stf}.stf", queues)


def _own_programs():
    for stf in sorted(PROGRAMS.glob("*.stf")):
        if stf.stem in NOT_ON_P4C:
            continue
        marks = ([pytest.mark.xfail(reason=DIFFERENT[stf.stem], strict=True)]
                 if stf.stem in DIFFERENT else [])
        yield pytest.param(stf, id=stf.stem, marks=marks)


@pytest.mark.parametrize("stf", list(_own_programs()))
def test_own_programs_agree(stf, runners):  # noqa: F811
    _agree(runners, stf.with_suffix(".p4"), stf, 1)
