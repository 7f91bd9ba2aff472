"""Whatever a user writes, the answer is a Scenario or one `file:line:` error."""

import copy
import re

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.scenario import ScenarioError, expand_variants, parse_scenario

VALID = yaml.safe_load("""
topology: {kind: leaf_spine, leaves: 4, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 20, delay_us: 1000, host: {buffer_packets: 40}}
switch: {target: builtin}
fabric: {load_balancing: spray, cell_size: 1024, ecn: {mode: red}, credits: {enabled: false}}
transport: {cc: dcqcn, tita: {initial_w: 0.1}, dcqcn: {g: 0.01}}
workload:
  - {kind: pingall}
  - {kind: incast, senders: 3, receiver: h2, start_s: 1}
  - {kind: permutation, start_s: 2}
  - {kind: ring_allreduce, hosts: [h1, h3, h5]}
faults: [{at_s: 3, kind: link_down, target: leaf1-spine1}]
variants: {cc: [tita, none]}
""")


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, prefix + (i,))


PATHS = [p for p in _paths(VALID) if p]
WORDS = st.sampled_from(["kind", "leaf_spine", "fat_tree", "h1", "h99", "spray", "tita", "red",
                         "k", "leaves", "", "all", "leaf1-spine1", "20M", "yes"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 3000),
                    st.floats(allow_nan=True, allow_infinity=True), WORDS)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(WORDS, inner, max_size=3)), max_leaves=6)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(PATHS), VALUES, st.booleans()), min_size=1, max_size=3))
def test_mutated_scenarios_never_crash(edits):
    doc = copy.deepcopy(VALID)
    for path, value, delete in edits:
        parent = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            if delete and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    text = yaml.safe_dump(doc, sort_keys=False)
    try:
        scenario = parse_scenario(text, "fuzz.yaml")
    except ScenarioError as error:
        assert re.match(r"^fuzz\.yaml(:\d+)?: \S", str(error)), str(error)
        assert "\n" not in str(error)
        return
    assert expand_variants(scenario)
    assert yaml.safe_load(yaml.safe_dump(scenario.to_dict()))["name"] == scenario.name
