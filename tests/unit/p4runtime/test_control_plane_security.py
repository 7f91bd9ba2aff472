"""Who may program the builtin switch: what an attacker on the control network would try.

In-process servers on 127.0.0.1 over the toy pipeline (conftest.py): a second controller, an
election id of 0, a role that only reads or only owns some tables, a client without the run's
certificate (P4Runtime and the TM control port), and a fuzz of Write requests that must all be
refused.
"""

import grpc
import pytest
import toy
from google.rpc import code_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4.v1 import p4runtime_pb2
from test_p4rt_server import FWD, HITS, entry_update, wildcard_entries

from testbed.errors import TestbedError
from testbed.p4model.certs import make_run_certificates
from testbed.p4model.clock import ManualClock
from testbed.p4model.p4runtime import DirectDevice, P4RuntimeServer
from testbed.p4model.p4runtime.roles import RoleConfig, load_role_config
from testbed.p4model.switch.options import OptionsError, parse_args
from testbed.p4model.tls import ClientTls
from testbed.p4model.tm import TMCommands, TrafficManager
from testbed.p4model.tm.control import ControlServer, LockedExecutor, SwitchControlClient, SwitchControlError

REG = 369098753
ROLES = """\
roles:
  monitor: {write: none}
  acl: {tables: [MyIngress.acl]}
  forwarding: {tables: [fwd]}
"""


def code_of(call) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as excinfo:
        call()
    message = excinfo.value.details()
    assert message and "\n" not in message and "Traceback" not in message, message
    return excinfo.value.code()


def register_update(index: int, value: int):
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    update.entity.register_entry.register_id = REG
    update.entity.register_entry.index.index = index
    update.entity.register_entry.data.bitstring = value.to_bytes(2, "big")
    return update


@pytest.fixture
def role_server(compiled, tmp_path):
    path = tmp_path / "roles.yaml"
    path.write_text(ROLES)
    srv = P4RuntimeServer(DirectDevice(cpu_port=toy.CPU_PORT), device_id=1, roles=load_role_config(path))
    srv.start("127.0.0.1:0")
    yield srv
    srv.stop(0)


@pytest.fixture
def role_client(role_server, connect):
    def make(role="", election_id=(0, 1)):
        c = connect(role_server.port, role=role)
        reply = c.open_stream(election_id)
        assert reply is not None and not isinstance(reply, grpc.RpcError), reply
        return c

    return make


# ---- arbitration --------------------------------------------------------------------------------

def test_election_id_zero_is_refused_on_the_stream(client):
    c = client(stream=False)
    result = c.open_stream((0, 0))
    assert isinstance(result, grpc.RpcError) and result.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "election id 0" in result.details()


def test_an_unset_election_id_is_a_backup_that_never_writes(client):
    watcher = client(stream=False)
    reply = watcher.open_stream(None)
    assert reply.arbitration.status.code == code_pb2.NOT_FOUND
    assert not reply.arbitration.HasField("election_id")
    owner = client((0, 1))
    owner.set_pipeline()
    told = watcher.next("arbitration")
    assert told.arbitration.status.code == code_pb2.ALREADY_EXISTS and told.arbitration.election_id.low == 1
    request = p4runtime_pb2.WriteRequest(device_id=1, updates=[entry_update(1, 2)])  # no election id
    assert code_of(lambda: watcher.stub.Write(request)) == grpc.StatusCode.PERMISSION_DENIED
    assert code_of(lambda: watcher.write(entry_update(1, 2), election_id=(0, 0))) == \
        grpc.StatusCode.PERMISSION_DENIED


def test_a_second_controller_cannot_write_or_load_a_program(client, server):
    owner = client((0, 10))
    owner.set_pipeline()
    owner.write(entry_update(1, 2))
    intruder = client(stream=False)
    reply = intruder.open_stream((0, 3))
    assert reply.arbitration.status.code == code_pb2.ALREADY_EXISTS
    assert code_of(lambda: intruder.write(entry_update(1, 9, p4runtime_pb2.Update.MODIFY))) == \
        grpc.StatusCode.PERMISSION_DENIED
    assert code_of(lambda: intruder.set_pipeline()) == grpc.StatusCode.PERMISSION_DENIED
    entries = owner.read(wildcard_entries())
    assert [e.table_entry.action.action.params[0].value for e in entries] == [b"\x02"]  # canonical bytes


