"""Real traffic through the builtin switch between network namespaces: queue
build-up seen by the program (ECN marking at enq_qdepth >= 10), strict
priority, link delay in ping RTTs, tail drops, and survival of a
controller that goes away."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from switch_net import PROGRAMS, SwitchNet, install_host_routes  # noqa: E402

from testbed.p4model.tm.control import SwitchControlClient  # noqa: E402

pytestmark = pytest.mark.integration

RECEIVER = r"""
import json, select, socket, sys, time
port, count, wait = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
s.bind((sys.argv[1], 0))
print("listening", flush=True)
got, end = [], time.monotonic() + wait
while len(got) < count and time.monotonic() < end:
    r, _, _ = select.select([s], [], [], 0.2)
    if not r:
        continue
    data = s.recv(65536)
    if len(data) < 44 or data[23] != 17 or int.from_bytes(data[36:38], "big") != port:
        continue
    got.append((int.from_bytes(data[42:46], "big"), data[15]))
print(json.dumps(got), flush=True)
"""

SENDER = r"""
import socket, sys, json
dst, port, plan = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for seq, tos in plan:
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    s.sendto(seq.to_bytes(4, "big") + bytes(60), (dst, port))
"""


def send_and_receive(net, plan, port, wait=5.0):
    receiver = subprocess.Popen(["ip", "netns", "exec", net.ns(2), sys.executable, "-c", RECEIVER,
                                 net.host_if(2), str(port), str(len(plan)), str(wait)],
                                stdout=subprocess.PIPE, text=True)
    assert receiver.stdout.readline().strip() == "listening"
    net.exec(1, sys.executable, "-c", SENDER, "10.0.2.1", str(port), json.dumps(plan))
    out, _ = receiver.communicate(timeout=wait + 10)
    return [tuple(x) for x in json.loads(out)]


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    import p4runtime_sh.shell as sh

    tmp = tmp_path_factory.mktemp("switch")
    net = SwitchNet(hosts=2, tag=f"t{__import__('os').getpid() % 1000}")
    try:
        net.start_switch(tmp, program=PROGRAMS / "switch_l3_cpu.p4", target_extra=["--priority-queues", "2"])
        # a controller installs routes and priorities, then goes away without a goodbye
        sh.setup(device_id=1, grpc_addr=net.grpc_addr, election_id=(0, 1), verbose=False)
        install_host_routes(sh, net.hosts)
        te = sh.TableEntry("MyIngress.dscp_prio")(action="MyIngress.set_prio")
        te.match["hdr.ipv4.dscp"] = "46"
        te.action["prio"] = "1"
        te.insert()
        sh.client.stream_out_q.put(None)  # the stream closes: the controller is gone
        sh.client.channel.close()
        yield net
        assert net.stop_switch() == 0, "the switch must exit 0 on SIGTERM"
    finally:
        net.close()


def control(net):
    return SwitchControlClient("127.0.0.1", net.control_port)


def test_pings_flow_after_the_controller_left(net):
    result = net.exec(1, "ping", "-c", "3", "-i", "0.2", "-W", "1", "10.0.2.1", check=False)
    assert result.returncode == 0, result.stdout


def test_queue_builds_up_and_the_program_marks_ecn(net):
    with control(net) as c:
        c.set_queue_rate(200, 2)
    try:
        got = send_and_receive(net, [(i, 0x01) for i in range(30)], 9001)  # ECT(1)
    finally:
        with control(net) as c:
            c.set_queue_rate(0, 2)
    assert len(got) == 30
    ecn = {seq: tos & 3 for seq, tos in got}
    assert all(ecn[i] == 1 for i in range(10)), ecn      # behind < 10 packets: unmarked
    assert sum(ecn[i] == 3 for i in range(12, 30)) >= 15, ecn   # behind >= 10: CE


def test_strict_priority(net):
    with control(net) as c:
        c.set_queue_rate(100, 2)
    try:
        plan = [(i, 0) for i in range(20)] + [(100 + i, 46 << 2) for i in range(5)]
        got = send_and_receive(net, plan, 9002)
    finally:
        with control(net) as c:
            c.set_queue_rate(0, 2)
    order = [seq for seq, _ in got]
    assert len(order) == 25
    high = [order.index(100 + i) for i in range(5)]
    assert max(high) < 10, order  # the high-priority packets overtook most of the low ones


def test_link_delay_shows_in_ping_rtt(net):
    def rtt():
        out = net.exec(1, "ping", "-c", "5", "-i", "0.2", "-W", "2", "10.0.2.1", check=False).stdout
        return float(out.strip().splitlines()[-1].split("=")[1].split("/")[0])  # min
    base = rtt()
    with control(net) as c:
        c.set_port_delay_us(20000, 1)
        c.set_port_delay_us(20000, 2)
    try:
        delayed = rtt()
    finally:
        with control(net) as c:
            c.set_port_delay_us(0, 1)
            c.set_port_delay_us(0, 2)
    assert 40.0 <= delayed - base < 50.0, (base, delayed)


def test_tail_drops_are_counted(net):
    with control(net) as c:
        before = sum(q["dropped_full"] for q in c.queue_stats(2))
        c.set_queue_rate(20, 2)
        c.set_queue_depth(5, 2)
    try:
        got = send_and_receive(net, [(i, 0) for i in range(50)], 9003, wait=2.0)
        with control(net) as c:
            dropped = sum(q["dropped_full"] for q in c.queue_stats(2)) - before
    finally:
        with control(net) as c:
            c.set_queue_rate(0, 2)
            c.set_queue_depth(64, 2)
    assert dropped >= 35 and len(got) + dropped == 50, (len(got), dropped)
