"""The variant matrix: cartesian product, names, re-resolution per variant."""

import pytest

from testbed.scenario import ScenarioError, expand_variants, parse_scenario

BASE = """\
topology: {kind: leaf_spine}
workload: [{kind: permutation}]
"""


def test_no_variants_is_one_base_run():
    s = parse_scenario(BASE)
    (only,) = expand_variants(s)
    assert only.name == "base" and only.scenario is s


def test_cartesian_product_in_file_order():
    s = parse_scenario(BASE + "variants:\n  load_balancing: [ecmp, spray]\n  cc: [tita, dcqcn, none]\n")
    names = [v.name for v in expand_variants(s)]
    assert names == [f"load_balancing={lb},cc={cc}" for lb in ("ecmp", "spray")
                     for cc in ("tita", "dcqcn", "none")]
    by_name = {v.name: v.scenario for v in expand_variants(s)}
    tita = by_name["load_balancing=spray,cc=tita"]
    assert tita.fabric.load_balancing == "spray_rr_entropy" and tita.transport.cc == "tita"
    assert tita.fabric.credits.enabled and tita.variants == ()
    assert tita.variant == (("load_balancing", "spray"), ("cc", "tita"))
    assert by_name["load_balancing=ecmp,cc=dcqcn"].fabric.ecn.mode == "red"
    assert s.variants[0].path == ("fabric", "load_balancing")


def test_dotted_paths_and_derived_values_follow_the_variant():
    s = parse_scenario(BASE + "variants:\n  cell_size: [256, 1500]\n  links.rate_mbps: [10, 40]\n"
                       "  workload.0.message_bytes: [1000]\n")
    variants = expand_variants(s)
    assert len(variants) == 4
    small = next(v.scenario for v in variants if v.name.startswith("cell_size=256,links.rate_mbps=40"))
    big = next(v.scenario for v in variants if v.name.startswith("cell_size=1500,links.rate_mbps=10"))
    assert small.derived.bdp_cells > big.derived.bdp_cells
    assert small.links.host.buffer_packets == 2 * small.derived.bdp_cells
    assert small.workload[0].message_bytes == 1000


def test_seed_variants_change_the_permutation():
    s = parse_scenario(BASE + "variants: {seed: [1, 2, 3]}\n")
    pairs = {v.scenario.workload[0].pairs for v in expand_variants(s)}
    assert len(pairs) > 1


def test_variant_value_error_points_at_the_value_line():
    text = BASE + "variants:\n  cell_size:\n    - 512\n    - 100\n"
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "v.yaml")
    assert str(caught.value) == "v.yaml:6: variants.cell_size[1]: 100 is below the minimum 256"


def test_variant_into_missing_list_item():
    with pytest.raises(ScenarioError, match=r"v.yaml:3: variants.workload.3.count: workload has no item 3"):
        parse_scenario(BASE + "variants: {workload.3.count: [2]}\n", "v.yaml")


def test_name_cannot_vary_and_matrix_is_bounded():
    with pytest.raises(ScenarioError, match="cannot vary"):
        parse_scenario(BASE + "variants: {name: [a, b]}\n")
    many = "\n".join(f"  links.host.buffer_packets: [{', '.join(str(i) for i in range(1, 20))}]"
                     for _ in range(1))
    too_many = BASE + "variants:\n" + many + "\n  seed: [" + ", ".join(map(str, range(20))) + "]\n"
    with pytest.raises(ScenarioError, match="expands to 380 runs"):
        parse_scenario(too_many)