# ---- roles --------------------------------------------------------------------------------------

def test_the_monitor_role_reads_and_cannot_write(role_client):
    owner = role_client()
    owner.set_pipeline()
    owner.write(entry_update(1, 2))
    monitor = role_client("monitor", (0, 50))  # primary of its own role, above the owner's id
    assert len(monitor.read(wildcard_entries())) == 1
    assert code_of(lambda: monitor.write(entry_update(2, 3))) == grpc.StatusCode.PERMISSION_DENIED
    assert code_of(lambda: monitor.set_pipeline()) == grpc.StatusCode.PERMISSION_DENIED
    assert len(owner.read(wildcard_entries())) == 1


def test_a_role_cannot_write_a_table_outside_its_set(role_client):
    owner = role_client()
    owner.set_pipeline()
    acl = role_client("acl", (0, 5))
    assert code_of(lambda: acl.write(entry_update(1, 2))) == grpc.StatusCode.PERMISSION_DENIED
    forwarding = role_client("forwarding", (0, 5))
    forwarding.write(entry_update(1, 2))  # its own table
    # a batch with one update outside the role is refused whole: nothing of it lands
    assert code_of(lambda: forwarding.write(entry_update(2, 3), register_update(0, 7))) == \
        grpc.StatusCode.PERMISSION_DENIED
    assert len(owner.read(wildcard_entries())) == 1


def test_a_role_naming_a_table_the_program_lacks_is_logged(role_client, caplog):
    with caplog.at_level("WARNING", logger="testbed.p4model.p4runtime"):
        role_client().set_pipeline()
    assert "the role config names tables this program lacks: acl: MyIngress.acl" in caplog.text


def test_an_unknown_role_is_refused(role_server, connect):
    c = connect(role_server.port, role="root")
    result = c.open_stream((0, 9))
    assert isinstance(result, grpc.RpcError) and result.code() == grpc.StatusCode.NOT_FOUND
    assert code_of(lambda: c.write(entry_update(1, 2))) == grpc.StatusCode.NOT_FOUND


def test_role_config_files_are_checked_naming_the_file(tmp_path):
    path = tmp_path / "roles.yaml"
    for text, words in [("roles: [a]", "a mapping `roles:`"), ("roles: {}\ndefault_role: {write: none}\n", "only `clients"),
                        ("roles:\n  m: {write: none, clients: []}\n", "common names"), ("roles:\n  m: {write: some}\n", "expected none or all"),
                        ("roles:\n  m: {write: none, tables: [t]}\n", "give either"),
                        ("roles:\n  m: {tables: []}\n", "non-empty"), ("roles: {m: [\n", "not YAML")]:
        path.write_text(text)
        with pytest.raises(TestbedError) as excinfo:
            load_role_config(path)
        assert str(excinfo.value).startswith(str(path)) and words in str(excinfo.value), excinfo.value
    with pytest.raises(TestbedError, match="cannot read"):
        load_role_config(tmp_path / "absent.yaml")
    assert load_role_config(None).role("anything").write_all  # no config: PI's behaviour


# ---- a fuzz of writes that must all be refused -----------------------------------------------

def _fuzz_update(kind, table_id, update_type, key):
    update = p4runtime_pb2.Update(type=update_type)
    if kind == "table":
        update.CopyFrom(entry_update(key, 1, update_type))
        update.entity.table_entry.table_id = table_id
    elif kind == "register":
        update.CopyFrom(register_update(key % 8, key))
    elif kind == "counter":
        update.entity.counter_entry.counter_id = HITS
        update.entity.counter_entry.index.index = key % 4
        update.type = p4runtime_pb2.Update.MODIFY
    elif kind == "multicast":
        group = update.entity.packet_replication_engine_entry.multicast_group_entry
        group.multicast_group_id = key + 1
        group.replicas.add(egress_port=1, instance=1)
    elif kind == "direct_counter":
        update.entity.direct_counter_entry.table_entry.table_id = table_id
        update.entity.direct_counter_entry.table_entry.match.add(field_id=1).exact.value = bytes([key])
        update.type = p4runtime_pb2.Update.MODIFY
    return update


