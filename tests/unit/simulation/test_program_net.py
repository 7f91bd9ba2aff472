"""The simulator's program network: the scenario's own P4 program in every switch, the real
transport in every host, on one virtual clock (testbed/simulation/program_net.py)."""

from __future__ import annotations

import json
import shutil
import socket
import struct
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from testbed.cells import wire
from testbed.cells.flowports import flow_source_port
from testbed.p4model.backend.native import compiler
from testbed.scenario import parse_scenario
from testbed.scenario.workload import scenario_messages
from testbed.simulation.run import build_program_network, simulate_program

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler: the native engine cannot be built")

REPO = Path(__file__).resolve().parents[3]
FABRIC = """
name: small
duration_s: 5
seed: 3
topology: {{kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}}
links: {{rate_mbps: 100, delay_us: 20}}
switch: {{program: {program}}}
fabric: {{load_balancing: {lb}, cell_size: 1024{ecn}}}
transport: {{cc: {cc}}}
workload:
{workload}
"""
PERMUTATION = "  - {kind: permutation, message_bytes: 131072, cross_tor: true}"
INCAST = "  - {kind: incast, senders: 3, message_bytes: 262144}"


def scenario(program: str = "p4src/fabric.p4", lb: str = "spray_rr_entropy", cc: str = "none",
             workload: str = PERMUTATION, ecn: str = ""):
    return parse_scenario(FABRIC.format(program=program, lb=lb, cc=cc, workload=workload, ecn=ecn), "small.yaml")


def run(s):
    net, info = simulate_program(s, until_s=s.duration_s)
    return net, info


def test_every_message_arrives_through_the_program():
    net, info = run(scenario())
    assert info["finished"] and info["switches"] == "program"
    delivered = [r for r in net.records() if r["kind"] == "message_delivered"]
    assert len(delivered) == 4
    assert info["cell_hops"] >= 4 * 128 * 3  # every DATA cell crossed leaf, spine, leaf
    assert info["program_drops"] == {}


def test_same_scenario_and_seed_give_identical_records():
    first, _ = run(scenario(cc="tita"))
    second, _ = run(scenario(cc="tita"))
    assert json.dumps(first.records(), sort_keys=True) == json.dumps(second.records(), sort_keys=True)


def test_a_host_sends_the_frame_a_udp_agent_puts_on_the_wire():
    s = scenario()
    net = build_program_network(s)
    host = net.hosts["h1"]
    data = wire.encode(wire.CellPacket(wire.DATA, flow_id=7, psn=1, msg_id=1, aux=1024, body=b"x" * 1024))
    sport = host.source_port("h3", 0)
    frame = Ether(host.frame(0, "h3", sport, 2, data))
    ip, udp = frame[IP], frame[UDP]
    assert (ip.src, ip.dst) == (s.topo.node("h1").ip, s.topo.node("h3").ip)
    assert ip.tos == 2 and ip.ttl == 64 and ip.len == 20 + 8 + len(data)
    recomputed = IP(bytes(IP(src=ip.src, dst=ip.dst, tos=ip.tos, ttl=64, flags="DF", id=0, proto=17)
                          / bytes(ip.payload)))
    assert ip.chksum == recomputed.chksum
    assert udp.dport == wire.CELL_UDP_PORT and bytes(udp.payload) == data
    assert sport == flow_source_port(s.seed, s.topo.node("h1").ip, s.topo.node("h3").ip)
    tor = s.topo.ports("h1")[0]
    assert frame.dst == s.topo.port(tor.peer, tor.peer_port).mac and frame.src == tor.mac


def _edited_program(tmp_path: Path, old: str, new: str, file: str) -> str:
    """A copy of p4src with one edit (no Python changes): the path of its fabric.p4."""
    copy = tmp_path / "p4src"
    shutil.copytree(REPO / "p4src", copy)
    path = copy / "include" / file
    text = path.read_text()
    assert text.count(old) == 1, f"the edit's anchor {old!r} is not once in {file}"
    path.write_text(text.replace(old, new))
    return str(copy / "fabric.p4")


def _ce_cells(net) -> int:
    return sum(h.ep.counters["ce_cells"] for h in net.hosts.values())


def test_an_edit_to_the_marking_action_changes_the_marks(tmp_path):
    ecn = ", ecn: {mode: step, k_cells: 2}"
    marked, _ = run(scenario(workload=INCAST, ecn=ecn))
    edited = _edited_program(tmp_path, "if (meta.ecn_mark == 1) {", "if (false) {", "egress.p4")
    unmarked, _ = run(scenario(program=edited, workload=INCAST, ecn=ecn))
    assert _ce_cells(marked) > 0
    assert _ce_cells(unmarked) == 0


