"""The NIC's timed send queue (testbed.host.nicqueue): release order and times, batched receive,
and the native engine against the pure-Python one."""

import socket
import time

import pytest

from testbed.host import nic_native
from testbed.cells.flowports import FlowSocket
from testbed.host.nicqueue import RECORD, SO_TIMESTAMPNS, BatchReceiver, NativeNic, NativePacer, PythonNic, open_nic


def native_or_skip():
    try:
        nic_native.load()
    except nic_native.NativeUnavailable as e:
        pytest.skip(f"native NIC unavailable: {e}")


def listener(addr):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind((addr, 0))
    return sock


def drain(sock, n, timeout_s=2.0):
    sock.settimeout(timeout_s)
    got = []
    for _ in range(n):
        data, anc, _flags, _src = sock.recvmsg(4096, 64)
        tos = next((v[0] for level, kind, v in anc if level == socket.IPPROTO_IP and kind == socket.IP_TOS), 0)
        got.append((data, tos))
    return got


class FakeFlow:
    """A FlowSocket stand-in that records what it is asked to send."""

    def __init__(self, log, name):
        self.log, self.name = log, name

    def send(self, data, to, tos):
        self.log.append((self.name, data, to, tos))


def test_python_nic_releases_in_time_order_on_a_fake_clock():
    clock = [0.0]
    nic = PythonNic(lambda: clock[0])
    log = []
    a, b = FakeFlow(log, "a"), FakeFlow(log, "b")
    nic.submit(0.003, a, "10.0.0.2", 4793, b"third", 2)
    nic.submit(0.001, b, "10.0.0.3", 4793, b"first", 0)
    nic.submit(0.003, b, "10.0.0.3", 4793, b"fourth", 0)  # same time: in the order handed over
    nic.submit(0.002, a, "10.0.0.2", 4793, b"second", 2)
    assert nic.next_due() == 0.001
    clock[0] = 0.0005
    assert nic.release(clock[0]) == 0 and log == []
    clock[0] = 0.0021
    assert nic.release(clock[0]) == 2
    assert [x[1] for x in log] == [b"first", b"second"] and nic.next_due() == 0.003
    clock[0] = 0.0035
    assert nic.release(clock[0]) == 2
    assert [x[1] for x in log] == [b"first", b"second", b"third", b"fourth"]
    assert log[2] == ("a", b"third", ("10.0.0.2", 4793), 2)
    late = nic.lateness_us()
    assert late == pytest.approx([1100.0, 100.0, 500.0, 500.0])
    assert nic.next_due() is None and nic.sent == 4 and nic.close() == 0


def test_python_nic_counts_refused_datagrams_as_errors():
    class Refusing:
        def send(self, data, to, tos):
            raise OSError("buffer full")

    nic = PythonNic(lambda: 1.0)
    nic.submit(0.5, Refusing(), "10.0.0.2", 4793, b"x", 0)
    nic.submit(2.0, Refusing(), "10.0.0.2", 4793, b"y", 0)
    assert nic.release(1.0) == 0 and nic.errors == 1 and nic.sent == 0
    assert nic.close() == 1  # the one not yet due is dropped


def test_python_nic_sends_on_loopback_with_tos():
    rx = listener("127.0.0.41")
    flow = FlowSocket.on_port("127.0.0.42", 0)
    nic = PythonNic(time.time)
    now = time.time()
    nic.submit(now, flow, "127.0.0.41", rx.getsockname()[1], b"ect", 2)
    nic.submit(now, flow, "127.0.0.41", rx.getsockname()[1], b"plain", 0)
    assert nic.release(time.time()) == 2
    assert drain(rx, 2) == [(b"ect", 2), (b"plain", 0)]


def test_native_nic_paces_in_release_order_and_on_time():
    native_or_skip()
    rx = listener("127.0.0.43")
    port = rx.getsockname()[1]
    flows = [FlowSocket.on_port("127.0.0.44", 0), FlowSocket.on_port("127.0.0.45", 0)]
    epoch = time.time()
    nic = NativeNic(epoch)
    nic.start()
    t0 = time.time() - epoch + 0.05
    # handed over out of order, two sockets, equal times kept in hand-over order
    plan = [(t0 + 0.030, 1, b"d"), (t0 + 0.010, 0, b"b"), (t0, 1, b"a"), (t0 + 0.030, 0, b"e"),
            (t0 + 0.020, 0, b"c")]
    for due, f, data in plan:
        nic.submit(due, flows[f], "127.0.0.43", port, data, 2 if f else 0)
    got = drain(rx, 5)
    assert [d for d, _ in got] == [b"a", b"b", b"c", b"d", b"e"]
    assert dict(got) == {b"a": 2, b"b": 0, b"c": 0, b"d": 2, b"e": 0}
    assert sent_counts([nic], (5,)) == (5,)   # counted (with its lateness) after the receiver has it
    late = nic.lateness_us()
    assert len(late) == 5 and all(v >= 0 for v in late)
    assert sorted(late)[2] < 5000  # the median leaves within 5 ms of its time on a busy machine
    assert nic.close() == 0 and nic.sent == 5 and nic.errors == 0


