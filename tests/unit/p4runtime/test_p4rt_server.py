"""The P4Runtime server over gRPC on 127.0.0.1, against the toy pipeline."""

import grpc
import pytest
import toy
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from testbed.p4model.p4runtime.status import parse_write_error

SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetReq = p4runtime_pb2.GetForwardingPipelineConfigRequest
FWD, SET_PORT, HITS, DIGEST = 33554433, 16777217, 302063617, 385875969


def entry_update(key: int, port: int, kind=p4runtime_pb2.Update.INSERT):
    update = p4runtime_pb2.Update(type=kind)
    te = update.entity.table_entry
    te.table_id = FWD
    te.match.add(field_id=1).exact.value = bytes([key])
    te.action.action.action_id = SET_PORT
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return update


def wildcard_entries():
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = FWD
    return entity


def code_of(excinfo):
    return excinfo.value.code()


def test_capabilities(client):
    c = client(stream=False)
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version.startswith("1.")


def test_first_controller_is_primary_and_a_lower_one_is_backup(client):
    primary = client((0, 5))
    backup = client(stream=False)
    reply = backup.open_stream((0, 3))
    assert reply.arbitration.status.code == code_pb2.ALREADY_EXISTS
    assert (reply.arbitration.election_id.high, reply.arbitration.election_id.low) == (0, 5)
    assert primary.next("arbitration", timeout=0.3) is None  # no change: the primary is not told again


def test_higher_election_id_takes_over_and_everyone_is_told(client):
    old = client((0, 5))
    new = client((0, 9))
    told = old.next("arbitration")
    assert told.arbitration.status.code == code_pb2.ALREADY_EXISTS
    assert told.arbitration.election_id.low == 9
    # the old primary can no longer write
    new.set_pipeline()
    with pytest.raises(grpc.RpcError) as excinfo:
        old.write(entry_update(1, 2))
    assert code_of(excinfo) == grpc.StatusCode.PERMISSION_DENIED
    new.write(entry_update(1, 2))
    # the primary leaves: the backup is promoted and told
    new.close_stream()
    promoted = old.next("arbitration")
    assert promoted.arbitration.status.code == code_pb2.OK
    old.write(entry_update(2, 3))


def test_wrong_device_id_ends_the_stream(client):
    c = client(stream=False)
    result = c.open_stream((0, 1), device_id=7)
    assert isinstance(result, grpc.RpcError) and result.code() == grpc.StatusCode.NOT_FOUND


def test_duplicate_election_id_is_refused(client):
    client((0, 4))
    other = client(stream=False)
    result = other.open_stream((0, 4))
    assert isinstance(result, grpc.RpcError) and result.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_without_a_pipeline_reads_and_writes_fail_with_failed_precondition(client):
    c = client()
    for call in (lambda: c.read(wildcard_entries()), lambda: c.write(entry_update(1, 2)),
                 lambda: c.stub.GetForwardingPipelineConfig(GetReq(device_id=1))):
        with pytest.raises(grpc.RpcError) as excinfo:
            call()
        assert code_of(excinfo) == grpc.StatusCode.FAILED_PRECONDITION


def test_verify_save_commit(client, server):
    c = client()
    c.set_pipeline(SetReq.VERIFY)
    assert server.config is None
    c.set_pipeline(SetReq.VERIFY_AND_SAVE, cookie=7)
    assert server.config is None
    request = SetReq(device_id=1, action=SetReq.COMMIT)
    request.election_id.low = 1
    c.stub.SetForwardingPipelineConfig(request)
    assert server.config is not None and server.config.cookie == 7
    with pytest.raises(grpc.RpcError) as excinfo:
        c.stub.SetForwardingPipelineConfig(request)  # nothing saved any more
    assert code_of(excinfo) == grpc.StatusCode.FAILED_PRECONDITION


def test_a_p4info_that_does_not_match_the_program_is_refused_naming_the_object(client, server):
    c = client()
    p4info = toy.make_p4info()
    p4info.tables[0].preamble.name = "MyIngress.other"
    with pytest.raises(grpc.RpcError) as excinfo:
        c.set_pipeline(p4info=p4info)
    assert code_of(excinfo) == grpc.StatusCode.INVALID_ARGUMENT
    assert "MyIngress.fwd" in excinfo.value.details() and "MyIngress.other" in excinfo.value.details()
    p4info = toy.make_p4info()
    p4info.actions[0].params[0].bitwidth = 16
    with pytest.raises(grpc.RpcError) as excinfo:
        c.set_pipeline(p4info=p4info)
    assert "MyIngress.set_port" in excinfo.value.details()
    assert server.config is None


