"""A flapping link: validated as one fault, carried out as its downs and ups."""

import pytest

from testbed.emulation.faults import plan_faults
from testbed.scenario import parse_scenario
from testbed.scenario.errors import ScenarioError
from testbed.scenario.timescale import slowed

BASE = """
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
workload: [{kind: pingall}]
faults:
"""


def test_a_flap_is_its_downs_and_ups_in_order_and_slows_with_the_clock():
    s = parse_scenario(BASE + "  - {at_s: 2, kind: link_flap, target: leaf1-spine2, period_s: 1, count: 3}\n", "f.yaml")
    actions = plan_faults(s)
    assert [(a.at_s, a.kind) for a in actions] == [(2.0, "link_down"), (2.5, "link_up"), (3.0, "link_down"),
                                                   (3.5, "link_up"), (4.0, "link_down"), (4.5, "link_up")]
    assert all(a.interfaces == ("leaf1-eth3", "spine2-eth1") for a in actions)  # the switch ends of the cable
    slow = slowed(s, 0.5)
    assert [a.at_s for a in plan_faults(slow)][:2] == [4.0, 5.0]


@pytest.mark.parametrize("fault, message", [
    ("{at_s: 2, kind: link_flap, target: leaf1-spine2, count: 3}", "link_flap needs period_s"),
    ("{at_s: 2, kind: link_down, target: leaf1-spine2, period_s: 1}", "is only used by link_flap"),
    ("{at_s: 8, kind: link_flap, target: leaf1-spine2, period_s: 1, count: 3}", "end after the run"),
])
def test_a_bad_flap_is_one_line_at_its_place(fault, message):
    with pytest.raises(ScenarioError, match=message) as raised:
        parse_scenario(BASE + f"  - {fault}\n", "f.yaml")
    assert str(raised.value).startswith("f.yaml:") and "\n" not in str(raised.value)