def _spine_tx(net) -> dict[str, int]:
    engine, index = net.engine, net.fabric.index
    return {name: engine.switch_stats(index[name])["tx"] for name in net.topo.switches if name.startswith("spine")}


def test_an_edit_to_the_spray_rule_changes_the_paths(tmp_path):
    sprayed, _ = run(scenario())
    assert all(tx > 0 for tx in _spine_tx(sprayed).values())
    edited = _edited_program(tmp_path, "                pick_by_entropy();\n",
                             "                meta.member = 0;\n", "ingress.p4")
    pinned, info = run(scenario(program=edited))
    assert info["finished"]
    used = [name for name, tx in _spine_tx(pinned).items() if tx > 0]
    assert len(used) == 1


def test_the_telemetry_holds_the_programs_counters(tmp_path):
    from testbed.simulation.program_telemetry import ProgramSampler  # noqa: F401 (the module under test)

    s = scenario()
    net, info = simulate_program(s, period_s=0.01)
    sampler = info["sampler"]
    last = {r["switch"]: r for r in sampler.samples}
    assert set(last) == set(s.topo.switches)
    tx = sum(p["packets"] for r in last.values() for p in r["tx"].values())
    assert tx == info["cell_hops"]
    times = sorted({r["t_s"] for r in sampler.samples})
    assert times[0] == 0 and all(b - a <= 0.01 + 1e-9 for a, b in zip(times, times[1:]))
    series = sampler.host_series("h1", 1024)
    assert series["in_order_cells"][-1] == net.hosts["h1"].ep.in_order_cells


def test_testbed_sim_runs_the_program_with_or_without_faults(tmp_path, capsys):
    from testbed.cli import main

    path = tmp_path / "small.yaml"
    path.write_text(FABRIC.format(program="p4src/fabric.p4", lb="spray_rr_entropy", cc="none",
                                  workload=PERMUTATION, ecn=""))
    assert main(["sim", str(path), "--runs-dir", str(tmp_path / "runs")]) == 0
    result = json.loads(next((tmp_path / "runs").rglob("result.json")).read_text())
    assert result["switches"] == "program" and result["finished"]
    faulty = tmp_path / "faulty.yaml"
    faulty.write_text(path.read_text() + "faults:\n  - {at_s: 0.001, kind: link_down, target: leaf1-spine1}\n")
    capsys.readouterr()
    assert main(["sim", str(faulty), "--runs-dir", str(tmp_path / "runs2")]) == 0
    err = capsys.readouterr().err
    assert "hand-written model" not in err and "Traceback" not in err
    result = json.loads(next((tmp_path / "runs2").rglob("result.json")).read_text())
    assert result["switches"] == "program" and result["faults_carried_out"] == 1
    assert next((tmp_path / "runs2").rglob("reroute.jsonl")).read_text().count('"leaf1-spine1": "down"') == 1


