"""Real traffic through the builtin switch between network namespaces: queue
build-up seen by the program (ECN marking at enq_qdepth >= 10), strict
priority, link delay in ping RTTs, tail drops, and survival of a
controller that goes away."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from switch_net import (PROGRAMS, SwitchNet, check_link_delay_in_ping_rtt,  # noqa: E402
                        check_tail_drops_are_counted, install_host_routes, send_and_receive)

from testbed.p4model.tm.control import SwitchControlClient  # noqa: E402

pytestmark = pytest.mark.integration

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
    check_link_delay_in_ping_rtt(net, control)


def test_tail_drops_are_counted(net):
    check_tail_drops_are_counted(net, control)
