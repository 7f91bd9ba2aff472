"""A builtin switch started as a run starts it with switch.control_tls: the project's own clients
(the controller's P4Runtime client, the TM control client) work through TLS with the run's
certificates, and the same switch refuses a client without them, a second controller, a
monitoring role's writes and a limited role's writes outside its tables. No ports, no root:
the switch's servers on 127.0.0.1.
"""

import contextlib
import threading
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2

from testbed.control.apply import apply_tm, build_pipeline_config
from testbed.control.p4runtime_client import P4RuntimeClient, P4RuntimeError, TableEntrySpec
from testbed.emulation.switches import SwitchConfig
from testbed.p4model.certs import make_run_certificates, run_client
from testbed.p4model.switch.main import build
from testbed.p4model.switch.options import parse_args
from testbed.p4model.tls import ClientTls
from testbed.p4model.tm.control import SwitchControlClient, SwitchControlError

REPO = Path(__file__).resolve().parents[3]
BASIC = REPO / "p4src" / "basic.p4"
ROUTE = TableEntrySpec("BasicIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": ("10.0.1.0", 24)}, "BasicIngress.set_nhop",
                       {"dmac": "00:00:00:00:01:01", "port": 1})


def entity(client) -> p4runtime_pb2.Entity:
    """Every entry of ROUTE's table, read through `client`."""
    found = p4runtime_pb2.Entity()
    found.table_entry.table_id = client.table_entry(ROUTE).table_id
    return found


class _Plan:
    switch = "s1"
    tm_commands = ["set_port_rate_bps 20000000 1"]


@contextlib.contextmanager
def running(config: SwitchConfig, *extra: str):
    """The switch `config` starts, its servers on 127.0.0.1 -> (grpc address, control port)."""
    opts = parse_args(config.options() + list(extra))
    assert opts.tls == config.tls  # the run's argv carries the certificates through
    sw, grpc_server, control = build(opts)
    stop = threading.Event()
    loop = threading.Thread(target=lambda: [sw.command_queue.drain() for _ in iter(lambda: stop.wait(0.01), True)])
    loop.start()  # the switch's event loop, for the TM commands only
    try:
        yield f"127.0.0.1:{grpc_server.port}", control.address[1]
    finally:
        stop.set()
        loop.join()
        grpc_server.stop(0)
        control.stop()
        sw.close()


def switch_config(tmp_path, certificates, role_config=None) -> SwitchConfig:
    return SwitchConfig(name="s1", target="builtin", device_id=1, grpc_port=0, thrift_port=0, ports={},
                        log_file=tmp_path / "s1.log", tls=certificates.server, role_config=role_config)


@pytest.fixture
def switch(tmp_path):
    certificates = make_run_certificates(tmp_path / "certs")
    roles = tmp_path / "roles.yaml"
    roles.write_text("roles:\n  monitor: {write: none}\n  acl: {tables: [BasicIngress.acl]}\n")
    with running(switch_config(tmp_path, certificates, roles)) as (address, control_port):
        yield certificates, address, control_port


def test_the_project_clients_work_through_tls_and_strangers_do_not(switch, tmp_path):
    certificates, address, control_port = switch
    pipeline = build_pipeline_config("builtin", BASIC, tmp_path / "build")
    controller = P4RuntimeClient("s1", address, 1, tls=certificates.client("controller"), timeout_s=5)
    controller.connect()
    controller.set_pipeline(pipeline.p4info, pipeline.device_config)
    controller.insert([ROUTE])
    assert apply_tm("builtin", _Plan(), control_port, 1090, tls=certificates.client("controller")) == []
    with SwitchControlClient("127.0.0.1", control_port, tls=certificates.client("telemetry")) as telemetry:
        assert telemetry.tm_stats() is not None

    # the shell's files are found from the CA path in the switch's argv
    shell = run_client(certificates.ca, "shell")
    reader = P4RuntimeClient("shell", address, 1, election_id=(0, 2), tls=shell, timeout_s=5)
    reader.index = controller.index
    assert len(reader.read([entity(reader)])) == 1
    reader.close()

    stranger = P4RuntimeClient("stranger", address, 1, tls=ClientTls(certificates.ca), timeout_s=2)
    with pytest.raises(P4RuntimeError, match="no P4Runtime server"):
        stranger.connect()
    stranger.close()
    plain = P4RuntimeClient("plain", address, 1, timeout_s=2)
    with pytest.raises(P4RuntimeError):
        plain.connect()
    plain.close()
    with pytest.raises(SwitchControlError):
        apply_tm("builtin", _Plan(), control_port, 1090)  # no certificate: the TM port refuses
    controller.close()


