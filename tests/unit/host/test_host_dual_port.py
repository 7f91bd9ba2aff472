"""Dual-port NICs: which port a cell takes, what a dead port changes, each port's wire,
the NIC's rate following its live ports, and the carrier events that drive it."""

from __future__ import annotations

import os
import select
import struct
import subprocess
import time
import uuid

import pytest

from testbed.host import carrier

from testbed.cells import wire
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint
from testbed.host.nic import NicPorts


def cell(entropy: int) -> bytes:
    return wire.encode(wire.CellPacket(type=wire.DATA, entropy=entropy, flow_id=7, msg_id=1, psn=0,
                                       aux=16, body=bytes(16)))


def entropy_of(data: bytes) -> int:
    return wire.decode(data, 16).entropy


def test_entropy_choice_follows_the_nic_digit_and_rewrites_it_off_a_dead_port():
    nic = NicPorts(["h1-eth0", "h1-eth1"], 1e6, "entropy")
    assert [nic.choose(cell(e), 50000)[0] for e in range(6)] == [0, 1, 0, 1, 0, 1]
    assert nic.set_carrier("h1-eth0", False, 1.0) and not nic.set_carrier("h1-eth0", False, 1.1)
    for e in range(8):
        port, data = nic.choose(cell(e), 50000)
        assert port == 1
        assert entropy_of(data) == e - (e % 2) + 1  # the nic digit names the port it left by
        assert data[4:] == cell(e)[4:]  # nothing else changed
    assert nic.ports[1].rerouted == 4 and nic.changes == [(1.0, "h1-eth0", False, "carrier")]


def test_flow_choice_keeps_a_flow_on_one_port_and_moves_it_whole():
    nic = NicPorts(["a", "b"], 1e6, "flow")
    assert {nic.choose(cell(e), 50001)[0] for e in range(8)} == {1}
    assert {nic.choose(cell(e), 50002)[0] for e in range(8)} == {0}
    nic.set_carrier("b", False, 0.0)
    port, data = nic.choose(cell(3), 50001)
    assert port == 0 and data == cell(3)  # flow mode leaves the entropy alone
    nic.set_carrier("a", False, 0.0)
    assert nic.choose(cell(3), 50001)[0] == 1  # all ports down: its own, lost on the wire


def test_each_port_is_its_own_wire():
    nic = NicPorts(["a", "b"], 8e6, "flow")  # 1 byte per microsecond
    assert nic.on_wire(0, 0.0, 1000, 0.01) == pytest.approx(0.001 + 0.01)
    assert nic.on_wire(0, 0.0, 1000, 0.01) == pytest.approx(0.002 + 0.01)  # queued behind the first
    assert nic.on_wire(1, 0.0, 1000, 0.01) == pytest.approx(0.001 + 0.01)  # the other port is free
    assert nic.on_wire(0, 0.5, 1000, 0.0) == pytest.approx(0.501)  # idle since: no saved-up burst
    assert nic.stats()["a"]["tx"] == 3


def test_nic_rate_is_its_live_ports_and_the_endpoint_follows_it():
    nic = NicPorts(["a", "b"], 5e6)
    assert nic.rate_bps() == 10e6
    nic.set_carrier("a", False, 0.0)
    assert nic.rate_bps() == 5e6
    nic.set_carrier("b", False, 0.0)
    assert nic.rate_bps() == 5e6  # a dead NIC paces as if one port came back

    for cc in ("none", "dcqcn", "tita"):
        cfg = TransportConfig(cc=cc, link_rate_bps=10e6, bdp_cells=8, cell_size=1024, reorder_window_cells=4096)
        ep = Endpoint("10.1.0.1", cfg)
        ep.send_message(0.0, "10.2.0.1", 1, bytes(4 << 20))  # more than a second's worth, all in the window
        ep.set_link_rate(5e6)
        assert ep.nic.rate_bps == 5e6 and ep.cfg.link_rate_bps == 5e6
        flow = ep.senders["10.2.0.1"]
        if cc == "none":
            assert flow.cc.rate_bps == 5e6
        if cc == "dcqcn":
            assert flow.cc.rate_bps == 5e6 and flow.cc.line == 5e6
        if cc == "tita":
            assert ep.rcc.max_rate == pytest.approx(5e6 / 8 / cfg.data_wire_bytes)
        # what the NIC releases in one second of model time, at the new rate
        sent, now = 0, 0.0
        while now < 1.0:
            sent += sum(len(tx.data) + wire.FRAME_OVERHEAD for tx in ep.poll(now))
            now += 1e-4
        if cc != "tita":  # tita senders wait for credits that no receiver sends here
            assert 0.9 * 5e6 / 8 <= sent <= 1.02 * 5e6 / 8 + 2 * cfg.data_wire_bytes