def test_window_rule_never_puts_a_frame_before_the_engine_clock():
    """The hosts' answers reach the fabric after the time the engine last ran to: the window
    (the host link's delay and one shortest frame) is the least a host takes to answer."""
    s = scenario(cc="tita")
    net = build_program_network(s)
    host_link = s.links.host
    assert net.window_ns == round(host_link.delay_us * 1e3) + -(-64 * 8 * 1000 // int(host_link.rate_mbps))
    ahead, reached = [], [0]
    run_window, inject_many = net.engine.run_window, net.engine.inject_many

    def watched_run(until_ns, window_ns):
        reached[0] = run_window(until_ns, window_ns)
        return reached[0]

    def checked(records, count):
        off = 0
        for _ in range(count):
            at, _switch, _port, length = struct.unpack_from("<qIII", records, off)
            ahead.append(at - reached[0])
            off += 24 + ((length + 7) & ~7)
        assert off == len(records)
        inject_many(records, count)

    net.engine.run_window, net.engine.inject_many = watched_run, checked
    net.load(scenario_messages(s), s.seed)
    net.run(s.duration_s)
    assert net.finished() and ahead and min(ahead) >= 1
    assert socket.inet_aton(s.topo.node("h1").ip) == net.hosts["h1"].ip


def test_a_lossless_fabric_pauses_the_hosts_and_drops_nothing():
    lossless = ", pfc: {enabled: true, xoff_cells: 8, xon_cells: 4}"
    lossy_net, lossy = run(scenario(workload=INCAST, cc="none"))
    net, info = run(scenario(workload=INCAST, cc="none", ecn=lossless))
    assert lossy["switch_data_drops"] > 0
    assert info["finished"] and info["switch_data_drops"] == 0 and info["pause_frames"] > 0
    held = max(w.gate.held_max for h in net.hosts.values() for w in h.wires)
    assert held > 0  # some NIC held DATA while its ToR paused it


def test_watching_at_the_telemetry_period_changes_nothing():
    s = scenario(cc="tita", workload=INCAST)
    watched, _ = simulate_program(s, period_s=0.1)
    alone, _ = simulate_program(s)
    assert json.dumps(watched.records(), sort_keys=True) == json.dumps(alone.records(), sort_keys=True)
    assert watched.now_ns == alone.now_ns


def test_every_data_cell_is_accounted_for():
    net, info = run(scenario(workload=INCAST, cc="none"))
    cells = info["data_cells"]
    assert cells["lost"]["switch_queue_drops"] == info["switch_data_drops"] > 0
    assert cells["sent"] == sum(h.ep.tx_types[wire.DATA] for h in net.hosts.values())
    assert cells["received"] > 0 and cells["unaccounted"] == 0
    assert cells["sent"] == cells["received"] + cells["lost_total"] + cells["in_flight_at_end"]


def test_data_lost_on_a_cut_cable_is_accounted_for(tmp_path):
    from testbed.simulation.run import simulate_program as simulate_with_faults

    text = FABRIC.format(program="p4src/fabric.p4", lb="spray_rr_entropy", cc="none", workload=PERMUTATION, ecn="")
    s = parse_scenario(text + "faults:\n  - {at_s: 0.003, kind: link_flap, target: leaf1-spine1, period_s: 0.004, "
                       "count: 2}\n", "cut.yaml")
    net, info = simulate_with_faults(s, run_dir=tmp_path)
    cells = info["data_cells"]
    assert info["finished"] and cells["lost"]["cut_links"] > 0
    assert cells["unaccounted"] == 0


def test_a_program_the_native_back_end_refuses_runs_on_the_python_target(tmp_path, capsys):
    """An unused header with a field too wide for the native back end: the program network runs
    every switch's program on the Python target in the engine's slots, every message arrives, and
    `testbed sim` says so in one line and in result.json."""
    from testbed.cli import main

    program = _edited_program(tmp_path, "struct headers_t {", "header wide_t { bit<130> data; bit<6> pad; }\n"
                              "struct headers_t {\n    wide_t wide;", "headers.p4")
    (tmp_path / "wide.yaml").write_text(FABRIC.format(program=program, lb="spray_rr_entropy", cc="tita",
                                                      workload=PERMUTATION, ecn=""))
    assert main(["sim", str(tmp_path / "wide.yaml"), "--runs-dir", str(tmp_path / "runs")]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "Python target" in line]
    assert len(lines) == 1 and "wider than 128 bits" in lines[0]
    (result_path,) = (tmp_path / "runs").rglob("result.json")
    result = json.loads(result_path.read_text())
    assert result["finished"] and "wider than 128 bits" in result["native_refused"]


def test_the_python_target_in_the_engine_gives_the_native_programs_records(monkeypatch):
    """fabric.p4 forced onto the Python target in every switch slot (python_slot.py): the same
    records, counters and marks as its native build, message by message (step marking and tita's
    credit meters included; RED's draws differ, as each target's random() has its own generator)."""
    from testbed.p4model.backend.native import NativeUnsupported
    from testbed.p4model.backend.native import binding

    step = ", ecn: {mode: step, k_cells: 4}"
    native, native_info = run(scenario(cc="dcqcn", workload=INCAST, ecn=step))

    def refuse(self, *args, **kwargs):
        raise NativeUnsupported(None, "forced by the test")

    monkeypatch.setattr(binding.NativePipeline, "__init__", refuse)
    python, python_info = run(scenario(cc="dcqcn", workload=INCAST, ecn=step))
    assert python.fabric.native_refused and not native.fabric.native_refused
    assert json.dumps(python.records(), sort_keys=True) == json.dumps(native.records(), sort_keys=True)
    assert _ce_cells(python) == _ce_cells(native) > 0
    for key in ("cell_hops", "switch_queue_drops", "max_queue_cells", "program_drops", "data_cells"):
        assert python_info[key] == native_info[key], key
    tita, _ = run(scenario(cc="tita"))
    monkeypatch.undo()
    tita_native, _ = run(scenario(cc="tita"))
    assert json.dumps(tita.records(), sort_keys=True) == json.dumps(tita_native.records(), sort_keys=True)


def test_building_program_networks_leaves_no_descriptor_open():
    """A process that builds many networks (tune's candidates, diagnose's twins) keeps none of
    their switches' event-loop descriptors: the engine moves the packets."""
    import os

    def open_descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    build_program_network(scenario())  # the caches a first build fills (the program, the engine)
    before = open_descriptors()
    for _ in range(3):
        net, _ = run(scenario(cc="tita"))
        assert net.finished()
    assert open_descriptors() == before
