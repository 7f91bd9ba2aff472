"""The builtin switch on the native engine (--backend native): the program in C, every packet
moved by engine.c, the control side in Python.  Pings flow once a controller installs routes; the
TM's commands reach the engine (link delay in the ping RTT, tail drops counted in queue_stats);
a program the native back end cannot lower is refused in one line and forwarding goes on."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from switch_net import (PROGRAMS, SwitchNet, check_link_delay_in_ping_rtt,  # noqa: E402
                        check_tail_drops_are_counted, install_host_routes)

from testbed.p4model.backend.native import compiler  # noqa: E402
from testbed.p4model.tm.control import SwitchControlClient  # noqa: E402

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(compiler() is None, reason="no C compiler: no native engine")]


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    import p4runtime_sh.shell as sh

    tmp = tmp_path_factory.mktemp("native")
    net = SwitchNet(hosts=2, tag=f"n{__import__('os').getpid() % 1000}")
    try:
        net.start_switch(tmp, extra=["--backend", "native"], program=PROGRAMS / "basic_ipv4.p4")
        sh.setup(device_id=1, grpc_addr=net.grpc_addr, election_id=(0, 1), verbose=False)
        try:
            install_host_routes(sh, net.hosts)
        finally:
            sh.teardown()
        yield net
        assert net.stop_switch() == 0, "the switch must exit 0 on SIGTERM"
    finally:
        net.close()


def control(net):
    return SwitchControlClient("127.0.0.1", net.control_port)


def test_the_switch_says_it_runs_the_native_path(net):
    assert "native packet path" in net.log_path.read_text()


def test_pings_flow(net):
    result = net.exec(1, "ping", "-c", "3", "-i", "0.2", "-W", "1", "10.0.2.1", check=False)
    assert result.returncode == 0, result.stdout
    with control(net) as c:
        queues = c.queue_stats(2)
    assert sum(q["enqueued"] for q in queues) >= 3  # the engine's counters, read through the TM


def test_link_delay_shows_in_ping_rtt(net):
    check_link_delay_in_ping_rtt(net, control)


def test_tail_drops_are_counted(net):
    check_tail_drops_are_counted(net, control)


def test_a_program_the_native_back_end_refuses_is_one_line(net, caplog):
    import p4runtime_sh.shell as sh

    from testbed.p4model.p4info import generate
    from testbed.p4model.frontend import load_program

    program = net.log_path.parent / "wide.p4"  # over 128 bits and not whole bytes: not lowered to C
    program.write_text((PROGRAMS / "basic_ipv4.p4").read_text().replace(
        "struct headers {\n    ethernet_t ethernet;",
        "header wide_t { bit<130> data; bit<6> pad; }\nstruct headers {\n    wide_t wide;\n"
        "    ethernet_t ethernet;"))
    p4info = generate(load_program(program))
    info = net.log_path.parent / "refused.p4info.txtpb"
    from google.protobuf import text_format
    info.write_text(text_format.MessageToString(p4info))
    with pytest.raises(SystemExit):  # p4runtime-shell logs the switch's error and exits
        sh.setup(device_id=1, grpc_addr=net.grpc_addr, election_id=(0, 2), verbose=False,
                 config=sh.FwdPipeConfig(str(info), str(program)))
    text = caplog.text
    assert "INVALID_ARGUMENT" in text and "does not support bit<130> (wider than 128 bits)" in text, text
    assert "--backend python" in text
    assert "Traceback" not in text
    result = net.exec(1, "ping", "-c", "2", "-i", "0.2", "-W", "1", "10.0.2.1", check=False)
    assert result.returncode == 0, "the switch keeps forwarding with its program"