def test_link_messages_parse_and_garbage_is_ignored():
    name = b"h1-eth0\0"
    attr = struct.pack("=HH", 4 + len(name), carrier.IFLA_IFNAME) + name
    body = carrier.IFINFOMSG.pack(0, 1, 5, carrier.IFF_UP | carrier.IFF_RUNNING, 0) + attr
    message = carrier.NLMSG_HEADER.pack(16 + len(body), carrier.RTM_NEWLINK, 0, 0, 0) + body
    down = carrier.NLMSG_HEADER.pack(16 + len(body), carrier.RTM_NEWLINK, 0, 0, 0) + \
        carrier.IFINFOMSG.pack(0, 1, 5, carrier.IFF_UP, 0) + attr
    assert carrier.parse_link_messages(message + down) == [("h1-eth0", True), ("h1-eth0", False)]
    assert carrier.parse_link_messages(b"") == []
    assert carrier.parse_link_messages(b"\xff" * 40) == []  # a length past the end: stop, no raise
    assert carrier.parse_link_messages(message[:30]) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a veth pair")
def test_carrier_events_arrive_when_the_far_end_goes_down():
    a, b = f"tb{uuid.uuid4().hex[:6]}a", f"tb{uuid.uuid4().hex[:6]}b"
    events = carrier.LinkEvents()
    try:
        subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
        subprocess.run(["ip", "link", "set", a, "up"], check=True)
        subprocess.run(["ip", "link", "set", b, "up"], check=True)
        # the kernel raises a veth's carrier from its link-watch work, after `ip link set up` returns
        deadline = time.monotonic() + 5.0
        while not carrier.usable(carrier.link_flags(a)) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert carrier.usable(carrier.link_flags(a))
        events.read()
        subprocess.run(["ip", "link", "set", b, "down"], check=True)
        seen = []
        while (a, False) not in seen:
            assert select.select([events], [], [], 2.0)[0], f"no link event for {a}"
            seen += events.read()
        assert not carrier.usable(carrier.link_flags(a))
    finally:
        events.close()
        subprocess.run(["ip", "link", "del", a], capture_output=True)
    assert carrier.link_flags(a) is None


def test_a_port_that_sends_and_hears_nothing_goes_silent_and_is_tried_again():
    nic = NicPorts(["a", "b"], 1e6, "entropy", silence_s=0.1)
    assert nic.retry_s == pytest.approx(0.4)
    for t in (0.0, 0.05):
        nic.on_wire(0, t, 100, 0.0)
        nic.on_wire(1, t, 100, 0.0)
    nic.heard(1, 0.06)
    assert not nic.check_silence(0.09)  # not yet silent for silence_s
    assert nic.check_silence(0.11) and not nic.ports[0].up and nic.ports[1].up
    assert nic.rate_bps() == 1e6 and nic.changes[-1] == (0.11, "a", False, "silence")
    assert nic.choose(cell(0), 1)[0] == 1
    nic.on_wire(1, 0.2, 100, 0.0)  # b keeps sending, and keeps hearing back
    nic.heard(1, 0.25)
    assert not nic.check_silence(0.3)
    assert nic.check_silence(0.52) and nic.ports[0].up  # retried after retry_s
    assert nic.changes[-1] == (0.52, "a", True, "retry")
    nic.heard(0, 0.53)
    nic.on_wire(0, 0.6, 100, 0.0)
    assert not nic.check_silence(0.65)  # sending again, heard recently


def test_silence_is_not_judged_where_answers_may_come_back_by_another_port():
    flow = NicPorts(["a", "b"], 1e6, "flow", silence_s=0.1)
    flow.on_wire(0, 0.0, 100, 0.0)
    assert not flow.check_silence(5.0) and flow.ports[0].up
    single = NicPorts(["a"], 1e6, "entropy", silence_s=0.1)
    single.on_wire(0, 0.0, 100, 0.0)
    assert not single.check_silence(5.0)
    both = NicPorts(["a", "b"], 1e6, "entropy", silence_s=0.1)  # the last live port never goes silent
    both.set_carrier("b", False, 0.0)
    both.on_wire(0, 0.0, 100, 0.0)
    assert not both.check_silence(5.0) and both.ports[0].up


def test_only_cells_that_are_answered_start_the_silence_clock():
    nic = NicPorts(["a", "b"], 1e6, "entropy", silence_s=0.1)
    nic.on_wire(0, 0.0, 100, 0.0, cell_type=wire.ACK)  # an ACK is never answered
    nic.sent(0, 0.0, wire.CREDIT_STOP)
    assert not nic.check_silence(1.0) and nic.ports[0].up
    nic.sent(0, 1.0, wire.CREDIT)
    assert nic.check_silence(1.2) and not nic.ports[0].up
