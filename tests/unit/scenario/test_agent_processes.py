"""Which hosts share an agent process (scenario.agent_groups.agent_processes)."""

from hypothesis import given, strategies as st

from testbed.scenario.agent_groups import agent_processes

HOSTS = [f"h{i}" for i in range(1, 17)]


def test_hosts_are_split_over_one_process_per_core():
    plan = agent_processes(HOSTS, set(), cores=2)
    assert [len(g) for g in plan] == [8, 8]
    assert sorted(h for g in plan for h in g) == sorted(HOSTS)


def test_a_stalled_host_runs_alone_and_the_rest_are_shared():
    plan = agent_processes(HOSTS, {"h3"}, cores=2)
    assert plan[0] == ["h3"]
    assert [len(g) for g in plan[1:]] == [8, 7]
    assert "h3" not in {h for g in plan[1:] for h in g}


def test_one_per_process_gives_every_host_its_own():
    assert agent_processes(["h2", "h1"], set(), cores=2, per_process=1) == [["h1"], ["h2"]]


def test_a_cap_adds_processes_and_keeps_sizes_even():
    plan = agent_processes(HOSTS, set(), cores=2, per_process=5)
    assert [len(g) for g in plan] == [4, 4, 4, 4]


def test_fewer_hosts_than_cores():
    assert agent_processes(["h1"], set(), cores=8) == [["h1"]]
    assert agent_processes([], set(), cores=2) == []


@given(st.integers(0, 70), st.integers(1, 16), st.one_of(st.none(), st.integers(1, 20)),
       st.sets(st.integers(0, 69), max_size=5))
def test_every_host_exactly_once_and_caps_held(n, cores, cap, stalled):
    hosts = [f"h{i}" for i in range(n)]
    solo = {f"h{i}" for i in stalled if i < n}
    plan = agent_processes(hosts, solo, cores, cap)
    assert sorted(h for g in plan for h in g) == sorted(hosts)
    shared = [g for g in plan if not (len(g) == 1 and g[0] in solo)]
    for group in plan:
        if set(group) & solo:
            assert len(group) == 1
    if shared:
        sizes = [len(g) for g in shared]
        assert max(sizes) - min(sizes) <= 1
        if cap is not None:
            assert max(sizes) <= cap
        assert len(shared) >= min(cores, n - len(solo))
