"""fabric.p4 behaviour that STF files cannot express, on the builtin target
through the Pipeline API: counter and register values, ECN marking at a
driven queue depth (in STF files the depth is only what a burst leaves,
0 to 3 here, and may differ on bmv2), RED's
probability in its ramp, the spread of random spraying, the credit
meter's refill with a driven clock, and the credit priority.

Switches are configured with the same STF control lines the STF files use
(through the STF builder and the ControlPlane), and packets come from
p4src/tests/stfgen.py, so expectations share one source."""

from __future__ import annotations

import importlib.util
from collections import Counter

from scapy.layers.inet import IP, UDP
from scapy.packet import Raw, raw

from testbed.p4model.clock import ManualClock
from testbed.p4model.control_plane import ControlPlane
from testbed.p4model.p4info import generate
from testbed.p4model.pipeline import load
from testbed.p4model.stf import build
from testbed.p4model.stf.parser import parse_text
from testbed.p4model.v1model import QueueMeta

from .conftest import P4SRC, STF_DIR

_spec = importlib.util.spec_from_file_location("stfgen", STF_DIR / "stfgen.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

ING, EGR = gen.ING, gen.EGR
_CACHE: dict = {}


class Switch:
    """A fabric.p4 pipeline on a manual clock, configured by STF lines."""

    def __init__(self, seed: int = 1):
        self.clock = ManualClock()
        self.pipeline = load(str(P4SRC / "fabric.p4"), clock=self.clock, seed=seed)
        if "p4info" not in _CACHE:
            _CACHE["p4info"] = generate(self.pipeline.program)
        p4info = _CACHE["p4info"]
        self.builder = build.Builder(ControlPlane(self.pipeline, p4info), p4info)

    def configure(self, stf: "gen.Stf") -> "Switch":
        for cmd in parse_text("\n".join(stf.lines)):
            getattr(self.builder, cmd.kind)(cmd)
        return self

    def send(self, port: int, pkt) -> list:
        self.clock.advance_ns(1_000)
        return self.pipeline.process(port, pkt if isinstance(pkt, bytes) else raw(pkt))

    def send_at_depth(self, port: int, pkt, qdepth: int) -> list:
        """Ingress, then egress as if `qdepth` packets were queued ahead."""
        out = []
        data = pkt if isinstance(pkt, bytes) else raw(pkt)
        for job in self.pipeline.ingress(port, data):
            packets, _jobs = self.pipeline.egress(job, QueueMeta(enq_qdepth=qdepth))
            out += packets
        return out

    def counter(self, name: str, index: int) -> tuple:
        c = self.pipeline.counters[name]
        return c.packets[index], c.bytes[index]

    def register(self, name: str, index: int) -> int:
        return self.pipeline.registers[name].values[index]


def _setup(groups: dict, routes: dict, extra=()) -> "gen.Stf":
    """groups: id -> (ports, mode); routes: '10.0.x.0' -> group (/24)."""
    stf = gen.Stf("pytest", "fabric.p4", "pytest set-up")
    gen.setup_ports(stf)
    for group, (ports, mode) in groups.items():
        gen.add_group(stf, group, ports, mode)
    for prefix, group in routes.items():
        gen.add_route(stf, prefix, 24, group)
    for line in extra:
        stf.line(line)
    return stf


def _udp(dst: str, tos: int = 0, ttl: int = 64, sport: int = 1000):
    return gen.host_packet(dst, in_port=1, ttl=ttl, tos=tos) / UDP(sport=sport, dport=2000) / Raw(b"p")


# -- telemetry counters -------------------------------------------------------


def test_port_counters_and_drop_reasons():
    sw = Switch().configure(_setup({1: ([2], 0)}, {"10.0.1.0": 1}, [
        f"setdefault {ING}cell_config {ING}set_cell_size(data_udp_length:{gen.CELL_UDP_LENGTH})"]))
    ok = _udp("10.0.1.5")
    for _ in range(3):
        assert len(sw.send(1, ok)) == 1
    sw.send(1, _udp("10.0.7.1"))                      # no route
    sw.send(1, _udp("10.0.1.5", ttl=1))               # TTL
    sw.send(1, gen.cell("10.0.1.5", gen.DATA, 3))     # bad cell length
    sw.send(1, gen.cell("10.0.1.5", gen.DATA, 3))
    arp = bytes.fromhex("ffffffffffff020000000201" + "0806") + bytes(28)
    sw.pipeline.process(1, arp)                       # not IPv4
    length = len(raw(ok))
    assert sw.counter(f"{ING}rx_port", 1) == (8, 3 * length + len(raw(_udp("10.0.7.1")))
                                              + len(raw(_udp("10.0.1.5", ttl=1)))
                                              + 2 * len(raw(gen.cell("10.0.1.5", gen.DATA, 3)))
                                              + len(arp))
    assert sw.counter(f"{EGR}tx_port", 2) == (3, 3 * length)
    drops = {i: sw.counter(f"{ING}drops", i)[0] for i in range(8)}
    assert drops == {0: 0, 1: 1, 2: 1, 3: 2, 4: 0, 5: 1, 6: 0, 7: 0}


def test_egress_drop_for_unconfigured_port_is_counted():
    stf = gen.Stf("pytest", "fabric.p4", "")
    gen.add_group(stf, 1, [3], 0)
    gen.add_route(stf, "10.0.1.0", 24, 1)
    sw = Switch().configure(stf)                      # no port_macs entries
    assert sw.send(1, _udp("10.0.1.5")) == []
    assert sw.counter(f"{EGR}drops", 7)[0] == 1
    assert sw.counter(f"{EGR}tx_port", 3)[0] == 0


# -- queue depth: max_qdepth and ECN ------------------------------------------


def test_max_qdepth_register_keeps_the_peak_until_reset():
    sw = Switch().configure(_setup({1: ([2], 0)}, {"10.0.1.0": 1}))
    for depth in (3, 17, 5):
        sw.send_at_depth(1, _udp("10.0.1.5"), depth)
    assert sw.register(f"{EGR}max_qdepth", 2) == 17
    sw.pipeline.registers[f"{EGR}max_qdepth"].cp_write(2, 0)   # what the collector does
    sw.send_at_depth(1, _udp("10.0.1.5"), 4)
    assert sw.register(f"{EGR}max_qdepth", 2) == 4


def _ecn_out(packets) -> int:
    assert len(packets) == 1
    from scapy.layers.l2 import Ether

    return Ether(packets[0][1])[IP].tos & 3


def test_step_marking_threshold_and_mark_counter():
    sw = Switch().configure(_setup({1: ([2], 0)}, {"10.0.1.0": 1}, [
        f"add {EGR}ecn_config standard_metadata.egress_port:2 {EGR}mark_step(k:10)"]))
    ect0 = _udp("10.0.1.5", tos=2)
    assert _ecn_out(sw.send_at_depth(1, ect0, 9)) == 2
    assert _ecn_out(sw.send_at_depth(1, ect0, 10)) == 3
    assert _ecn_out(sw.send_at_depth(1, _udp("10.0.1.5", tos=1), 50)) == 3
    assert _ecn_out(sw.send_at_depth(1, _udp("10.0.1.5", tos=0), 50)) == 0    # Not-ECT
    assert _ecn_out(sw.send_at_depth(1, _udp("10.0.1.5", tos=3), 50)) == 3    # CE stays
    assert sw.counter(f"{EGR}ecn_marks", 2)[0] == 2


def _red_fraction(pmax: int, qdepth: int, n: int = 4000) -> float:
    sw = Switch(seed=7).configure(_setup({1: ([2], 0)}, {"10.0.1.0": 1}, [
        f"add {EGR}ecn_config standard_metadata.egress_port:2 "
        f"{EGR}mark_red(kmin:10, kmax:30, pmax:{pmax})"]))
    ect0 = raw(_udp("10.0.1.5", tos=2))
    marks = sum(_ecn_out(sw.send_at_depth(1, ect0, qdepth)) == 3
                for _ in range(n))
    assert sw.counter(f"{EGR}ecn_marks", 2)[0] == marks
    return marks / n


def test_red_extremes_with_driven_queue_depth():
    assert _red_fraction(65535, 9, n=200) == 0.0        # below Kmin
    assert _red_fraction(65535, 10, n=200) == 0.0       # at Kmin: probability 0
    assert _red_fraction(0, 29, n=500) == 0.0           # Pmax 0 in the ramp
    assert _red_fraction(0, 30, n=200) == 1.0           # at Kmax: always
    assert _red_fraction(0, 500, n=200) == 1.0


def test_red_probability_in_the_ramp():
    # Pmax 0.5, halfway between Kmin and Kmax: p = 0.25.
    fraction = _red_fraction(32768, 20)
    assert abs(fraction - 0.25) < 0.03


# -- load balancing -----------------------------------------------------------


def test_random_spraying_uses_every_member_about_equally():
    sw = Switch(seed=3).configure(_setup({1: ([1, 2, 3, 4], 3)}, {"10.0.1.0": 1}))
    ports = Counter()
    n = 2000
    cells = [raw(gen.cell("10.0.1.5", gen.DATA, gen.CELL_SIZE, psn=psn)) for psn in range(50)]
    for i in range(n):
        out = sw.send(1, cells[i % len(cells)])
        assert len(out) == 1
        ports[out[0][0]] += 1
    assert set(ports) == {1, 2, 3, 4}
    assert all(abs(c / n - 0.25) < 0.05 for c in ports.values()), ports


def test_round_robin_register_and_stale_value():
    sw = Switch().configure(_setup({5: ([1, 2, 3], 1)}, {"10.0.1.0": 5}))
    cell = gen.cell("10.0.1.5", gen.CREDIT, 0)
    assert [sw.send(1, cell)[0][0] for _ in range(4)] == [1, 2, 3, 1]
    assert sw.register(f"{ING}rr_next", 5) == 1
    # A value left over from a larger group is treated as member 0.
    sw.pipeline.registers[f"{ING}rr_next"].cp_write(5, 200)
    assert [sw.send(1, cell)[0][0] for _ in range(2)] == [1, 2]


# -- credits -------------------------------------------------------------------


def test_credit_meter_refills_at_the_configured_rate():
    # 1000 credits/s (0.001 per microsecond), burst 2.
    sw = Switch().configure(_setup({1: ([2], 2)}, {"10.0.1.0": 1}, [
        f"meter_set_rates {ING}credit_meter 2 0.001:2 0.001:2"]))
    credit = raw(gen.cell("10.0.1.5", gen.CREDIT, 0))

    def burst(n):
        return sum(len(sw.send(1, credit)) for _ in range(n))   # 1 us apart

    assert burst(5) == 2                    # bucket of 2, then over rate
    sw.clock.advance_ns(1_000_000)          # 1 ms: one credit's worth
    assert burst(3) == 1
    sw.clock.advance_ns(10_000_000)         # 10 ms: refills only up to the burst
    assert burst(5) == 2
    assert sw.counter(f"{ING}drops", 4)[0] == 3 + 2 + 3


def test_credits_use_priority_one_and_data_priority_zero():
    sw = Switch().configure(_setup({1: ([2], 2)}, {"10.0.1.0": 1}))
    credit_jobs = sw.pipeline.ingress(1, raw(gen.cell("10.0.1.5", gen.CREDIT, 0)))
    data_jobs = sw.pipeline.ingress(1, raw(gen.cell("10.0.1.5", gen.DATA, gen.CELL_SIZE)))
    tcp_jobs = sw.pipeline.ingress(1, raw(_udp("10.0.1.5")))
    assert [(j.port, j.priority) for j in credit_jobs] == [(2, 1)]
    assert [(j.port, j.priority) for j in data_jobs + tcp_jobs] == [(2, 0), (2, 0)]


def test_cnps_use_priority_one_unmetered_and_acks_stay_with_data():
    # DCQCN: a CNP reports a congested data queue, so it must not wait in it (RoCE NICs
    # send CNPs at a high priority); it is not a credit, so the credit meter leaves it alone.
    cnp, ack = 5, gen.ACK
    sw = Switch().configure(_setup({1: ([2], 2)}, {"10.0.1.0": 1}, [
        f"meter_set_rates {ING}credit_meter 2 0.000001:1 0.000001:1"]))
    cnp_jobs = [j for _ in range(5) for j in sw.pipeline.ingress(1, raw(gen.cell("10.0.1.5", cnp, 0)))]
    ack_jobs = sw.pipeline.ingress(1, raw(gen.cell("10.0.1.5", ack, 8)))
    assert [(j.port, j.priority) for j in cnp_jobs] == [(2, 1)] * 5
    assert [(j.port, j.priority) for j in ack_jobs] == [(2, 0)]


def test_entropy_mode_is_symmetric_across_leaves():
    """Two leaves whose uplink groups list the same spines in the same order
    send a credit and the data cell echoing its entropy to the same spine."""
    spines = [2, 3, 4]
    leaf_r = Switch().configure(_setup({1: (spines, 2)}, {"10.0.1.0": 1}))
    leaf_s = Switch().configure(_setup({1: (spines, 2)}, {"10.0.2.0": 1}))
    chosen = set()
    for entropy in (0, 1, 2, 7, 0xFFFF):
        credit = gen.cell("10.0.1.5", gen.CREDIT, 0, entropy=entropy)
        data = gen.cell("10.0.2.5", gen.DATA, gen.CELL_SIZE, entropy=entropy)
        port = leaf_r.send(1, credit)[0][0]
        assert leaf_s.send(1, data)[0][0] == port
        chosen.add(port)
    assert chosen == set(spines)


# -- in-band telemetry -------------------------------------------------------


def test_int_hop_record_carries_the_queue_the_cell_met():
    """The record's queue depth and latency are the traffic manager's enq_qdepth and deq_timedelta
    (the STF files leave them '*': their queues decide them); a full stack only counts."""
    from scapy.layers.l2 import Ether

    from testbed.cells import wire

    sw = Switch().configure(_setup({1: ([2], 0)}, {"10.0.1.0": 1}, [
        f"setdefault {EGR}int_config {EGR}int_enable(switch_id:77, max_hops:2, sample_mask:0)"]))
    cell = gen.int_cell("10.0.1.5", 0, None)
    for job in sw.pipeline.ingress(1, raw(cell)):
        (out,), _ = sw.pipeline.egress(job, QueueMeta(enq_qdepth=13, deq_timedelta_us=4321))
    payload = bytes(Ether(out[1])[UDP].payload)
    got = wire.decode(payload, gen.CELL_SIZE)
    assert got.telemetry == wire.IntStack((wire.IntHop(77, 2, 13, 4321),), max_hops=2)
    assert Ether(out[1])[UDP].len == 8 + len(payload) and Ether(out[1])[UDP].chksum == 0
    full = gen.int_cell("10.0.1.5", 0, wire.IntStack((wire.IntHop(1, 1, 0, 0), wire.IntHop(2, 1, 0, 0)),
                                                     max_hops=2), udp_checksum=0)
    (out,) = sw.send_at_depth(1, full, 5)
    got = wire.decode(bytes(Ether(out[1])[UDP].payload), gen.CELL_SIZE)
    assert [h.switch_id for h in got.telemetry.hops] == [1, 2] and got.telemetry.overflow == 1


# -- tenants --------------------------------------------------------------------


def _tenant_switch(host_ports=(1, 2, 3), on: bool = True) -> Switch:
    stf = gen.Stf("pytest", "fabric.p4", "tenant set-up")
    gen.tenant_routing(stf)
    if on:
        gen.tenants_on(stf)
        gen.tenant_bindings(stf, host_ports)
    return Switch().configure(stf)


def test_tenant_drops_are_counted_by_reason_and_by_tenant():
    sw = _tenant_switch(host_ports=(1, 2))
    host = gen.TENANT_HOSTS
    assert len(sw.send(1, gen.tenant_packet("A", "B"))) == 1            # admitted, tenant 1
    assert len(sw.send(1, gen.tenant_packet("A", "D"))) == 1
    assert sw.send(3, gen.tenant_packet("C", "E")) == []                # port 3 unbound
    assert sw.send(1, gen.tenant_packet("A", "B", mac=gen.neighbour_mac(2))) == []   # spoofed MAC
    assert sw.send(1, gen.tenant_packet("A", "B", src_ip=host["B"][0])) == []        # spoofed IPv4
    assert sw.send(2, gen.tenant_packet("B", "E")) == []                # foreign, tenant 1's
    assert sw.send(4, gen.tenant_packet("E", "B", dscp=2)) == []        # foreign, carried tenant 2
    assert sw.send(4, gen.tenant_packet("D", "A", dscp=0)) == []        # no tenant carried
    assert len(sw.send(4, gen.tenant_packet("D", "A", dscp=1))) == 1    # from the fabric: not counted as admitted
    drops = {i: sw.counter(f"{ING}drops", i)[0] for i in range(16)}
    assert {i: n for i, n in drops.items() if n} == {8: 1, 9: 1, 10: 1, 11: 3}
    tenant_drops = {i: sw.counter(f"{ING}tenant_drops", i)[0] for i in range(64)}
    assert {i: n for i, n in tenant_drops.items() if n} == {0: 2, 1: 3, 2: 1}
    length = len(raw(gen.tenant_packet("A", "B")))
    assert sw.counter(f"{ING}tenant_packets", 1) == (2, 2 * length)
    assert sum(sw.counter(f"{ING}tenant_packets", i)[0] for i in range(64)) == 2


def test_tenants_off_forwards_every_source_and_counts_nothing():
    sw = _tenant_switch(on=False)
    out = sw.send(3, gen.tenant_packet("C", "B", mac="02:99:00:00:00:01", src_ip="10.9.9.9", dscp=7))
    assert len(out) == 1
    assert IP(out[0][1][14:]).tos == 7 << 2                             # DSCP untouched
    assert sum(sw.counter(f"{ING}drops", i)[0] for i in range(16)) == 0
    assert sum(sw.counter(f"{ING}tenant_drops", i)[0] + sw.counter(f"{ING}tenant_packets", i)[0]
               for i in range(64)) == 0


def test_tenant_queues_pick_each_tenants_data_queue_on_every_switch():
    """tenant_queues (fabric.tenant_isolation: queues): the carried tenant's data queue, credits
    still at 1; without an entry, data stays at priority 0."""
    sw = _tenant_switch()
    host = gen.TENANT_HOSTS
    credit = gen.cell(host["D"][0], gen.CREDIT, 0, src=host["A"][0], in_port=1, tos=0)
    before = [j.priority for p in (gen.tenant_packet("A", "D"), gen.tenant_packet("C", "E"))
              for j in sw.pipeline.ingress(host["A"][1] if p[IP].src == host["A"][0] else 3, raw(p))]
    assert before == [0, 0]
    stf = gen.Stf("pytest", "fabric.p4", "tenant queues")
    stf.line(f"add {ING}tenant_queues hdr.ipv4.dscp:1 {ING}set_tenant_queue(queue:0)")
    stf.line(f"add {ING}tenant_queues hdr.ipv4.dscp:2 {ING}set_tenant_queue(queue:2)")
    sw.configure(stf)
    jobs = [(j.port, j.priority) for port, p in ((1, gen.tenant_packet("A", "D")), (3, gen.tenant_packet("C", "E")),
                                                  (1, credit), (4, gen.tenant_packet("E", "C", dscp=2)))
            for j in sw.pipeline.ingress(port, raw(p))]
    assert jobs == [(4, 0), (4, 2), (4, 1), (3, 2)]   # from the fabric port too: DSCP carries the tenant


def test_tenant_meter_caps_a_tenants_bytes_and_counts_what_it_drops():
    sw = _tenant_switch()
    big = Raw(bytes(200))
    length = len(raw(gen.tenant_packet("A", "D") / big))
    # tenant 1: 1 MB/s (1 byte per microsecond), a bucket of two packets
    stf = gen.Stf("pytest", "fabric.p4", "tenant meter")
    stf.line(f"meter_set_rates {ING}tenant_meter 1 1:{2 * length} 1:{2 * length}")
    sw.configure(stf)
    sent = [len(sw.send(1 if i % 2 else 2, gen.tenant_packet("A" if i % 2 else "B", "D") / big)) for i in range(5)]
    assert sent == [1, 1, 0, 0, 0]                   # 1 us apart: the bucket, then over rate
    sw.clock.advance_ns(length * 1_000)             # one packet's worth of time
    assert len(sw.send(1, gen.tenant_packet("A", "D") / big)) == 1
    assert len(sw.send(3, gen.tenant_packet("C", "E") / big)) == 1   # tenant 2: no meter set
    assert sw.counter(f"{ING}drops", 13)[0] == 3   # not DATA cells (reason 12 is theirs)
    cells = [len(sw.send(1, gen.cell(gen.TENANT_HOSTS["D"][0], gen.DATA, gen.CELL_SIZE,
                                     src=gen.TENANT_HOSTS["A"][0], in_port=1))) for _ in range(3)]
    assert cells == [0, 0, 0] and sw.counter(f"{ING}drops", 12)[0] == 3
    assert sw.counter(f"{ING}tenant_drops", 1)[0] == 6 and sw.counter(f"{ING}tenant_drops", 2)[0] == 0