updates = st.lists(st.builds(_fuzz_update, st.sampled_from(["table", "register", "counter", "multicast",
                                                             "direct_counter"]),
                             st.sampled_from([FWD, FWD + 1, 0, 1 << 31]),
                             st.sampled_from([p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                                              p4runtime_pb2.Update.DELETE]),
                             st.integers(0, 255)), min_size=1, max_size=4)
# (role, election id) of a client that must not change anything: a backup of the default role,
# no id or 0, any id in the read-only role, the acl role's own primary (no table of the toy is its)
senders = st.sampled_from([("", (0, 3)), ("", None), ("", (0, 0)), ("", (1, 0)), ("monitor", (0, 40)),
                           ("monitor", (0, 41)), ("acl", (0, 30)), ("acl", (0, 31))])


@pytest.fixture
def fuzz_probe(role_client, role_server, connect):
    """A switch with a program, register 0 at 5, a primary in each role; a client to look with."""
    owner = role_client("", (0, 20))
    owner.set_pipeline()
    owner.write(register_update(0, 5))
    role_client("monitor", (0, 40))
    role_client("acl", (0, 30))
    return connect(role_server.port)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sender=senders, batch=updates)
def test_fuzzed_writes_from_a_backup_or_a_limited_role_are_all_refused(fuzz_probe, sender, batch):
    role, election = sender
    request = p4runtime_pb2.WriteRequest(device_id=1, role=role, updates=batch)
    if election is not None:
        request.election_id.high, request.election_id.low = election
    assert code_of(lambda: fuzz_probe.stub.Write(request, timeout=5)) == grpc.StatusCode.PERMISSION_DENIED
    assert fuzz_probe.read(wildcard_entries()) == []
    reg = p4runtime_pb2.Entity()
    reg.register_entry.register_id = REG
    reg.register_entry.index.index = 0
    assert fuzz_probe.read(reg)[0].register_entry.data.bitstring.lstrip(b"\0") == b"\x05"


# ---- TLS with client certificates --------------------------------------------------------------

@pytest.fixture
def certificates(tmp_path):
    return make_run_certificates(tmp_path / "certs")


@pytest.fixture
def tls_server(compiled, certificates):
    srv = P4RuntimeServer(DirectDevice(cpu_port=toy.CPU_PORT), device_id=1)
    srv.start("127.0.0.1:0", tls=certificates.server)
    yield srv
    srv.stop(0)


def test_the_run_certificates_let_the_owner_program_over_tls(tls_server, certificates, connect):
    owner = connect(tls_server.port, credentials=certificates.client("controller").grpc_credentials())
    assert owner.open_stream((0, 1)).arbitration.status.code == code_pb2.OK
    owner.set_pipeline()
    owner.write(entry_update(1, 2))
    assert len(owner.read(wildcard_entries())) == 1


@pytest.mark.parametrize("who", ["no certificate", "plain channel", "another CA"])
def test_a_client_without_the_run_certificate_cannot_connect(tls_server, certificates, tmp_path, connect, who):
    if who == "no certificate":
        credentials = ClientTls(certificates.ca).grpc_credentials()
    elif who == "another CA":
        credentials = make_run_certificates(tmp_path / "other").client("controller").grpc_credentials()
    else:
        credentials = None
    c = connect(tls_server.port, credentials=credentials)
    with pytest.raises(grpc.RpcError) as excinfo:
        c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=3)
    assert excinfo.value.code() == grpc.StatusCode.UNAVAILABLE
    assert tls_server.arbitrator.primary("") is None