def test_a_second_controller_and_limited_roles_are_refused(switch, tmp_path):
    certificates, address, _ = switch
    pipeline = build_pipeline_config("builtin", BASIC, tmp_path / "build")
    owner = P4RuntimeClient("owner", address, 1, election_id=(0, 10), tls=certificates.client("controller"))
    owner.connect()
    owner.set_pipeline(pipeline.p4info, pipeline.device_config)
    owner.insert([ROUTE])
    second = P4RuntimeClient("second", address, 1, election_id=(0, 5), tls=certificates.client("shell"))
    with pytest.raises(P4RuntimeError, match="not primary"):
        second.connect()
    second.index = owner.index
    with pytest.raises(P4RuntimeError, match="PERMISSION_DENIED"):
        second.insert([ROUTE])
    for role in ("monitor", "acl"):
        limited = P4RuntimeClient(role, address, 1, election_id=(0, 20), tls=certificates.client("telemetry"),
                                  role=role)
        limited.connect()  # primary of its own role
        limited.index = owner.index
        with pytest.raises(P4RuntimeError, match="PERMISSION_DENIED"):
            limited.insert([ROUTE])
        with pytest.raises(P4RuntimeError, match="PERMISSION_DENIED"):
            limited.set_pipeline(pipeline.p4info, pipeline.device_config)
        assert len(limited.read([entity(limited)])) == 1  # it reads
        limited.close()
    with pytest.raises(P4RuntimeError, match="election id 0"):
        P4RuntimeClient("zero", address, 1, election_id=(0, 0))
    for client in (owner, second):
        client.close()


def test_p4runtime_shell_connects_with_ssl(switch, tmp_path):
    """p4runtime-shell's `--ssl --cacert --cert --private-key`, as `testbed shell` passes them."""
    import p4runtime_sh.shell as sh
    from p4runtime_sh.p4runtime import SSLOptions

    certificates, address, _ = switch
    pipeline = build_pipeline_config("builtin", BASIC, tmp_path / "build")
    owner = P4RuntimeClient("owner", address, 1, tls=certificates.client("controller"))
    owner.connect()
    owner.set_pipeline(pipeline.p4info, pipeline.device_config)
    owner.close()  # the shell takes over as primary, as `testbed shell` does
    tls = run_client(certificates.ca, "shell")
    sh.setup(device_id=1, grpc_addr=address, election_id=(0, 2), verbose=False,
             ssl_options=SSLOptions(False, str(tls.ca), str(tls.cert), str(tls.key)))
    try:
        entry = sh.TableEntry("BasicIngress.ipv4_lpm")(action="BasicIngress.set_nhop")
        entry.match["hdr.ipv4.dstAddr"] = "10.0.2.0/24"
        entry.action["dmac"], entry.action["port"] = "00:00:00:00:02:02", "2"
        entry.insert()
        assert len(list(sh.TableEntry("BasicIngress.ipv4_lpm").read())) == 1
    finally:
        sh.teardown()


def test_the_run_role_config_keeps_the_default_role_for_the_controller_and_the_shell(tmp_path):
    """What a run with control_tls gives its builtin switches: the telemetry certificate reads in
    the monitor role and cannot take the default role, whatever its election id."""
    certificates = make_run_certificates(tmp_path / "certs")
    config = switch_config(tmp_path, certificates, certificates.role_config())
    assert config.options()[-2:] == ["--p4rt-role-config", str(tmp_path / "certs" / "roles.yaml")]
    pipeline = build_pipeline_config("builtin", BASIC, tmp_path / "build")
    with running(config) as (address, _):
        owner = P4RuntimeClient("owner", address, 1, tls=certificates.client("controller"))
        owner.connect()
        owner.set_pipeline(pipeline.p4info, pipeline.device_config)
        owner.insert([ROUTE])
        usurper = P4RuntimeClient("usurper", address, 1, election_id=(9, 9), tls=certificates.client("telemetry"))
        with pytest.raises(P4RuntimeError, match="may not act in the default role"):
            usurper.connect()
        usurper.close()
        monitor = P4RuntimeClient("monitor", address, 1, election_id=(0, 3), tls=certificates.client("telemetry"),
                                  role="monitor")
        monitor.connect()
        monitor.index = owner.index
        assert len(monitor.read([entity(monitor)])) == 1
        with pytest.raises(P4RuntimeError, match="PERMISSION_DENIED"):
            monitor.insert([ROUTE])
        monitor.close()
        shell = P4RuntimeClient("shell", address, 1, election_id=(0, 2), tls=certificates.client("shell"))
        shell.connect()  # above the controller's (0, 1): the shell's user may write
        shell.close()
        owner.close()
    certificates.delete_keys()
    assert not list(certificates.directory.glob("*.key")) and (certificates.directory / "ca.pem").is_file()
