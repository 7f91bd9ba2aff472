"""PFC in the simulator: per-ingress pause at XOFF/XON, per priority, one shared buffer."""

from testbed.simulation import simexp

from testbed.cells import wire
from testbed.simulation.sim import SimPacket


def test_pfc_makes_an_uncontrolled_incast_lossless():
    lossy = simexp.incast("none", 7, 64 * 1024)
    lossless = simexp.incast("none", 7, 64 * 1024, pfc=(8, 4))
    assert lossy["data_drops"] > 100 and lossy["pause_frames"] == 0
    assert lossless["data_drops"] == 0 and lossless["pause_frames"] > 0
    assert lossless["delivered_verified"] == lossless["messages"]


def test_tita_never_triggers_pfc():
    r = simexp.incast("tita", 7, 64 * 1024, pfc=(8, 4))
    assert r["pause_frames"] == 0 and r["data_drops"] == 0


def test_a_paused_port_holds_data_but_sends_cnps():
    cfg = simexp.config("dcqcn")
    net = simexp.network(cfg, 2, pfc=(8, 4))
    port = next(p for p in net.ports if p.name == "leaf1->h1")
    got = []
    net.hosts["h1"].receive = lambda pkt: got.append(pkt.header()[0])
    port.pause(True)
    data = wire.encode(wire.CellPacket(type=wire.DATA, flow_id=1, body=bytes(cfg.cell_size)))
    port.enqueue(SimPacket("h2", "h1", data, True), wire.DATA)
    port.enqueue(SimPacket("h2", "h1", wire.encode(wire.CellPacket(type=wire.CNP, flow_id=1)), False), wire.CNP)
    net.sim.run(0.1)
    assert got == [wire.CNP] and port.stats.pauses_received == 1
    held = net.sim.now  # the CNP's arrival: the DATA cell has waited since time 0
    port.pause(False)
    net.sim.run(0.2)
    assert got == [wire.CNP, wire.DATA] and port.stats.paused_s == held > 0


def test_xoff_pauses_the_ingress_link_and_xon_resumes_it():
    cfg = simexp.config("none")
    net = simexp.network(cfg, 4, pfc=(3, 1))
    leaf1 = net.switches["leaf1"]
    into = next(p for p in net.ports if p.name == "h2->leaf1")  # h2's uplink, the ingress link
    out = next(p for p in net.ports if p.name == "leaf1->h1")
    net.hosts["h1"].receive = lambda pkt: None
    data = wire.encode(wire.CellPacket(type=wire.DATA, flow_id=1, body=bytes(cfg.cell_size)))
    for _ in range(4):
        leaf1.receive(SimPacket("h2", "h1", data, True), into)
    assert net.pause_frames == 1  # XOFF at the third cell held from h2's link
    net.sim.run(simexp.DELAY_S + 1e-6)
    assert into.paused
    net.sim.run(1.0)
    assert not into.paused and net.pause_frames == 2 and out.stats.tx_packets == 4 and net.drops() == 0
