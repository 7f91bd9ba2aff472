"""The diagnosis scored on the whole corpus (tests/unit/diagnose/corpus.py): 6 scenarios (leaf-spine and
k=4 fat-tree x permutation, incast, all-reduce) x (1 healthy + 5 faulty) runs on the simulator with the
scenario's own faults, every kind, per seed of the target and time draw. About two minutes a seed on
two cores, so it runs under `make diagnose-corpus` (TESTBED_DIAGNOSE_CORPUS=1), not in the unit suite.
TESTBED_DIAGNOSE_SEEDS (comma-separated, default 43) names the draws, each scored on its own; -s
prints every run and each seed's confusion table. TESTBED_DIAGNOSE_SWITCHES=program runs the corpus on
the program network (the scenario's P4 program in every switch, against the program twin);
the default, model, on the hand-written model."""

from __future__ import annotations

import os

import pytest

from tests.unit.diagnose.corpus import INJECTED, corpus_seeds, print_scores, score

pytestmark = pytest.mark.skipif(os.environ.get("TESTBED_DIAGNOSE_CORPUS") != "1",
                                reason="the full corpus takes minutes: make diagnose-corpus")


@pytest.mark.parametrize("seed", corpus_seeds(os.environ.get("TESTBED_DIAGNOSE_SEEDS")))
def test_corpus_acceptance(tmp_path, seed):
    switches = os.environ.get("TESTBED_DIAGNOSE_SWITCHES") or "model"
    assert switches in ("model", "program"), f"TESTBED_DIAGNOSE_SWITCHES={switches!r}: model or program"
    rows = score(tmp_path, seed=seed, switches=switches)
    print_scores(rows, f"seed {seed}")
    faulty = [r for r in rows if r["injected"]]
    healthy = [r for r in rows if not r["injected"]]
    assert len(faulty) >= 24 and len(healthy) >= 6
    assert {r["injected_class"] for r in faulty} == {f"{k} {s}" for k, s in (
        (("link" if kind.startswith("link") else "switch" if kind == "switch_restart" else "host"), symptom)
        for kind, symptom in INJECTED)}
    assert all(r["right"] for r in healthy), [r for r in healthy if not r["right"]]
    assert max(r["wall_s"] for r in rows) <= 60
    assert sum(r["right"] for r in faulty) >= 0.95 * len(faulty), [r for r in faulty if not r["right"]]