def test_native_nic_staged_datagrams_leave_only_after_the_flush_in_release_order():
    """stage collects, flush hands the batch over in one call: the same order and TOS as submit."""
    native_or_skip()
    rx = listener("127.0.0.51")
    port = rx.getsockname()[1]
    flows = [FlowSocket.on_port("127.0.0.52", 0), FlowSocket.on_port("127.0.0.53", 0)]
    epoch = time.time()
    nic = NativeNic(epoch)
    nic.start()
    now = time.time() - epoch
    plan = [(now + 0.020, 1, b"c"), (now - 0.001, 0, b"a"), (now + 0.020, 0, b"d"), (now + 0.010, 1, b"b")]
    for due, f, data in plan:
        nic.stage(due, flows[f], "127.0.0.51", port, data, 2 if f else 0)
    time.sleep(0.02)
    assert nic.queued() == 0 and nic.sent == 0  # staged, not handed over: even the one already due waits
    nic.flush()
    got = drain(rx, 4)
    assert got == [(b"a", 0), (b"b", 2), (b"c", 2), (b"d", 0)]
    assert nic.close() == 0 and nic.sent == 4 and nic.errors == 0


def test_native_nic_counts_a_batch_record_cut_short_as_lost():
    native_or_skip()
    nic = NativeNic(time.time())
    nic.start()
    header = RECORD.pack(int((time.time() + 60) * 1e9), 0, 0, 0, 0, 10, 0)
    assert nic.lib.nic_submit_many(nic._h, header + b"short", len(header) + 5) == 1
    assert nic.lib.nic_submit_many(nic._h, header + bytes(10) + b"xy", len(header) + 12) == 1
    assert nic.queued() == 1  # the whole record before the trailing piece is queued
    assert nic.close() == 1


def test_native_nic_drops_what_is_queued_at_close():
    native_or_skip()
    rx = listener("127.0.0.46")
    flow = FlowSocket.on_port("127.0.0.47", 0)
    epoch = time.time()
    nic = NativeNic(epoch)
    nic.start()
    nic.submit(time.time() - epoch + 60, flow, "127.0.0.46", rx.getsockname()[1], b"later", 0)
    assert nic.queued() == 1
    assert nic.close() == 1 and nic.sent == 0


def test_batch_receiver_reads_tos_and_kernel_times():
    native_or_skip()
    rx = listener("127.0.0.48")
    rx.setblocking(False)
    tx = FlowSocket.on_port("127.0.0.49", 0)
    epoch = time.time() - 100.0
    before = time.time() - epoch
    for i in range(70):  # more than one recvmmsg batch
        tx.send(bytes([i]) * (10 + i), ("127.0.0.48", rx.getsockname()[1]), 2 if i % 2 else 0)
    after = time.time() - epoch
    reader = BatchReceiver(rx, epoch)
    got = reader.read() + reader.read()
    assert len(got) == 70 and reader.read() == []
    for i, (data, src, tos, arrived) in enumerate(got):
        assert data == bytes([i]) * (10 + i) and src == "127.0.0.49" and tos == (2 if i % 2 else 0)
        assert before <= arrived <= after + 0.001


def test_native_and_python_engines_release_the_same_sequence():
    native_or_skip()
    plan = [(0.004, b"4"), (0.001, b"1"), (0.003, b"3a"), (0.002, b"2"), (0.003, b"3b")]
    results = {}
    for engine in ("python", "native"):
        rx = listener("127.0.0.50")
        flow = FlowSocket.on_port("127.0.0.51", 0)
        epoch = time.time() + 0.02
        nic, why = open_nic(lambda: time.time() - epoch, epoch, native=engine == "native")
        assert nic.engine == engine and (why is None) == (engine == "native")
        nic.start()
        for due, data in plan:
            nic.submit(due, flow, "127.0.0.50", rx.getsockname()[1], data, 0)
        deadline = time.time() + 2
        while nic.sent < len(plan) and time.time() < deadline:
            time.sleep(0.0005)
            nic.release(time.time() - epoch)
        results[engine] = [d for d, _ in drain(rx, len(plan))]
        nic.close()
        rx.close()
        flow.sock.close()
    assert results["native"] == results["python"] == [b"1", b"2", b"3a", b"3b", b"4"]


