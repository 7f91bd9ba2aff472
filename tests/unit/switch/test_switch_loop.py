"""The event loop's packet path and call queue, with fake ports and pipelines."""

import logging
import struct
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from testbed.p4model.runtime import hashing
from testbed.p4model.clock import ManualClock
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


def process_pipeline(table):
    """Process-only pipeline: byte 0 selects the port (0 = drop, 0xEE = raise)."""
    def process(port, data):
        if data[0] == 0xEE:
            raise ValueError("broken packet")
        out = table.get(data[0])
        return [] if out is None else [(out, data)]
    return SimpleNamespace(process=process, cpu_port=None)


class SplitPipeline:
    """ingress/egress pipeline that records the queue metadata egress saw."""

    def __init__(self):
        self.seen = []
        self.cpu_port = None

    def ingress(self, port, data, now_us=None):
        return [SimpleNamespace(port=data[0], priority=data[1], length=len(data), data=data)]

    def egress(self, job, departure):
        self.seen.append((job.data, departure.enq_qdepth, departure.deq_timedelta_us))
        return [(job.port, job.data)], []  # (packets, jobs), like v1model's EgressResult


def make(pipeline, ports=(1, 2), **kw):
    clock = ManualClock()
    switch = Switch({n: FakePort(n) for n in ports}, clock=clock, **kw)
    switch.install(SimpleNamespace(pipeline=pipeline))
    return switch, clock


def test_forwarding_through_the_tm():
    switch, clock = make(process_pipeline({1: 2, 2: 1}))
    switch.receive(1, b"\x01abc", 0)
    switch.service(0)
    assert switch.ports[2].sent == [b"\x01abc"]


def test_rate_shaping_and_link_delay_hold_packets_until_due():
    switch, clock = make(process_pipeline({1: 2}))
    switch.tm_commands.apply_all(["set_queue_rate 1000 2", "set_port_delay_us 500 2"])
    for _ in range(3):
        switch.receive(1, b"\x01x", 0)
    switch.service(0)
    assert switch.ports[2].sent == []            # the first one is still on the 500 us link
    switch.service(500_000)
    assert len(switch.ports[2].sent) == 1
    switch.service(1_499_999)
    assert len(switch.ports[2].sent) == 1        # 1 ms spacing at 1000 pps
    switch.service(1_500_000)
    assert len(switch.ports[2].sent) == 2
    assert switch._timeout(1_500_000) > 0


def test_egress_sees_queue_metadata():
    pipeline = SplitPipeline()
    switch, clock = make(pipeline)
    switch.tm_commands.apply_all(["set_queue_rate 1000 2"])
    for i in range(4):
        switch.receive(1, bytes([2, 0, i]), 0)
    for t in range(0, 4_000_000, 1_000_000):
        switch.service(t)
    assert [depth for _, depth, _ in pipeline.seen] == [0, 1, 2, 3]
    assert [delta for _, _, delta in pipeline.seen] == [0, 1000, 2000, 3000]


def test_strict_priority_with_two_queues():
    pipeline = SplitPipeline()
    switch, clock = make(pipeline, priority_queues=2)
    switch.tm_commands.apply_all(["set_port_rate_bps 8000 2"])  # 1 byte/ms
    switch.receive(1, bytes([2, 0, 0]), 0)   # goes on the wire at once
    switch.service(0)
    switch.receive(1, bytes([2, 0, 1]), 1)   # low priority waits behind it
    switch.receive(1, bytes([2, 1, 2]), 2)   # high priority overtakes the waiting one
    for t in range(0, 20_000_000, 1_000_000):
        switch.service(t)
    assert [data[2] for data in switch.ports[2].sent] == [0, 2, 1]


def test_tail_drops_are_counted():
    switch, clock = make(process_pipeline({1: 2}))
    switch.tm_commands.apply_all(["set_queue_rate 1 2", "set_queue_depth 4 2"])
    for _ in range(10):
        switch.receive(1, b"\x01", 0)
    assert switch.stats["tm_drops"] == 6
    assert switch.tm.queue_stats(2)[0]["dropped_full"] == 6


def test_cpu_port_packets_go_to_the_server_and_errors_are_contained():
    got = []
    switch, clock = make(process_pipeline({1: 64}), cpu_port=64)
    switch.server = SimpleNamespace(packet_in=got.append, after_packets=lambda now: None,
                                    next_deadline_ns=lambda: None)
    switch.receive(1, b"\x01ping", 0)
    switch.receive(1, b"\xeebad", 0)
    switch.receive(1, b"\x07unrouted", 0)
    switch.service(0)
    assert got == [b"\x01ping"]
    assert switch.stats["pipeline_errors"] == 1 and switch.stats["ingress_drops"] == 1


def test_drop_port_and_ports_without_interfaces():
    switch, clock = make(process_pipeline({1: 500, 2: 9}), drop_port=500)
    switch.receive(1, b"\x01", 0)
    switch.receive(1, b"\x02", 0)
    switch.service(0)
    assert switch.stats["drop_port"] == 1 and switch.stats["no_interface"] == 1


def test_calls_from_other_threads_run_in_the_loop_and_stop_ends_it():
    switch, clock = make(process_pipeline({}), ports=())
    loop = threading.Thread(target=switch.run)
    loop.start()
    try:
        for _ in range(100):
            if switch._loop_thread is not None:
                break
            time.sleep(0.01)
        assert switch.call(lambda: threading.get_ident()) == switch._loop_thread
        try:
            switch.call(lambda: 1 / 0)
        except ZeroDivisionError:
            pass
        else:
            raise AssertionError("the call's exception must reach the caller")
    finally:
        switch.stop()
        loop.join(5)
    assert not loop.is_alive()
    switch.close()


