"""placement.servers: the schema and rules, the split over servers, ssh reachability, and the
capacity check planned per server."""

from __future__ import annotations

import argparse
import shutil

import pytest

from testbed.scenario import capacity, parse_scenario
from testbed.scenario import servers as servers_module
from testbed.scenario.commands import run_validate
from testbed.scenario.errors import ScenarioError
from testbed.scenario.processes import describe_placement, shares, switch_placement
from testbed.scenario.servers import ServerFacts, server_hosts, server_switches

BASE = """name: cl
topology: {{kind: fat_tree, k: 4}}
links: {{rate_mbps: {rate}}}
switch: {{target: builtin, backend: python{processes}}}
placement:
  servers:
{servers}
workload:
  - {{kind: permutation, message_bytes: 20000, count: 1}}
"""
TWO = "    - {name: a, address: localhost}\n    - {name: b, address: 127.0.0.1, user: root}"
COSTS = capacity.Costs(switch_us_per_packet=20.0, agent_us_per_datagram=40.0, source="test figures",
                       mode="fabric")


def text(servers=TWO, rate=5, processes=""):
    return BASE.format(servers=servers, rate=rate, processes=processes)


def load(servers=TWO, rate=5, processes=""):
    return parse_scenario(text(servers, rate, processes), "cl.yaml")


def refused(servers, processes="") -> str:
    with pytest.raises(ScenarioError) as error:
        load(servers, processes=processes)
    return str(error.value)


@pytest.fixture
def probed(monkeypatch):
    """Every server answers the probe with the facts given (no ssh)."""
    answers = {}

    def fake(server):
        return answers.get(server.name, ServerFacts(2, 8 << 30))

    monkeypatch.setattr(servers_module, "facts", fake)
    return answers


def test_a_placement_resolves_to_its_servers_in_order():
    s = load()
    assert [(x.name, x.login) for x in s.servers] == [("a", "localhost"), ("b", "root@127.0.0.1")]
    assert parse_scenario("topology: {kind: fat_tree, k: 4}\nworkload: [{kind: pingall}]",
                                            "x.yaml").servers == ()


def test_bad_placements_are_refused_at_their_line():
    assert refused("    - {name: a, address: localhost}\n    - {name: a, address: 127.0.0.1}") == (
        "cl.yaml:8: placement.servers[1].name: 'a' is a duplicate server: placement.servers[0] has this name")
    assert refused("    - {name: a, address: 127.0.0.1}\n    - {name: b, address: 127.0.0.1}") == (
        "cl.yaml:8: placement.servers[1].address: '127.0.0.1' is a duplicate server: placement.servers[0] "
        "is reached at it too")
    assert refused("    - {name: a}").startswith("cl.yaml:7: placement.servers[0]")
    assert "'edge9_9' is not a switch" in refused("    - {name: a, address: localhost, switches: [edge9_9]}")
    assert "'edge1_1' is already placed on placement.servers[0] (a)" in refused(
        "    - {name: a, address: localhost, switches: [edge1_1]}\n"
        "    - {name: b, address: 127.0.0.1, switches: [edge1_1]}")
    assert "b names no switches while other servers do" in refused(
        "    - {name: a, address: localhost, switches: [edge1_1]}\n    - {name: b, address: 127.0.0.1}")
    assert "(19 switches) on no server" in refused("    - {name: a, address: localhost, switches: [edge1_1]}")
    many = "\n".join(f"    - {{name: s{i}, address: 10.0.0.{i}}}" for i in range(21))
    assert "names 21 servers for 20 switches" in refused(many)
    assert "switch.processes: is 1, fewer fabric processes than the 2 servers" in refused(TWO, ", processes: 1")


def test_the_default_split_keeps_pods_together_and_hosts_follow_their_tor(probed):
    s = load()
    switches = server_switches(s)
    assert sorted(len(g) for g in switches) == [10, 10]
    pods = [{name.split("_")[0][-1] for name in g if not name.startswith("core")} for g in switches]
    assert all(len(p) == 2 for p in pods) and not pods[0] & pods[1]  # two whole pods each
    hosts = server_hosts(s, switches)
    for group, mine in zip(switches, hosts):
        assert len(mine) == 8 and all(s.topo.tors_of(h)[0] in group for h in mine)
    placement = switch_placement(s)
    assert placement.server_of == (0, 1)  # 2 cores each: one fabric process per server
    assert len(placement.cross_server(s.topo)) == 8 and placement.cut(s.topo) == 8
    assert "8 switch cables between servers (tunnelled)" in describe_placement(s, placement)
    probed["a"] = ServerFacts(4, 8 << 30)
    assert switch_placement(s).server_of == (0, 0, 1)  # auto: one per two of each server's cores


