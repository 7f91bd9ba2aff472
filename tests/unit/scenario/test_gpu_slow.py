"""gpu_slow: a slow GPU, validated as one fault and carried out as its start and its end."""

import pytest

from testbed.emulation.faults import plan_faults
from testbed.scenario import parse_scenario
from testbed.scenario.errors import ScenarioError

BASE = """duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 1}
workload: [{kind: pingall}]
faults:
  - {at_s: 1, kind: link_down, target: leaf1-spine2}
"""


def test_gpu_slow_is_a_start_and_an_end_with_its_factor():
    s = parse_scenario(BASE + "  - {at_s: 2, kind: gpu_slow, target: h2, duration_s: 3, factor: 2.5}\n", "f.yaml")
    fault = s.faults[1]
    assert (fault.kind, fault.target, fault.factor, fault.duration_s) == ("gpu_slow", "h2", 2.5, 3)
    assert fault.events() == [(2.0, "gpu_slow"), (5.0, "gpu_restore")]
    actions = [a for a in plan_faults(s) if a.kind.startswith("gpu")]
    assert [(a.at_s, a.kind, a.target, a.gpu) for a in actions] == [(2.0, "gpu_slow", "h2", 2.5),
                                                                     (5.0, "gpu_restore", "h2", 1.0)]
    to_the_end = parse_scenario(BASE + "  - {at_s: 2, kind: gpu_slow, target: h1, factor: 3}\n", "f.yaml").faults[1]
    assert to_the_end.events() == [(2.0, "gpu_slow")]


@pytest.mark.parametrize("fault, message", [
    ("{at_s: 2, kind: gpu_slow, target: h2, duration_s: 1}", "gpu_slow needs factor"),
    ("{at_s: 2, kind: gpu_slow, target: h2, factor: 1}", "factor"),
    ("{at_s: 2, kind: gpu_slow, target: leaf1, factor: 2}", "'leaf1' is not a host"),
    ("{at_s: 9, kind: gpu_slow, target: h1, duration_s: 2, factor: 2}", "ends after the run"),
    ("{at_s: 2, kind: gpu_slow, target: h1, factor: 2, delay_ms: 5}", "is only used by host_slow"),
    ("{at_s: 2, kind: host_slow, target: h1, duration_s: 1, delay_ms: 5, factor: 2}", "is only used by gpu_slow"),
])
def test_a_bad_gpu_slow_is_one_line_at_its_place(fault, message):
    with pytest.raises(ScenarioError, match=message) as raised:
        parse_scenario(BASE + f"  - {fault}\n", "f.yaml")
    text = str(raised.value)
    assert text.startswith("f.yaml:6") and "\n" not in text
