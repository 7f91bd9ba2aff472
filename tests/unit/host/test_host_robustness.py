"""Bad input never crashes the transport and never corrupts a delivered message."""

import random

import pytest

from conftest import make_cfg, star_link
from hypothesis import HealthCheck, given, settings, strategies as st

from testbed.cells import segment, wire

from testbed.host import workloads
from testbed.host.endpoint import Endpoint
from testbed.simulation.sim import star

CELL = 1024


def data_cell(flow_id, msg_id, psn, framed, index, last, **kw):
    return wire.encode(wire.CellPacket(
        type=wire.DATA, flow_id=flow_id, msg_id=msg_id, psn=psn, aux=len(framed),
        flags=wire.FLAG_LAST if last else 0, body=segment.cell_body(framed, index, CELL), **kw))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(st.binary(max_size=1100) | st.builds(
    lambda t, rest, body: bytes([0x10 | t]) + rest + body,
    st.integers(0, 6), st.binary(min_size=23, max_size=23),
    st.sampled_from([b"", bytes(8), bytes(CELL), bytes(5)])), max_size=30))
def test_random_datagrams_never_crash_or_deliver(datagrams):
    ep = Endpoint("h1", make_cfg("tita"))
    t = 0.0
    for d in datagrams:
        t += 1e-4
        ep.receive(t, "h2", d, tos=3)
        ep.poll(t)
        ep.next_deadline()
    assert ep.delivered == []  # nothing without a valid CRC trailer reaches the application
    # Every datagram is accounted for: rejected as malformed or decoded (and then judged).
    decoded = sum(v for k, v in ep.counters.items() if k.startswith("rx_"))
    assert ep.errors["malformed"] + decoded == len(datagrams)


@pytest.mark.parametrize("expecting", [False, True])
def test_duplicate_stale_reordered_and_forged_cells_around_a_real_message(expecting):
    """The same verdicts whether or not the application says what each message must carry (then
    compared cell by cell as it is reassembled, Endpoint.expect)."""
    ep = Endpoint("h1", make_cfg("none"))
    payload = random.Random(1).randbytes(5000)
    if expecting:
        carries = {0: payload, 1: random.Random(2).randbytes(3000), 2: b"ok" * 600, 3: b"nexT"}
        ep.expect = lambda src, msg_id: carries.get(msg_id) if src == "h2" else None
    framed = segment.frame(payload)
    n = segment.cell_count(len(framed), CELL)
    cells = [data_cell(7, 0, i, framed, i, i == n - 1) for i in range(n)]
    feed = [cells[3], cells[1], cells[1], cells[0], cells[0], cells[4], cells[2], cells[2]]
    for t, c in enumerate(feed):
        ep.receive(t * 1e-4, "h2", c)
    (d,) = ep.delivered
    assert d.payload == payload and d.reorder.cells_out_of_order == 3 and d.reorder.duplicates >= 1
    assert d.matches_expected is (True if expecting else None)
    flow = ep.receivers[("h2", 7)]
    assert flow.buf.stats.stale >= 2  # psn 0 and 2 re-sent after delivery
    # A forged cell that wins the race for a psn corrupts the bytes: the message is dropped.
    forged_payload = random.Random(2).randbytes(3000)
    framed2 = segment.frame(forged_payload)
    m = segment.cell_count(len(framed2), CELL)
    good = [data_cell(7, 1, n + i, framed2, i, i == m - 1) for i in range(m)]
    bad = bytearray(good[1])
    bad[-1] ^= 0xFF
    for c in (good[0], bytes(bad), good[1], good[2]):
        ep.receive(1.0, "h2", c)
    assert len(ep.delivered) == 1 and flow.corrupt == 1
    # Inconsistent message length inside one message is corruption too, then the flow resyncs.
    framed3 = segment.frame(b"ok" * 600)
    k = segment.cell_count(len(framed3), CELL)
    base = n + m
    ep.receive(2.0, "h2", data_cell(7, 2, base, framed3, 0, False))
    ep.receive(2.0, "h2", wire.encode(wire.CellPacket(
        type=wire.DATA, flow_id=7, msg_id=2, psn=base + 1, aux=len(framed3) + 1, flags=wire.FLAG_LAST,
        body=segment.cell_body(framed3, 1, CELL))))
    assert flow.corrupt == 2 and k == 2
    framed4 = segment.frame(b"next")
    ep.receive(3.0, "h2", data_cell(7, 3, base + 2, framed4, 0, True))
    assert ep.delivered[-1].payload == b"next" and ep.delivered[-1].msg_id == 3
    assert ep.delivered[-1].matches_expected is (False if expecting else None)  # it expected "nexT"


def test_unexpected_control_cells_are_counted_not_acted_on():
    ep = Endpoint("h1", make_cfg("dcqcn"))
    ep.send_message(0.0, "h2", 0, b"x" * 3000)
    flow = ep.senders["h2"]
    ep.poll(0.0)
    sent = flow.window.next_psn
    ack_far = wire.encode(wire.CellPacket(type=wire.ACK, flow_id=flow.flow_id, psn=sent + 50,
                                          body=bytes(8)))
    ep.receive(0.1, "h2", ack_far)  # acks cells never sent
    ep.receive(0.1, "h3", wire.encode(wire.CellPacket(type=wire.ACK, flow_id=flow.flow_id,
                                                      psn=1, body=bytes(8))))  # wrong peer
    ep.receive(0.1, "h2", wire.encode(wire.CellPacket(type=wire.CREDIT, flow_id=flow.flow_id)))
    ep.receive(0.1, "h2", wire.encode(wire.CellPacket(type=wire.CREDIT_REQUEST, flow_id=9, aux=1 << 30)))
    ep.receive(0.1, "h2", wire.encode(wire.CellPacket(type=wire.NACK, flow_id=flow.flow_id, psn=10**6)))
    assert flow.window.bogus_acks == 1 and flow.window.base == 0 and not ep.acked
    assert ep.errors["unknown_flow"] == 1 and ep.errors["unexpected_credit"] == 1
    assert ep.errors["unexpected_credit_control"] == 1 and flow.window.nacks == 0


def test_peer_that_disappears_does_not_wedge_the_others():
    cfg = make_cfg("tita")
    net = star(4, cfg, star_link(cfg))
    wl = workloads.incast(["h1", "h2", "h3"], "h4", 32 * 1024)
    wl.append(workloads.MessageSpec("h1", "h3", 0, 8 * 1024))
    net.load(wl)
    net.hosts["h3"].receive = lambda pkt: None  # h3 vanishes: everything sent to it is lost
    net.run(0.5)
    got = {(r["src"], r["dst"]) for r in net.records() if r["kind"] == "message_delivered"}
    assert {("h1", "h4"), ("h2", "h4")} <= got and ("h1", "h3") not in got
    h1 = net.hosts["h1"].ep
    assert h1.senders["h3"].unfinished == 1 and h1.senders["h4"].unfinished == 0
    assert h1.stats()["corrupt_messages"] == 0
