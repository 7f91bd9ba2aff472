"""The switch survives what the network and controllers throw at it.

Fuzz: 1,000,000 random frames (lengths 0..9000, a quarter of them with the
IPv4 EtherType so the parser goes deeper) are written as fast as a raw
socket can into port 1.  Frames shorter than 14 bytes cannot be sent
through AF_PACKET (the kernel refuses a frame without a full Ethernet
header, or pads it as root), so those sends are counted and the run
goes on; most frames are dropped by the kernel's socket buffer when the
switch is slower than the sender, which is fine: the point is that
whatever arrives is processed without a crash or a leak.  Afterwards the
switch must still forward pings and its RSS must not have grown.
"""

import sys
import time
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

sys.path.insert(0, str(Path(__file__).parent))
from switch_net import PROGRAMS, SwitchNet, install_host_routes  # noqa: E402

from testbed.p4model.tm.control import SwitchControlClient, SwitchControlError  # noqa: E402

pytestmark = pytest.mark.integration

FUZZER = r"""
import os, random, socket, sys, time
iface, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
pool = os.urandom(1 << 22)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((iface, 0))
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
sent = failed = short = 0
mv = memoryview(pool)
start = time.monotonic()
for i in range(count):
    n = rng.randint(0, 9000)
    off = rng.randint(0, len(pool) - n)
    frame = mv[off:off + n]
    if n >= 14 and i % 4 == 0:
        frame = bytes(frame[:12]) + b"\x08\x00" + bytes(frame[14:])
    if n < 14:
        short += 1
    try:
        s.send(frame)
        sent += 1
    except OSError:
        failed += 1
print(sent, failed, short, round(time.monotonic() - start, 1), flush=True)
"""


def routes(net):
    import p4runtime_sh.shell as sh

    sh.setup(device_id=1, grpc_addr=net.grpc_addr, election_id=(0, 1), verbose=False)
    try:
        install_host_routes(sh, net.hosts)
    finally:
        sh.teardown()


def pings(net):
    return net.exec(1, "ping", "-c", "3", "-i", "0.2", "-W", "1", "10.0.2.1", check=False).returncode == 0


def switch_state(net) -> str:
    """What the switch says of itself when it stopped forwarding: its TM's counters, the queues of
    the two host ports and its log's last lines (a failure names its cause, not just its symptom)."""
    try:
        with SwitchControlClient("127.0.0.1", net.control_port, timeout_s=5.0) as c:
            state = f"tm {c.tm_stats()}; port 1 {c.queue_stats(1)}; port 2 {c.queue_stats(2)}"
    except (OSError, SwitchControlError) as error:
        state = f"no answer on the control port ({error})"
    log = net.log_path.read_text(errors="replace").splitlines()[-5:]
    return f"{state}; log: {log}"


@pytest.fixture(params=["python", "native"])
def net(tmp_path, request):
    """The Python packet path (switch_l3_cpu.p4) and the native engine (basic_ipv4.p4, which the
    native back end lowers)."""
    from testbed.p4model.backend.native import compiler

    if request.param == "native" and compiler() is None:
        pytest.skip("no C compiler: no native engine")
    program = "switch_l3_cpu.p4" if request.param == "python" else "basic_ipv4.p4"
    net = SwitchNet(hosts=2, tag=f"r{__import__('os').getpid() % 1000}")
    try:
        net.start_switch(tmp_path, extra=["--backend", request.param], program=PROGRAMS / program)
        routes(net)
        yield net
    finally:
        net.close()


def test_a_million_random_frames(net):
    assert pings(net)
    rss_before = net.rss_kb()
    out = net.exec(1, sys.executable, "-c", FUZZER, net.host_if(1), "1000000", timeout=240).stdout.split()
    sent, failed, short = int(out[0]), int(out[1]), int(out[2])
    assert sent + failed == 1_000_000 and sent > 900_000, out
    assert net.switch_alive()
    # The flood may leave a backlog in the switch's receive ring: forwarding must come
    # back once it has drained (polled on a deadline, not slept for).
    deadline = time.monotonic() + 15
    while not pings(net):
        assert time.monotonic() < deadline, f"the switch stopped forwarding after the fuzz: {switch_state(net)}"
    rss_after = net.rss_kb()
    assert rss_after - rss_before < 30_000, (rss_before, rss_after)  # KiB: no leak
    assert net.stop_switch() == 0


def test_malformed_p4runtime_requests_get_errors_and_forwarding_continues(net):
    channel = grpc.insecure_channel(net.grpc_addr)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    raw_write = channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
    with pytest.raises(grpc.RpcError):
        raw_write(b"\xff\xff\xff garbage that is not a protobuf")
    with pytest.raises(grpc.RpcError) as excinfo:  # no arbitration: not primary
        stub.Write(p4runtime_pb2.WriteRequest(device_id=1, updates=[p4runtime_pb2.Update()]))
    assert excinfo.value.code() == grpc.StatusCode.PERMISSION_DENIED
    bad = p4runtime_pb2.ReadRequest(device_id=1)
    bad.entities.add().table_entry.table_id = 0x7FFFFFFF
    with pytest.raises(grpc.RpcError) as excinfo:
        list(stub.Read(bad))
    assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as excinfo:
        stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=99))
    assert excinfo.value.code() == grpc.StatusCode.NOT_FOUND
    channel.close()
    assert net.switch_alive() and pings(net)