def test_asking_for_the_python_nic_or_lacking_a_compiler_falls_back(monkeypatch):
    nic, why = open_nic(lambda: 0.0, 0.0, native=False)
    assert nic.engine == "python" and "asked" in why
    monkeypatch.delenv("TESTBED_NIC", raising=False)
    monkeypatch.setattr(nic_native, "_lib", None)
    monkeypatch.setattr(nic_native, "_why_not", None)
    monkeypatch.setattr(nic_native, "compiler", lambda: None)
    monkeypatch.setenv("TESTBED_CACHE_DIR", "/nonexistent-testbed-cache")
    nic, why = open_nic(lambda: 0.0, 0.0)
    assert nic.engine == "python" and "no C compiler" in why


@pytest.mark.parametrize("engine", ["python", "native"])
def test_agents_through_either_nic_keep_the_link_model(tmp_path, engine):
    """Two agents with a 3 ms host link each way: every cell leaves through the NIC's timed queue
    at its wire start + serialisation + delay, so no round trip is shorter than the model's and
    the queue's lateness is what the stats report."""
    import json
    import threading

    from testbed.host import workloads
    from testbed.host.agent import Agent
    from testbed.host.config import TransportConfig

    if engine == "native":
        native_or_skip()
    hosts = {"h1": "127.0.0.52", "h2": "127.0.0.53"}
    wl = [workloads.MessageSpec("h1", "h2", 0, 60_000), workloads.MessageSpec("h2", "h1", 0, 20_000)]
    cfg = TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16)
    delay = 0.003
    agents = [Agent(n, a, hosts, wl, cfg, tmp_path, seed=5, port=4894, grace_s=0.2, timeout_s=20,
                    link_delay_s=delay, native_nic=engine == "native") for n, a in hosts.items()]
    results = {}
    threads = [threading.Thread(target=lambda a=a: results.__setitem__(a.name, a.run())) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert {n: r.reason for n, r in results.items()} == {"h1": "done", "h2": "done"}
    stats = {n: json.loads((tmp_path / f"{n}.stats.json").read_text()) for n in hosts}
    data_s = cfg.data_wire_bytes * 8 / cfg.link_rate_bps
    for n in hosts:
        assert stats[n]["nic_queue"]["engine"] == engine
        assert stats[n]["pacer_lateness"]["samples"] == stats[n]["tx_datagrams"] > 0
        assert stats[n]["socket_errors"] == 0 and stats[n]["nic_queue"]["dropped_at_stop"] == 0
    # a DATA cell's trip (serialisation + delay) and its ACK's (at least the delay)
    assert stats["h1"]["rtt_min_ms"] >= (data_s + 2 * delay) * 1e3


def test_agent_reads_a_short_batch_once_and_a_full_one_again(tmp_path):
    """A recvmmsg batch short of RECV_BATCH drained the socket: no further (empty) read follows it;
    a full batch may have left more, so the agent reads again."""
    from testbed.host import workloads
    from testbed.host.agent import Agent
    from testbed.host.config import TransportConfig
    from testbed.host.nicqueue import RECV_BATCH

    hosts = {"h1": "127.0.0.21", "h2": "127.0.0.22"}
    agent = Agent("h1", hosts["h1"], hosts, [workloads.MessageSpec("h2", "h1", 0, 1000)],
                  TransportConfig(cc="none", link_rate_bps=20e6, bdp_cells=16), tmp_path, seed=1, port=4911)

    class Batches:
        def __init__(self, sizes):
            self.sizes, self.reads = list(sizes), 0

        def read(self):
            self.reads += 1
            return [(b"", "127.0.0.99", 0, None)] * self.sizes.pop(0) if self.sizes else []

    try:
        agent.receiver = Batches([3, 5])
        assert agent._receive_batched() == 3 and agent.receiver.reads == 1
        agent.receiver = Batches([RECV_BATCH, 2])
        assert agent._receive_batched() == RECV_BATCH + 2 and agent.receiver.reads == 2
        assert agent.unknown_peer == RECV_BATCH + 5  # 127.0.0.99 is no peer: counted, not handed on
    finally:
        agent.sock.close()


def sent_counts(nics, expected: tuple, timeout_s: float = 1.0) -> tuple:
    """Each lane's sent count once it reaches `expected` (or after `timeout_s`): the pacing thread
    counts a datagram after its sendmmsg returns, which can be after the receiver already has it."""
    deadline = time.monotonic() + timeout_s
    while (counts := tuple(nic.sent for nic in nics)) != expected and time.monotonic() < deadline:
        time.sleep(0.001)
    return counts


def shared_pacer(receiver: str, first: str, second: str, lanes: int):
    """A listener on `receiver`, two flow sockets (on `first` and `second`) and a pacer of `lanes`
    lanes with a NativeNic per lane (skips without the native NIC)."""
    native_or_skip()
    rx = listener(receiver)
    flows = [FlowSocket.on_port(first, 0), FlowSocket.on_port(second, 0)]
    epoch = time.time()
    pacer = NativePacer(lanes=lanes)
    return rx, rx.getsockname()[1], flows, epoch, pacer, [NativeNic(epoch, pacer, lane) for lane in range(lanes)]


def test_hosts_sharing_one_pacing_thread_keep_their_counts_lateness_and_queue_apart():
    """A group's members share one thread, a lane each: one thread sends every lane's datagrams in
    release order, each lane counts and times its own, and one lane's close drops only its own."""
    rx, port, flows, epoch, pacer, nics = shared_pacer("127.0.0.61", "127.0.0.62", "127.0.0.63", lanes=3)
    for nic in nics:
        nic.start()  # the first starts the thread, the others find it running
    now = time.time() - epoch
    nics[1].stage(now + 0.020, flows[1], "127.0.0.61", port, b"c", 2)
    nics[0].stage(now + 0.010, flows[0], "127.0.0.61", port, b"b", 0)
    nics[1].submit(now + 0.005, flows[1], "127.0.0.61", port, b"a", 2)  # submit on a lane above 0
    nics[0].flush()
    nics[1].flush()
    nics[2].stage(now + 60, flows[0], "127.0.0.61", port, b"never", 0)
    nics[2].flush()
    nics[0].submit(now + 60, flows[0], "127.0.0.61", port, b"dropped", 0)
    assert drain(rx, 3) == [(b"a", 2), (b"b", 0), (b"c", 2)]
    assert sent_counts(nics, (1, 2, 0)) == (1, 2, 0)
    assert len(nics[0].lateness_us()) == 1 and len(nics[1].lateness_us()) == 2 and nics[2].lateness_us() == []
    assert (nics[0].queued(), nics[2].queued()) == (1, 1)
    assert nics[2].close() == 1 and nics[0].queued() == 1  # lane 2's close leaves lane 0's queue
    assert nics[0].close() == 1 and nics[1].close() == 0
    assert nics[1].sent == 2 and nics[1].errors == 0
    header = RECORD.pack(int((time.time() + 60) * 1e9), 0, 0, 0, 0, 1, 3)  # lane 3 of three: lost
    assert pacer.lib.nic_submit_many(pacer.h, header + b"x", len(header) + 1) == 1
    assert pacer.stop() == 0


def test_lanes_of_a_pacer_stage_into_one_buffer_that_one_flush_hands_over():
    """A group's members stage into their pacer's buffer; nothing is queued until one flush (the
    pacer's, or any lane's) hands every lane's datagrams over, in release order, each counted in
    its own lane."""
    rx, port, flows, epoch, pacer, nics = shared_pacer("127.0.0.64", "127.0.0.65", "127.0.0.66", lanes=2)
    pacer.start()
    now = time.time() - epoch
    nics[0].stage(now + 0.010, flows[0], "127.0.0.64", port, b"b", 0)
    nics[1].stage(now - 0.001, flows[1], "127.0.0.64", port, b"a", 2)
    time.sleep(0.015)
    assert nics[0].queued() == nics[1].queued() == 0 and nics[0].sent == nics[1].sent == 0
    pacer.flush()
    assert not pacer.staged
    assert drain(rx, 2) == [(b"a", 2), (b"b", 0)]
    nics[1].stage(now, flows[1], "127.0.0.64", port, b"c", 0)
    nics[0].flush()  # a lane's flush hands over the other lanes' staged datagrams too
    assert drain(rx, 1) == [(b"c", 0)]
    assert sent_counts(nics, (1, 2)) == (1, 2) and nics[0].errors == nics[1].errors == 0
    assert nics[0].close() == 0 and nics[1].close() == 0
    assert pacer.stop() == 0
