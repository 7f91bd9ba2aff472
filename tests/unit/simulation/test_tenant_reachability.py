"""Tenants isolated by the fabric, measured on the simulator's switches (the scenario's fabric.p4
with the controller's plan, in the native engine): the N x N matrix of one cell per ordered pair."""

from __future__ import annotations

from testbed.p4model.telemetry import DROP_REASONS
from testbed.scenario import parse_scenario
from testbed.simulation.reachability import measure

THREE_TENANTS = """
name: tenants3
topology: {kind: fat_tree, k: 4}
fabric: {load_balancing: spray_rr_entropy}
tenants:
  - {name: blue, hosts: [h1, h2, h3, h4, h5]}
  - {name: red, hosts: [h6, h7, h8, h9, h10, h11]}
  - {name: green, hosts: [h12, h13, h14, h15, h16]}
workload: [{kind: permutation, hosts: [h1, h2, h3, h4, h5]}]
"""


def _tors(scenario) -> dict[str, str]:
    return {h: scenario.topo.tors_of(h)[0] for h in scenario.topo.hosts}


def test_three_tenants_on_a_k4_fat_tree_reach_within_and_never_across():
    scenario = parse_scenario(THREE_TENANTS, "tenants3.yaml")
    matrix = measure(scenario)
    assert len(matrix.pairs) == 16 * 15
    assert matrix.check(_tors(scenario)) == []
    within = [r for r in matrix.pairs if matrix.expected(r.src, r.dst)]
    across = [r for r in matrix.pairs if not matrix.expected(r.src, r.dst)]
    assert (len(within), len(across)) == (5 * 4 + 6 * 5 + 5 * 4, 240 - 70)
    assert all(r.delivered and r.drops == () for r in within)
    # each cross pair: not delivered, and exactly one foreign-tenant drop, at the source's ToR
    assert all(not r.delivered and r.drops == ((_tors(scenario)[r.src], "foreign_tenant", 1),) for r in across)
    assert matrix.summary() == ("reachability: 70/70 pairs within tenants reach, "
                                "0/170 pairs across tenants reach")


def test_without_tenants_every_pair_reaches():
    scenario = parse_scenario(THREE_TENANTS.split("tenants:")[0] + "workload: [{kind: pingall}]\n", "open.yaml")
    assert scenario.tenants == ()
    matrix = measure(scenario)
    assert all(r.delivered and r.drops == () for r in matrix.pairs)
    assert matrix.check(_tors(scenario)) == []


def test_a_host_in_no_tenant_is_denied_at_its_port():
    text = THREE_TENANTS.replace("[h12, h13, h14, h15, h16]", "[h12, h13, h14, h15]")
    scenario = parse_scenario(text, "tenants3.yaml")
    matrix = measure(scenario)
    tor = _tors(scenario)["h16"]
    from_h16 = [r for r in matrix.pairs if r.src == "h16"]
    assert all(not r.delivered and r.drops == ((tor, "port_unbound", 1),) for r in from_h16)
    to_h16 = [r for r in matrix.pairs if r.dst == "h16"]
    assert all(not r.delivered for r in to_h16)
    # the check sees what the rule says: h16 reaches no one, and no one reaches it
    assert all(not matrix.expected(r.src, r.dst) for r in from_h16 + to_h16)
    assert matrix.check(_tors(scenario)) == []


def test_check_names_each_pair_that_breaks_the_rule():
    from testbed.simulation.reachability import Matrix, PairResult, render

    tors = {"h1": "leaf1", "h2": "leaf1", "h3": "leaf2"}
    matrix = Matrix(("h1", "h2", "h3"), {"h1": 1, "h2": 1, "h3": 2}, [
        PairResult("h1", "h2", False, (("leaf1", "foreign_tenant", 1),)),    # should reach
        PairResult("h2", "h1", True),
        PairResult("h1", "h3", True),                                         # crossed
        PairResult("h3", "h1", False, (("leaf2", "no_route", 1),)),           # dropped, wrong counter
        PairResult("h2", "h3", False, (("leaf1", "foreign_tenant", 1),)),
    ])
    assert matrix.check(tors) == [
        "h1 -> h2: should reach, was dropped (foreign_tenant at leaf1)",
        "h1 -> h3: crosses tenants, was delivered",
        "h3 -> h1: crosses tenants; expected one foreign_tenant drop at leaf2, counted no_route at leaf2",
    ]
    text = render(matrix, tors)
    assert text[2].endswith("-  X  X") and text[3].endswith("o  -  .") and text[4].endswith("X  -  -")


def test_reachability_command_prints_the_matrix_and_fails_on_a_broken_rule(tmp_path, capsys, monkeypatch):
    from testbed import cli
    from testbed.simulation import reachability

    path = tmp_path / "two.yaml"
    path.write_text("topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\n"
                    "tenants: [{name: a, hosts: [h1, h3]}, {name: b, hosts: [h2, h4]}]\n"
                    "workload: [{kind: pingall, hosts: [h1, h3]}]\n")
    assert cli.main(["reachability", str(path)]) == 0
    out = capsys.readouterr().out
    assert "reachability: 4/4 pairs within tenants reach, 0/8 pairs across tenants reach" in out
    real = reachability.Matrix.expected
    monkeypatch.setattr(reachability.Matrix, "expected", lambda self, s, d: not real(self, s, d))
    assert cli.main(["reachability", str(path)]) == 1
    assert "h1 -> h2: should reach, was dropped (foreign_tenant at leaf1)" in capsys.readouterr().out