def test_bad_program_and_missing_config(client):
    c = client()
    with pytest.raises(grpc.RpcError) as excinfo:
        c.set_pipeline(source=b"syntax error here")
    assert code_of(excinfo) == grpc.StatusCode.INVALID_ARGUMENT and "syntax error" in excinfo.value.details()
    with pytest.raises(grpc.RpcError) as excinfo:
        c.set_pipeline(p4info=False)
    assert code_of(excinfo) == grpc.StatusCode.INVALID_ARGUMENT


def test_backup_cannot_set_the_pipeline(client):
    client((0, 9))
    backup = client(stream=False)
    backup.open_stream((0, 2))
    with pytest.raises(grpc.RpcError) as excinfo:
        backup.set_pipeline()
    assert code_of(excinfo) == grpc.StatusCode.PERMISSION_DENIED


def test_get_pipeline_config_response_types(client):
    c = client()
    c.set_pipeline(cookie=42)
    full = c.stub.GetForwardingPipelineConfig(GetReq(device_id=1, response_type=GetReq.ALL)).config
    assert full.p4info == toy.make_p4info() and full.p4_device_config == toy.SOURCE and full.cookie.cookie == 42
    cookie = c.stub.GetForwardingPipelineConfig(GetReq(device_id=1, response_type=GetReq.COOKIE_ONLY)).config
    assert cookie.cookie.cookie == 42 and not cookie.HasField("p4info") and not cookie.p4_device_config
    info = c.stub.GetForwardingPipelineConfig(GetReq(device_id=1, response_type=GetReq.P4INFO_AND_COOKIE)).config
    assert info.HasField("p4info") and not info.p4_device_config
    dev = c.stub.GetForwardingPipelineConfig(
        GetReq(device_id=1, response_type=GetReq.DEVICE_CONFIG_AND_COOKIE)).config
    assert dev.p4_device_config == toy.SOURCE and not dev.HasField("p4info")


def test_write_read_delete(client):
    c = client()
    c.set_pipeline()
    c.write(entry_update(1, 2), entry_update(3, 4))
    entries = c.read(wildcard_entries())
    assert sorted(e.table_entry.match[0].exact.value for e in entries) == [b"\x01", b"\x03"]
    c.write(entry_update(1, 2, p4runtime_pb2.Update.DELETE))
    assert len(c.read(wildcard_entries())) == 1


def test_failed_updates_come_back_as_unknown_with_one_error_per_update(client):
    c = client()
    c.set_pipeline()
    c.write(entry_update(1, 2))
    with pytest.raises(grpc.RpcError) as excinfo:
        c.write(entry_update(5, 2), entry_update(1, 2), entry_update(6, 1, p4runtime_pb2.Update.DELETE))
    error = excinfo.value
    assert error.code() == grpc.StatusCode.UNKNOWN
    errors = parse_write_error(error)
    assert [code for code, _ in errors] == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND]
    # what p4runtime-shell reports for a batch whose updates all fail (its iterator
    # loops forever on OK entries, so it can only parse all-failed batches; the shell
    # itself writes one update at a time)
    with pytest.raises(grpc.RpcError) as excinfo:
        c.write(entry_update(1, 2), entry_update(6, 1, p4runtime_pb2.Update.DELETE))
    shell = P4RuntimeWriteException(excinfo.value)
    assert [(i, e.canonical_code) for i, e in shell.errors] == [(0, code_pb2.ALREADY_EXISTS),
                                                                (1, code_pb2.NOT_FOUND)]
    assert "At index 0: ALREADY_EXISTS" in str(shell)
    # CONTINUE_ON_ERROR: the good update was applied
    assert len(c.read(wildcard_entries())) == 2


