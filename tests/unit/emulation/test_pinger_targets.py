"""Whom each host's pingers aim at: its tenant's hosts (must answer) and every other (must not)."""

from testbed.emulation import pinger


def test_targets_split_by_tenant_and_staggered():
    hosts = ["h1", "h2", "h3", "h4", "h5"]
    assert pinger.targets(hosts, {}) == {
        "h1": (["h2", "h3", "h4", "h5"], []), "h2": (["h3", "h4", "h5", "h1"], []),
        "h3": (["h4", "h5", "h1", "h2"], []), "h4": (["h5", "h1", "h2", "h3"], []),
        "h5": (["h1", "h2", "h3", "h4"], [])}
    plan = pinger.targets(hosts, {"h1": 1, "h2": 2, "h3": 1, "h4": 2})  # h5: in no tenant
    assert plan["h1"] == (["h3"], ["h2", "h4", "h5"])
    assert plan["h4"] == (["h2"], ["h5", "h1", "h3"])
    assert plan["h5"] == ([], ["h1", "h2", "h3", "h4"])
    assert sum(len(w) for w, _ in plan.values()) == 4 and sum(len(a) for _, a in plan.values()) == 16