def test_one_cell_at_a_time_attributes_as_the_burst_does(monkeypatch):
    """When a burst's counters are not what the rule expects, the source's pairs are measured one
    cell at a time: forced here for every source, the matrix is the same."""
    from testbed.simulation import reachability

    scenario = parse_scenario(THREE_TENANTS, "tenants3.yaml")
    burst = measure(scenario)
    sent = []
    real_send = reachability._Prober.send

    def counting(self, src, dsts):
        sent.append(len(dsts))
        return real_send(self, src, dsts)

    monkeypatch.setattr(reachability._Prober, "send", counting)
    monkeypatch.setattr(reachability.Matrix, "reason", lambda self, src: "no_such_reason")
    alone = measure(scenario)
    assert sent == [15, *[1] * 15] * 16  # every source: its burst, then each pair again alone
    assert alone.pairs == burst.pairs


def test_spoofed_and_forged_cells_are_dropped_at_the_source_tor_by_reason():
    """A host of blue sends with another host's MAC or address, or writes red's tenant id into
    DSCP: nothing of it reaches red, each spoof is counted under its reason at its own ToR, and a
    forged tenant id is simply overwritten (the cell still reaches blue only)."""
    from testbed.simulation import reachability

    scenario = parse_scenario(THREE_TENANTS, "tenants3.yaml")
    prober = reachability._Prober(scenario)
    topo = scenario.topo
    tor = _tors(scenario)["h1"]

    def sent(frame: bytes, dst: str) -> tuple[bool, tuple]:
        before = reachability._delivered(prober.fabric, dst)
        prober.fabric.inject("h1", frame, prober.now)
        prober.now = prober.fabric.run_until(prober.now + prober.settle_ns, prober.now)
        after = reachability._read_drops(prober.fabric)
        rose = tuple((s, DROP_REASONS[r], n - prober.drops.get((s, r), 0))
                     for (s, r), n in sorted(after.items()) if n > prober.drops.get((s, r), 0))
        prober.drops = after
        return reachability._delivered(prober.fabric, dst) > before, rose

    def with_checksum(frame: bytearray) -> bytes:
        frame[24:26] = b"\0\0"
        words = sum(int.from_bytes(frame[i:i + 2], "big") for i in range(14, 34, 2))
        while words >> 16:
            words = (words & 0xFFFF) + (words >> 16)
        frame[24:26] = (~words & 0xFFFF).to_bytes(2, "big")
        return bytes(frame)

    good = bytearray(prober.cell("h1", "h2"))
    mac = bytearray(good)
    mac[6:12] = bytes.fromhex(topo.port("h6", 1).mac.replace(":", ""))
    assert sent(bytes(mac), "h2") == (False, ((tor, "spoofed_mac", 1),))
    for claimed in ("h2", "h6"):  # a blue neighbour's address, a red host's
        ip = bytearray(good)
        ip[26:30] = bytes(int(b) for b in topo.node(claimed).ip.split("."))
        assert sent(with_checksum(ip), "h2") == (False, ((tor, "spoofed_ipv4", 1),))
    forged = bytearray(prober.cell("h1", "h6"))
    forged[15] = (2 << 2) | (forged[15] & 3)  # red's tenant id in DSCP
    assert sent(with_checksum(forged), "h6") == (False, ((tor, "foreign_tenant", 1),))
    forged = bytearray(good)
    forged[15] = (2 << 2) | (forged[15] & 3)
    assert sent(with_checksum(forged), "h2") == (True, ())
    # per tenant, over P4Runtime at h1's ToR: blue's 4 refused cells, and the 1 it admitted (the
    # forged id overwritten)
    from p4.v1 import p4runtime_pb2

    index = prober.fabric.p4info_index

    def read(counter: str) -> dict[int, int]:
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = index.counter(counter).preamble.id
        return {e.counter_entry.index.index: e.counter_entry.data.packet_count
                for e in prober.fabric.controls[tor].read(entity) if e.counter_entry.data.packet_count}

    assert read("FabricIngress.tenant_drops") == {1: 4}
    assert read("FabricIngress.tenant_packets") == {1: 1}


def test_reachability_of_a_run_directory_gives_the_runs_own_check_first(tmp_path, capsys):
    import json

    from testbed import cli

    run = tmp_path / "run"
    (run / "base").mkdir(parents=True)
    (run / "scenario.yaml").write_text("topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\n"
                                       "tenants: [{name: a, hosts: [h1, h3]}, {name: b, hosts: [h2, h4]}]\n"
                                       "workload: [{kind: pingall, hosts: [h1, h3]}]\n")
    ping = {"pairs": 4, "failed": [], "across_tenants": 8, "crossed": []}
    (run / "base" / "result.json").write_text(json.dumps({"variant": "base", "pingall": ping}))
    assert cli.main(["reachability", str(run)]) == 0
    assert capsys.readouterr().out.startswith(
        "the run's own check: Tenants (base): ping-all before traffic: 4/4 pairs within tenants answered, "
        "0/8 across; as the tenants say.\nbase:\n")
    (run / "base" / "result.json").write_text(json.dumps({"variant": "base", "pingall": {**ping, "crossed": ["h1->h2"]}}))
    assert cli.main(["reachability", str(run)]) == 1
    assert "1/8 across; **BROKEN**." in capsys.readouterr().out