def test_certificate_files_are_private(certificates):
    for path in certificates.directory.iterdir():
        if path.suffix == ".key":
            assert path.stat().st_mode & 0o077 == 0, path
    assert certificates.directory.stat().st_mode & 0o077 == 0
    assert not list(certificates.directory.glob("ca.key"))  # the CA's key is not kept


def test_the_tm_control_port_takes_only_the_run_clients(certificates, tmp_path):
    tm = TrafficManager(ManualClock(), priority_queues=1, ports=[1])
    with ControlServer(LockedExecutor(TMCommands(tm)), port=0, tls=certificates.server.ssl_context()) as srv:
        with SwitchControlClient(*srv.address, tls=certificates.client("telemetry")) as good:
            good.set_queue_rate(1000)
            assert [q["rate_pps"] for q in good.queue_stats(1)] == [1000]
        others = [ClientTls(certificates.ca), make_run_certificates(tmp_path / "other").client("controller"), None]
        for tls in others:
            with pytest.raises(SwitchControlError):
                with SwitchControlClient(*srv.address, timeout_s=3, tls=tls) as bad:
                    bad.tm_stats()
        with SwitchControlClient(*srv.address, tls=certificates.client("controller")) as still:
            still.tm_stats()  # the refusals left the server serving


def test_switch_options_take_bmv2s_tls_flags():
    opts = parse_args(["--no-p4", "--", "--grpc-server-ssl", "--grpc-server-cert", "s.pem", "--grpc-server-key",
                       "s.key", "--grpc-server-cacert", "ca.pem", "--grpc-server-with-client-auth"])
    assert opts.tls.require_client_auth and str(opts.tls.ca) == "ca.pem"
    for argv, words in [(["--grpc-server-with-client-auth"], "need --grpc-server-ssl"),
                        (["--grpc-server-ssl"], "needs --grpc-server-cert"),
                        (["--grpc-server-ssl", "--grpc-server-cert", "a", "--grpc-server-key", "b",
                          "--grpc-server-with-client-auth"], "needs --grpc-server-cacert")]:
        with pytest.raises(OptionsError, match=words):
            parse_args(["--no-p4"] + argv)
    assert RoleConfig(None).role("").write_all


def test_a_role_bound_to_certificates_takes_no_other_client(compiled, certificates, tmp_path, connect):
    """default_role and a role's `clients`: holding one of the run's certificates is not enough."""
    path = tmp_path / "roles.yaml"
    path.write_text("default_role: {clients: [testbed controller]}\n"
                    "roles:\n  monitor: {write: none, clients: [testbed telemetry]}\n")
    srv = P4RuntimeServer(DirectDevice(cpu_port=toy.CPU_PORT), device_id=1, roles=load_role_config(path))
    srv.start("127.0.0.1:0", tls=certificates.server)
    try:
        def as_(name, role=""):
            return connect(srv.port, credentials=certificates.client(name).grpc_credentials(), role=role)

        owner = as_("controller")
        assert owner.open_stream((0, 1)).arbitration.status.code == code_pb2.OK
        owner.set_pipeline()
        owner.write(entry_update(1, 2))
        usurper = as_("telemetry")  # a run certificate, but not the default role's
        result = usurper.open_stream((0, 99))
        assert isinstance(result, grpc.RpcError) and result.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "'testbed telemetry' may not act in the default role" in result.details()
        assert code_of(lambda: usurper.write(entry_update(2, 3), election_id=(0, 1))) == \
            grpc.StatusCode.PERMISSION_DENIED  # even with the primary's election id
        assert code_of(lambda: usurper.read(wildcard_entries())) == grpc.StatusCode.PERMISSION_DENIED
        monitor = as_("telemetry", role="monitor")
        assert monitor.open_stream((0, 5)) is not None
        assert len(monitor.read(wildcard_entries())) == 1
        shell = as_("shell", role="monitor")
        assert code_of(lambda: shell.read(wildcard_entries())) == grpc.StatusCode.PERMISSION_DENIED
        assert srv.arbitrator.primary("").election_id == (0, 1)
    finally:
        srv.stop(0)
