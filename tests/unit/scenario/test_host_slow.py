"""host_slow: a straggler host, validated as one fault and carried out as its start and its end."""

import pytest

from testbed.scenario import parse_scenario
from testbed.scenario.errors import ScenarioError
from testbed.scenario.timescale import slowed

BASE = """duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
workload: [{kind: pingall}]
faults:
  - {at_s: 1, kind: link_down, target: leaf1-spine2}
"""


def test_host_slow_is_a_start_and_an_end_and_slows_with_the_clock():
    s = parse_scenario(BASE + "  - {at_s: 2, kind: host_slow, target: h2, duration_s: 3, delay_ms: 40, rate_mbps: 2}\n",
                       "f.yaml")
    fault = s.faults[1]
    assert (fault.kind, fault.target, fault.delay_ms, fault.rate_mbps, fault.duration_s) == ("host_slow", "h2", 40, 2, 3)
    assert fault.events() == [(2.0, "host_slow"), (5.0, "host_restore")]
    half = slowed(s, 0.5).faults[1]
    assert (half.at_s, half.duration_s, half.delay_ms, half.rate_mbps) == (4.0, 6.0, 80.0, 1.0)
    only_rate = parse_scenario(BASE + "  - {at_s: 2, kind: host_slow, target: h1, duration_s: 1, rate_mbps: 1}\n",
                               "f.yaml").faults[1]
    assert (only_rate.delay_ms, only_rate.rate_mbps) == (0.0, 1.0)


@pytest.mark.parametrize("fault, line, message", [
    ("{at_s: 2, kind: host_slow, target: h2, duration_s: 1}", 6, "host_slow needs delay_ms or rate_mbps"),
    ("{at_s: 2, kind: host_slow, target: h2, delay_ms: 5}", 6, "host_slow needs duration_s"),
    ("{at_s: 2, kind: host_slow, target: leaf1, duration_s: 1, delay_ms: 5}", 6, "'leaf1' is not a host"),
    ("{at_s: 9, kind: host_slow, target: h1, duration_s: 2, delay_ms: 5}", 6, "ends after the run"),
    ("{at_s: 2, kind: host_slow, target: h1, duration_s: 1, delay_ms: -5}", 6, "delay_ms"),
    ("{at_s: 2, kind: host_slow, target: h1, duration_s: 1, delay_ms: 5, loss: 0.1}", 6, "is only used by link_degrade"),
    ("{at_s: 2, kind: agent_stall, target: h1, duration_s: 1, delay_ms: 5}", 6, "is only used by host_slow"),
])
def test_a_bad_host_slow_is_one_line_at_its_place(fault, line, message):
    with pytest.raises(ScenarioError, match=message) as raised:
        parse_scenario(BASE + f"  - {fault}\n", "f.yaml")
    text = str(raised.value)
    assert text.startswith(f"f.yaml:{line}") and "\n" not in text
