"""The diagnosis scored on emulated runs: the corpus of tests/unit/diagnose/corpus.py (leaf-spine and
k=4 fat-tree x permutation, incast, all-reduce; every fault kind the scenario schema has, kinds
cycled, targets and times drawn with a fixed seed from a simulated healthy run of the scenario),
each run emulated as a user runs it (`testbed run --fit`), beside a healthy emulated run of each
scenario. Each run takes 15 to 60 s of real time, so it runs under `make diagnose-corpus-emulated`
(TESTBED_DIAGNOSE_EMULATED=1), not in the suite. TESTBED_DIAGNOSE_SEEDS names the draws (default
43); TESTBED_DIAGNOSE_FAULTS the fault runs per scenario (default 5: 30 in all); -s prints every
run and the confusion table. The bars are the issue's: first culprit right (kind, target, start
within 1 s) in 95% of the fault runs, no culprit on any healthy run, at most 60 s of diagnosis a
run."""

from __future__ import annotations

import os

import pytest

from tests.unit.diagnose.corpus import corpus_seeds, print_scores, score

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(os.environ.get("TESTBED_DIAGNOSE_EMULATED") != "1",
                                 reason="the emulated corpus takes about half an hour: make diagnose-corpus-emulated")]


@pytest.mark.parametrize("seed", corpus_seeds(os.environ.get("TESTBED_DIAGNOSE_SEEDS")))
def test_emulated_corpus_acceptance(tmp_path, registry, seed):
    faults = int(os.environ.get("TESTBED_DIAGNOSE_FAULTS") or 5)
    rows = score(tmp_path, faults_per_scenario=faults, seed=seed, emulated=True)
    print_scores(rows, f"emulated, seed {seed}", unit="run")
    faulty = [r for r in rows if r["injected"]]
    healthy = [r for r in rows if not r["injected"]]
    assert all(r["right"] for r in healthy), [r for r in healthy if not r["right"]]
    assert max(r["wall_s"] for r in rows) <= 60
    assert sum(r["right"] for r in faulty) >= 0.95 * len(faulty), [r for r in faulty if not r["right"]]
