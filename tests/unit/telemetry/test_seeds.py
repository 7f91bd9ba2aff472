"""Variants that differ only in their seed are summarised as mean and range."""

from testbed.telemetry.seeds import seed_groups, seed_lines


def summary(goodput, ratio, p50, p99):
    return {"goodput_mbps": goodput, "measured_over_ideal": {"goodput": ratio},
            "completion_p50_ms": p50, "completion_p99_ms": p99}


def test_groups_are_everything_but_the_seed():
    names = ["load_balancing=ecmp,seed=1", "load_balancing=ecmp,seed=2", "load_balancing=spray,seed=1",
             "load_balancing=spray,seed=2", "load_balancing=spray,seed=3", "cc=tita"]
    assert seed_groups(names) == {"load_balancing=ecmp": names[:2], "load_balancing=spray": names[2:5]}
    assert seed_groups(["seed=1", "seed=2"]) == {"all": ["seed=1", "seed=2"]}
    assert seed_groups(["load_balancing=ecmp", "load_balancing=spray"]) == {}


def test_mean_and_range_per_group():
    summaries = {"lb=ecmp,seed=1": summary(10.0, 0.5, 100.0, 200.0),
                 "lb=ecmp,seed=2": summary(14.0, 0.7, 80.0, 260.0),
                 "lb=spray,seed=1": summary(19.0, 0.95, 50.0, 55.0),
                 "lb=spray,seed=2": summary(19.4, None, 52.0, 56.0)}
    lines = seed_lines(summaries)
    table = {row.split(" | ")[0].strip("| "): row for row in lines if row.startswith("| ")}
    assert "12 [10, 14]" in table["goodput (Mbit/s)"] and "19.2 [19, 19.4]" in table["goodput (Mbit/s)"]
    assert "0.6 [0.5, 0.7]" in table["goodput measured / ideal"]
    assert "0.95 [0.95, 0.95]" in table["goodput measured / ideal"]  # a missing value is left out
    assert "(n=2)" in lines[2]
    assert seed_lines({"lb=ecmp": summary(1, 1, 1, 1)}) == []