def test_named_switches_and_fabric_processes_are_kept(probed):
    s = load(processes=", processes: 3")
    assert switch_placement(s).server_of == (0, 0, 1)
    assert shares(5, [10, 10]) == [3, 2] and shares(2, [19, 1]) == [1, 1]
    names = [n for n in s.topo.switches]
    listed = (f"    - {{name: a, address: localhost, switches: [{', '.join(names[:5])}]}}\n"
              f"    - {{name: b, address: 127.0.0.1, switches: [{', '.join(names[5:])}]}}")
    s = load(listed)
    assert server_switches(s) == [names[:5], names[5:]]
    assert switch_placement(s).server_switches(0) == tuple(names[:5])


def validate(tmp_path, body, capsys) -> tuple[int, str]:
    path = tmp_path / "cl.yaml"
    path.write_text(body)
    code = run_validate(argparse.Namespace(files=[str(path)]))
    return code, capsys.readouterr().err.strip()


@pytest.mark.skipif(shutil.which("ssh") is None, reason="the ssh client is not installed")
def test_validate_refuses_a_server_ssh_cannot_reach(tmp_path, capsys):
    servers_module._FACTS.clear()
    code, err = validate(tmp_path, text("    - {name: a, address: localhost}\n"
                                        "    - {name: b, address: nosuch.invalid}"), capsys)
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith(f"{tmp_path}/cl.yaml:8: placement.servers[1].address: server b (nosuch.invalid) "
                          "cannot be reached with ssh (BatchMode, ConnectTimeout 5 s): ")
    assert "nosuch.invalid" in err.split("): ", 1)[1]  # ssh's own words follow


def test_validate_refuses_servers_too_few_for_the_memory(tmp_path, capsys, probed):
    probed["a"] = probed["b"] = ServerFacts(2, 512 << 20)
    code, err = validate(tmp_path, text(), capsys)
    assert code == 1 and len(err.splitlines()) == 1
    assert err.startswith(f"{tmp_path}/cl.yaml:6: placement.servers: needs more servers than the 2 given: "
                          "server a (localhost) runs 10 switches and 8 hosts, about 0.6 GiB of memory, and has "
                          "0.5 GiB available; the fabric needs about 1.3 GiB in all, at least 3 servers")


def test_each_server_is_planned_against_its_own_cores(probed):
    one = parse_scenario(text().split("placement:")[0] + "workload:\n  - {kind: permutation}\n", "one.yaml")
    alone = capacity.fitting_rate(one, COSTS, cores=2)
    two = load()
    spread = capacity.fitting_rate(two, COSTS)
    # each server runs half the switches and half the hosts on 2 cores of its own
    assert spread == pytest.approx(2 * alone, rel=0.05)
    line = capacity.check(load(rate=spread * 0.95), COSTS)
    assert "server a (localhost)" in line and "server b (root@127.0.0.1)" in line and "(2 cores x 0.6)" in line
    probed["b"] = ServerFacts(1, 8 << 30)  # the smaller server decides
    assert capacity.fitting_rate(two, COSTS) < spread
    with pytest.raises(capacity.CapacityError) as error:
        capacity.check(load(rate=spread * 0.95), COSTS)
    message = str(error.value)
    assert message.startswith("cl.yaml: server b (root@127.0.0.1) runs 10 switches and 8 hosts, which need about")
    assert "plans for 0.60 (1 cores x 0.6); the largest host link rate every server holds is about" in message


def test_a_run_over_servers_with_faults_is_refused_in_one_line_before_it_starts(tmp_path):
    from testbed.emulation.run import VariantRun, refuse_servers
    from testbed.errors import TestbedError

    s = parse_scenario(text() + FAULT, "cl.yaml")
    with pytest.raises(TestbedError, match="^cl.yaml: faults: a fabric over several servers"):
        refuse_servers(s)
    variant = s._origin.variants[0] if s._origin.variants else None
    with pytest.raises(TestbedError, match="faults"):
        VariantRun(variant or argparse.Namespace(scenario=s, name="base"), tmp_path / "run", tmp_path).run()
    assert not (tmp_path / "run").exists()


FAULT = "faults:\n  - {kind: link_down, at_s: 1, target: edge1_1-agg1_1}\n"


def test_testbed_run_and_show_answer_in_one_line(tmp_path, capsys, probed):
    from testbed import cli

    path = tmp_path / "cl.yaml"
    path.write_text(text() + FAULT)
    assert cli.main(["run", "--fit", str(path)]) == 1  # refused before the root check and the run lock
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: faults: a fabric over several servers" in err
    path.write_text(text())
    assert cli.main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "servers: 2, 8 switch cables between servers (tunnelled)" in out
    assert "  b (root@127.0.0.1): 1 process(es), 10 switches: " in out
