"""Every STF file of p4src/tests passes on the builtin target (its queues
hold each burst, so strict priority may reorder what shares a port), and the
committed STF files are exactly what p4src/tests/stfgen.py writes (so the
expectations cannot drift from the generator that explains them)."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from testbed.p4model.p4info import generate
from testbed.p4model.pipeline import load
from testbed.p4model.stf.parser import file_priority_queues
from testbed.p4model.stf.runner import run_files

from .conftest import ROOT, STF_DIR, program_for, stf_files

_P4INFO: dict = {}


def _loader(program):
    def load_switch(clock):
        pipeline = load(str(program), clock=clock)
        if program not in _P4INFO:
            _P4INFO[program] = generate(pipeline.program)
        return pipeline, _P4INFO[program]
    return load_switch


def test_every_program_has_stf_files():
    programs = {program_for(f).name for f in stf_files()}
    assert programs == {"basic.p4", "fabric.p4"}
    assert all(program_for(f).exists() for f in stf_files())


def priority_queues(stf, program) -> int:
    """The file's `# priority-queues: N`, else: fabric.p4 queues credits at priority 1, so it runs
    with two queues, as the testbed's switches do (one queue would drop the credits, as
    simple_switch); tenant queues (fabric_tenant_isolation.stf) ask for more."""
    return file_priority_queues(stf) or (2 if program.name == "fabric.p4" else 1)


@pytest.mark.parametrize("stf", stf_files(), ids=lambda p: p.name)
def test_stf_passes_on_builtin_target(stf):
    out = io.StringIO()
    program = program_for(stf)
    passed, failed = run_files(_loader(program), [stf], out=out,
                               priority_queues=priority_queues(stf, program))
    assert (passed, failed) == (1, 0), out.getvalue()
    assert "warning" not in out.getvalue(), out.getvalue()


def test_committed_stf_files_match_generator():
    result = subprocess.run([sys.executable, str(STF_DIR / "stfgen.py"), "--check"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def _stfgen():
    import importlib.util

    spec = importlib.util.spec_from_file_location("stfgen", STF_DIR / "stfgen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_refuses_a_credit_expected_after_data_of_the_same_burst():
    """Strict priority may let the credit overtake the waiting DATA cell (bmv2
    does when it queues the burst), so such a file would not mean one thing."""
    gen = _stfgen()
    data = gen.routed(gen.cell("10.0.1.5", gen.DATA, gen.CELL_SIZE), 1)
    credit = gen.routed(gen.cell("10.0.1.5", gen.CREDIT, 0), 1)
    stf = gen.Stf("t.stf", "fabric.p4", "test")
    stf.expect(1, credit)
    stf.expect(1, data)                  # credit first: fine
    stf.expect(2, data)
    with pytest.raises(AssertionError, match="priority-1 packet expected on port 2"):
        stf.expect(2, credit)
    stf.line("mc_mgrp_create 1")         # a control line ends the burst
    stf.expect(2, credit)