def test_other_atomicity_modes_are_unimplemented(client):
    c = client()
    c.set_pipeline()
    request = p4runtime_pb2.WriteRequest(device_id=1, updates=[entry_update(1, 2)],
                                         atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    request.election_id.low = 1
    with pytest.raises(grpc.RpcError) as excinfo:
        c.stub.Write(request)
    assert code_of(excinfo) == grpc.StatusCode.UNIMPLEMENTED


def test_read_errors_and_counters(client, server):
    c = client()
    c.set_pipeline()
    c.write(entry_update(1, 2))
    device = server.device
    assert device.process(1, b"\x01hello") == [(2, b"\x01hello")]
    counter = p4runtime_pb2.Entity()
    counter.counter_entry.counter_id = HITS
    counter.counter_entry.index.index = 1
    (read,) = c.read(counter)
    assert read.counter_entry.data.packet_count == 1 and read.counter_entry.data.byte_count == 6
    bad = p4runtime_pb2.Entity()
    bad.table_entry.table_id = 12345
    with pytest.raises(grpc.RpcError) as excinfo:
        c.read(bad)
    assert code_of(excinfo) == grpc.StatusCode.INVALID_ARGUMENT


def test_packet_out_gets_the_packet_out_header(client, server):
    c = client()
    c.set_pipeline()
    request = p4runtime_pb2.StreamMessageRequest()
    request.packet.payload = b"\xaa\xbb"
    request.packet.metadata.add(metadata_id=1, value=(3).to_bytes(2, "big"))
    c.send(request)
    c.write(entry_update(9, 9))  # a round trip so the stream message has been handled
    for _ in range(100):
        if server.device.transmitted:
            break
        import time
        time.sleep(0.01)
    assert list(server.device.transmitted) == [(3, b"\xaa\xbb")]


def test_packet_out_problems_are_stream_errors(client):
    c = client()
    c.set_pipeline()
    request = p4runtime_pb2.StreamMessageRequest()
    request.packet.payload = b"x"
    request.packet.metadata.add(metadata_id=9, value=b"\x01")
    c.send(request)
    error = c.next("error")
    assert error.error.canonical_code == code_pb2.INVALID_ARGUMENT
    assert error.error.packet_out.packet_out.payload == b"x"


def test_packet_in_carries_the_packet_in_header_as_metadata(client, server):
    c = client()
    c.set_pipeline()
    assert server.device.process(7, b"\x42data") == []  # miss -> CPU port
    message = c.next("packet")
    assert message.packet.payload == b"\x42data"
    metadata = {m.metadata_id: int.from_bytes(m.value, "big") for m in message.packet.metadata}
    assert metadata == {1: 7, 2: 5}


def test_digests_need_configuration_then_arrive_in_lists_and_are_suppressed_until_acked(client, server):
    c = client()
    c.set_pipeline()
    server.device.process(4, b"\xdd")
    assert c.next("digest", timeout=0.3) is None  # not configured: not sent
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    update.entity.digest_entry.digest_id = DIGEST
    update.entity.digest_entry.config.max_list_size = 1
    update.entity.digest_entry.config.ack_timeout_ns = 10**12
    c.write(update)
    server.device.process(4, b"\xdd")
    message = c.next("digest")
    assert message.digest.digest_id == DIGEST
    (data,) = message.digest.data
    assert [m.bitstring for m in data.struct.members] == [b"\xdd", b"\x00\x04"]
    server.device.process(4, b"\xdd")  # same data, not acknowledged: suppressed
    assert server.digests.suppressed == 1
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id = DIGEST
    ack.digest_ack.list_id = message.digest.list_id
    c.send(ack)
    c.write(entry_update(9, 9))  # round trip
    import time
    for _ in range(100):
        server.device.process(4, b"\xdd")
        again = c.next("digest", timeout=0.05)
        if again is not None:
            break
        time.sleep(0.01)
    assert again is not None and again.digest.list_id != message.digest.list_id


def test_reconcile_and_commit_keeps_the_entries(client, server, compiled):
    c = client()
    c.set_pipeline()
    c.write(entry_update(1, 2))
    c.set_pipeline(SetReq.RECONCILE_AND_COMMIT)
    assert len(compiled) == 2 and server.config.pipeline is compiled[1]
    assert len(c.read(wildcard_entries())) == 1
    c.set_pipeline(SetReq.VERIFY_AND_COMMIT)  # a plain commit starts empty
    assert c.read(wildcard_entries()) == []


def test_a_bad_request_does_not_stop_the_device(client, server):
    c = client()
    c.set_pipeline()
    c.write(entry_update(1, 2))
    garbage = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    garbage.entity.table_entry.table_id = FWD  # no match, no action
    with pytest.raises(grpc.RpcError):
        c.write(garbage)
    assert server.device.process(1, b"\x01") == [(2, b"\x01")]
