"""The diagnosis scored on the whole corpus (tests/unit/diagnose/corpus.py): 6 scenarios (leaf-spine and
k=4 fat-tree x permutation, incast, all-reduce) x (1 healthy + 4 faulty) runs. About two minutes on two
cores, so it runs under `make diagnose-corpus` (TESTBED_DIAGNOSE_CORPUS=1), not in the unit suite."""

from __future__ import annotations

import os

import pytest

from tests.unit.diagnose.corpus import score

pytestmark = pytest.mark.skipif(os.environ.get("TESTBED_DIAGNOSE_CORPUS") != "1",
                                reason="the full corpus takes minutes: make diagnose-corpus")


def test_corpus_acceptance(tmp_path):
    rows = score(tmp_path)
    for row in rows:
        print(row)
    faulty = [r for r in rows if r["injected"]]
    healthy = [r for r in rows if not r["injected"]]
    assert len(faulty) >= 24 and len(healthy) >= 6
    assert sum(r["right"] for r in faulty) >= 0.95 * len(faulty), [r for r in faulty if not r["right"]]
    assert all(r["right"] for r in healthy), [r for r in healthy if not r["right"]]
    assert max(r["wall_s"] for r in rows) <= 60
