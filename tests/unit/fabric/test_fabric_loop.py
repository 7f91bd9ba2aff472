"""The fabric loop: switches of one process linked in memory, with fake ports and a manual clock."""

from types import SimpleNamespace

from testbed.p4model.clock import ManualClock
from testbed.p4model.fabric.loop import FabricLoop
from testbed.p4model.switch.loop import Switch


class FakePort:
    def __init__(self, number):
        self.number, self.iface, self.fd = number, f"fake{number}", None
        self.sent = []

    def send(self, data):
        self.sent.append(data)
        return True

    def close(self):
        pass


class Recording:
    """Split pipeline: byte 0 is the egress port; records each ingress (port, now_us) and
    each egress's queue metadata."""

    def __init__(self):
        self.ingress_at, self.cpu_port = [], None

    def ingress(self, port, data, now_us=None):
        self.ingress_at.append((port, now_us, data))
        return [SimpleNamespace(port=data[0], priority=0, length=len(data), data=data)]

    def egress(self, job, departure):
        return [(job.port, job.data)], []

    def egress_now(self, job, now_us):
        return job.data


def fabric(delay_us=500, rate_bps=0):
    """A (fake port 1, memory port 2) -- (memory port 1) B (fake port 2)."""
    clock = ManualClock()
    a = Switch({1: FakePort(1)}, clock=clock, memory_ports={2: "a-eth2"})
    b = Switch({2: FakePort(2)}, clock=clock, memory_ports={1: "b-eth1"})
    for switch in (a, b):
        switch.install(SimpleNamespace(pipeline=Recording()))
    a.tm_commands.apply_all([f"set_port_delay_us {delay_us} 2"] + ([f"set_port_rate_bps {rate_bps} 2"] if rate_bps else []))
    loop = FabricLoop({"a": a, "b": b}, clock)
    loop.connect("a", 2, "b", 1)
    return loop, a, b, clock


def test_a_frame_crosses_the_link_in_memory_at_its_transmit_time():
    loop, a, b, clock = fabric(delay_us=500)
    a.receive_frames(1, [b"\x02" + b"x" * 99], 1_000_000)
    loop.touched.add(a)
    loop.service_touched(1_000_000)
    loop.deliver_due(1_499_999)
    assert b.datapath.pipeline.ingress_at == []              # still on the 500 us link
    assert loop.next_wait_s(1_000_000) == 0.0005
    loop.deliver_due(1_500_000)
    assert [(p, t) for p, t, _ in b.datapath.pipeline.ingress_at] == [(1, 1_500)]
    loop.service_touched(1_500_000)
    assert b.ports[2].sent == [b"\x02" + b"x" * 99]          # and out of B's real port
    assert a.stats["tx"] == 1 and b.stats["rx"] == 1 and loop.stats["in_memory"] == 1


def test_a_late_loop_does_not_shift_the_arrival_and_records_the_lag():
    loop, a, b, clock = fabric(delay_us=500, rate_bps=8_000_000)   # 100 B = 100 us on the wire
    a.receive_frames(1, [b"\x02" + b"x" * 99], 0)
    loop.touched.add(a)
    loop.service_touched(0)
    loop.deliver_due(2_000_000)                              # the loop woke 1.4 ms late
    assert [t for _, t, _ in b.datapath.pipeline.ingress_at] == [600]   # 100 us + 500 us, exactly
    assert a.schedule.transmit_lag.count == 1
    assert a.schedule.transmit_lag.max_ns == 1_400_000


def test_frames_keep_their_order_and_spacing_on_a_shaped_link():
    loop, a, b, clock = fabric(delay_us=0, rate_bps=8_000_000)
    a.receive_frames(1, [b"\x02" + bytes([i]) * 99 for i in range(4)], 0)   # a burst of 4
    loop.touched.add(a)
    t = 0
    while t <= 1_000_000:                                    # the loop's own timers drive A
        loop.deliver_due(t)
        loop.service_touched(t)
        t += 50_000
    seen = b.datapath.pipeline.ingress_at
    assert [data[1] for _, _, data in seen] == [0, 1, 2, 3]
    assert [at for _, at, _ in seen] == [100, 200, 300, 400]   # one 100 us slot each
    assert len(b.ports[2].sent) == 4


def test_both_directions_of_a_cable_are_wired():
    loop, a, b, clock = fabric(delay_us=0)
    b.receive_frames(2, [b"\x01back"], 10_000)
    loop.touched.add(b)
    loop.service_touched(10_000)
    loop.deliver_due(10_000)
    loop.service_touched(10_000)
    assert [(p, t) for p, t, _ in a.datapath.pipeline.ingress_at] == [(2, 10)]
    assert a.ports[1].sent == [b"\x01back"]


def test_a_stale_timer_does_not_hide_the_next_one():
    loop, a, b, clock = fabric(delay_us=0, rate_bps=8_000_000)
    a.receive_frames(1, [b"\x02" + b"y" * 99] * 2, 0)
    loop.touched.add(a)
    loop.service_touched(0)
    armed = loop._armed[a]
    loop.deliver_due(armed)
    loop.service_touched(armed)
    assert loop._heap, "the second frame's departure must be armed"