class BatchingPort(FakePort):
    """A port whose send() only queues (like a TX ring) until flush()."""

    def __init__(self, number):
        super().__init__(number)
        self.queued = []

    def send(self, data):
        self.queued.append(data)
        return True

    def flush(self):
        self.sent += self.queued
        self.queued = []


def test_every_service_pass_flushes_batching_ports():
    clock = ManualClock()
    switch = Switch({n: BatchingPort(n) for n in (1, 2)}, clock=clock)
    switch.install(SimpleNamespace(pipeline=process_pipeline({1: 2, 2: 1})))
    switch.receive(1, b"\x01abc", 0)
    switch.receive(2, b"\x02xyz", 0)
    switch.service(0)
    assert switch.ports[2].sent == [b"\x01abc"] and switch.ports[1].sent == [b"\x02xyz"]
    assert not switch.ports[1].queued and not switch.ports[2].queued


def test_batch_on_an_idle_link_is_sent_during_the_batch_in_order():
    pipeline = SplitPipeline()
    switch, clock = make(pipeline)
    clock.advance_ns(1_000)
    switch.receive_frames(1, [bytes([2, 0, i]) for i in range(5)])
    # no service pass yet: each copy departed at once (TM fast path) and was sent
    assert [data[2] for data in switch.ports[2].sent] == [0, 1, 2, 3, 4]
    assert [depth for _, depth, _ in pipeline.seen] == [0] * 5
    assert switch.stats["tx"] == 5 and not switch.tm.has_work()


def test_batch_on_a_shaped_link_queues_behind_the_first_in_order():
    pipeline = SplitPipeline()
    switch, clock = make(pipeline)
    switch.tm_commands.apply_all(["set_queue_rate 1000 2"])
    clock.advance_ns(1_000)
    switch.receive_frames(1, [bytes([2, 0, i]) for i in range(4)])
    assert [data[2] for data in switch.ports[2].sent] == [0]     # only the first went at once
    for t in range(1_000, 4_000_001, 500_000):
        clock.advance_ns(t - clock.now_ns())
        switch.service(t)
    assert [data[2] for data in switch.ports[2].sent] == [0, 1, 2, 3]
    assert [depth for _, depth, _ in pipeline.seen] == [0, 0, 1, 2]   # queued behind each other
    assert [delta for _, _, delta in pipeline.seen] == [0, 1000, 2000, 3000]


def test_batch_frame_waits_behind_frames_held_on_the_link():
    switch, clock = make(process_pipeline({1: 2}))
    switch.tm_commands.apply_all(["set_port_delay_us 500 2"])
    clock.advance_ns(1_000)
    switch.receive_frames(1, [b"\x01a", b"\x01b"])
    assert switch.ports[2].sent == []                    # both on the 500 us link
    clock.advance_ns(500_000)
    switch.service(clock.now_ns())
    assert switch.ports[2].sent == [b"\x01a", b"\x01b"]


def ipv4_frame(dst: int) -> bytes:
    """Ethernet (dst 00:..:01) + IPv4 from 10.0.0.1 to `dst`, TTL 64, 26-byte payload."""
    ip = struct.pack("!BBHHHBBHII", 0x45, 0, 46, 1, 0, 64, 17, 0, 0x0A000001, dst)
    ip = ip[:10] + hashing.csum16(ip).to_bytes(2, "big") + ip[12:]
    return bytes.fromhex("000000000001" "000000000002" "0800") + ip + bytes(26)


def test_batch_p4_error_is_dropped_counted_and_logged_once_with_its_location(caplog):
    """A packet whose P4 program raises on the batch path (a real basic_ipv4
    pipeline, an LPM entry with a non-int action argument) is dropped,
    counted once in the switch's pipeline_errors and once in the pipeline's
    errors/dropped, and logged once at WARNING with its P4 source location
    for two such packets; a good packet after them is still forwarded."""
    from testbed.p4model.pipeline import load
    from testbed.p4model.runtime.tables import ActionCall, TableEntry

    caplog.set_level(logging.WARNING, logger="testbed.p4model.switch")  # not debug: the batch path
    pipeline = load(Path(__file__).resolve().parents[2] / "p4programs" / "basic_ipv4.p4", clock=ManualClock())
    table = next(name for name in pipeline.tables if name.endswith("ipv4_lpm"))
    nhop = next(a for a in pipeline.tables[table].action_names if a.endswith("set_nhop"))
    pipeline.tables[table].insert(TableEntry(match=((0x0A000100, 24),),
                                             action=ActionCall(nhop, (0x020000000102, 2))))
    pipeline.tables[table]._matcher.add(TableEntry(match=((0x0B000000, 8),),   # dstAddr "x": egress raises
                                                   action=ActionCall(nhop, ("x", 2))))
    switch, clock = make(pipeline)
    assert not switch._debug
    clock.advance_ns(1_000)
    switch.receive_frames(1, [ipv4_frame(0x0B000001), ipv4_frame(0x0B000002), ipv4_frame(0x0A000105)])
    (sent,) = switch.ports[2].sent
    assert sent[:12] == bytes.fromhex("020000000102" "000000000001") and sent[22] == 63   # MACs, TTL
    assert switch.ports[1].sent == []
    assert switch.stats["pipeline_errors"] == 2 and switch.stats["tx"] == 1
    assert (pipeline.stats["errors"], pipeline.stats["dropped"], pipeline.stats["transmitted"]) == (2, 2, 1)
    reported = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(reported) == 1 and reported[0].levelno == logging.WARNING
    assert "basic_ipv4.p4:" in reported[0].getMessage()
