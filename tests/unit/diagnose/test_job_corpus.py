"""The job diagnosis scored on its corpus (tests/unit/diagnose/job_corpus.py): a data-parallel job on the
program network, healthy (scenario seeds 1 to 4) and with 20 faults (slow GPU, degraded cable, lossy
port, slow host in turn) at iterations and places drawn per seed of TESTBED_DIAGNOSE_SEEDS (default 43).
About 80 s a seed, so it runs only with TESTBED_DIAGNOSE_JOB_CORPUS=1 (make diagnose-job-corpus); -s
prints every run."""

from __future__ import annotations

import os

import pytest

from tests.unit.diagnose.corpus import corpus_seeds, print_scores, score_runs
from tests.unit.diagnose.job_corpus import runs

pytestmark = pytest.mark.skipif(os.environ.get("TESTBED_DIAGNOSE_JOB_CORPUS") != "1",
                                reason="the job corpus takes minutes: TESTBED_DIAGNOSE_JOB_CORPUS=1")


@pytest.mark.parametrize("seed", corpus_seeds(os.environ.get("TESTBED_DIAGNOSE_SEEDS")))
def test_job_corpus_acceptance(tmp_path, seed):
    rows = score_runs(runs(tmp_path, faulty=20, seed=seed, healthy=4))
    print_scores(rows, f"seed {seed}", cause="job first cause", healthy_name="healthy jobs", unit="job")
    faulty = [r for r in rows if r["injected"]]
    healthy = [r for r in rows if not r["injected"]]
    assert len(faulty) == 20 and len(healthy) == 4
    assert all(r["right"] for r in healthy), [r for r in healthy if not r["right"]]
    assert max(r["wall_s"] for r in rows) <= 60
    assert sum(r["right"] for r in faulty) >= 0.95 * len(faulty), [r for r in faulty if not r["right"]]
