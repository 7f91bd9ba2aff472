import pytest

from testbed.host import workloads
from testbed.host.workloads import WorkloadError

HOSTS = [f"h{i}" for i in range(1, 9)]


def test_permutation_is_a_derangement_and_seeded():
    a = workloads.permutation(HOSTS, 1000, seed=4)
    assert sorted(m.dst for m in a) == HOSTS and all(m.src != m.dst for m in a)
    assert a == workloads.permutation(HOSTS, 1000, seed=4)
    assert a != workloads.permutation(HOSTS, 1000, seed=5)


def test_all_to_all_skew_concentrates_on_popular_ranks():
    flat = workloads.all_to_all(HOSTS, 80_000, seed=1)
    assert {m.size_bytes for m in flat} == {10_000} and len(flat) == 8 * 7
    skew = workloads.all_to_all(HOSTS, 80_000, seed=1, zipf_s=1.2)
    into = {h: sum(m.size_bytes for m in skew if m.dst == h) for h in HOSTS}
    assert max(into.values()) > 3 * min(into.values())
    per_src = {h: sum(m.size_bytes for m in skew if m.src == h) for h in HOSTS}
    assert all(abs(v - 70_000) <= 8 for v in per_src.values())


def test_ring_allreduce_steps_and_combine_renumbering():
    ring = workloads.ring_allreduce(HOSTS[:4], 4000)
    assert len(ring) == 4 * 6 and {m.size_bytes for m in ring} == {1000}
    both = workloads.combine(workloads.incast(["h4", "h2"], "h1", 10), ring)
    m = [x for x in both if x.src == "h4" and x.dst == "h1" and x.collective == "allreduce"]
    assert [x.msg_id for x in m] == list(range(1, 7))  # msg 0 of h4->h1 is the incast one
    dep = [x for x in both if x.src == "h1" and x.collective == "allreduce" and x.deps][0]
    assert dep.deps == (("h4", 1),)
    assert workloads.MessageSpec.from_json(dep.to_json()) == dep


def test_bad_parameters_are_user_errors():
    with pytest.raises(WorkloadError, match="at least 2 hosts"):
        workloads.ring_allreduce(["h1"], 10)
    with pytest.raises(WorkloadError, match="repeat"):
        workloads.permutation(["h1", "h1"], 10, seed=1)
