"""A P4Runtime client for one switch, usable for many switches at once.

p4runtime-shell keeps one global connection per process, which does not
suit a controller that configures a whole fabric in parallel; this client
is a plain object per switch over the P4Runtime protobufs.  It speaks to
simple_switch_grpc and to the builtin target alike: the only difference is
the device config pushed with the pipeline (bmv2 JSON vs P4 source).

Where the switch takes only its owner (p4model/tls.py, roles.py), the
client is given the run's TLS files (`tls`, a ClientTls) and may name a
role; its election id is never 0, which the builtin switch refuses.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from testbed.control.p4info_index import P4InfoIndex, decode_value, encode_value
from testbed.errors import TestbedError

# A program load (SetForwardingPipelineConfig) may take this long: the switch runs the front end and
# the native build first, and 20 switch processes loading at once on 2 cores took over 10 s.
PIPELINE_TIMEOUT_S = 60.0


class P4RuntimeError(TestbedError):
    """A request a switch refused, with the switch and each update's error."""


@dataclass
class TableEntrySpec:
    """A table entry in names: match {field: value | (value, prefix_len) |
    (value, mask) | (lo, hi)}, action name with params by name."""

    table: str
    match: dict
    action: str
    params: dict
    priority: int = 0
    is_default: bool = False


def _details(error: grpc.RpcError) -> str:
    """Per-update errors from the status details, as PI sends them."""
    messages = []
    try:
        for key, value in error.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
                for index, detail in enumerate(status.details):
                    p4_error = p4runtime_pb2.Error()
                    if detail.Unpack(p4_error) and p4_error.canonical_code != code_pb2.OK:
                        messages.append(f"update {index}: {code_pb2.Code.Name(p4_error.canonical_code)}: "
                                        f"{p4_error.message}")
    except Exception:  # details are best effort; the status line is always there
        pass
    return "; ".join(messages)


def encode_table_entry(index: P4InfoIndex, spec: TableEntrySpec,
                       entry: p4runtime_pb2.TableEntry | None = None) -> p4runtime_pb2.TableEntry:
    """A TableEntrySpec (names) as the P4Runtime message (ids, encoded values): written into
    `entry` (an empty message, for example an Update's entity.table_entry, so nothing is copied)
    or a new one."""
    table = index.table(spec.table)
    if entry is None:
        entry = p4runtime_pb2.TableEntry()
    entry.table_id, entry.priority, entry.is_default_action = table.preamble.id, spec.priority, spec.is_default
    for name, value in spec.match.items():
        field = index.match_field(table, name)
        match = entry.match.add(field_id=field.id)
        what = f"{spec.table} key {field.name}"
        kind = field.match_type
        if kind == p4info_pb2.MatchField.EXACT:
            match.exact.value = encode_value(value, field.bitwidth, what)
        elif kind == p4info_pb2.MatchField.LPM:
            prefix, length = value
            match.lpm.value = encode_value(prefix, field.bitwidth, what)
            match.lpm.prefix_len = length
        elif kind == p4info_pb2.MatchField.TERNARY:
            data, mask = value
            match.ternary.value = encode_value(data, field.bitwidth, what)
            match.ternary.mask = encode_value(mask, field.bitwidth, what)
        elif kind == p4info_pb2.MatchField.RANGE:
            low, high = value
            match.range.low = encode_value(low, field.bitwidth, what)
            match.range.high = encode_value(high, field.bitwidth, what)
        elif kind == p4info_pb2.MatchField.OPTIONAL:
            match.optional.value = encode_value(value, field.bitwidth, what)
    action = index.action(spec.action)
    entry.action.action.action_id = action.preamble.id
    for name, value in spec.params.items():
        param = index.param(action, name)
        entry.action.action.params.add(
            param_id=param.id, value=encode_value(value, param.bitwidth, f"{spec.action}({name})"))
    return entry


class P4RuntimeClient:
    """Connection to one switch: arbitration, pipeline, writes, reads."""

    def __init__(self, name: str, address: str, device_id: int, election_id: tuple[int, int] = (0, 1),
                 timeout_s: float = 10.0, tls=None, role: str = "") -> None:
        if tuple(election_id) == (0, 0):
            raise P4RuntimeError(f"{name}: election id 0 is refused by the switch; use (0, 1) or above")
        self.name = name
        self.tls = tls  # a p4model.tls.ClientTls, or None for a plain channel
        self.role = role
        self.address = address
        self.device_id = device_id
        self.election_id = p4runtime_pb2.Uint128(high=election_id[0], low=election_id[1])
        self.timeout_s = timeout_s
        self.index: P4InfoIndex | None = None
        self._open_channel()

    def _open_channel(self) -> None:
        self.channel = (grpc.insecure_channel(self.address) if self.tls is None
                        else grpc.secure_channel(self.address, self.tls.grpc_credentials()))
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self._stream = None
        self._reader: threading.Thread | None = None

    def reopen(self) -> None:
        """A new channel to the same address (the switch was restarted); connect() next."""
        self.close()
        self._open_channel()

    # -- connection ------------------------------------------------------------
    def connect(self) -> None:
        """Open the stream channel and become primary (arbitration)."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=self.timeout_s)
        except grpc.FutureTimeoutError:
            raise P4RuntimeError(f"{self.name}: no P4Runtime server at {self.address}") from None
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read_stream, daemon=True, name=f"p4rt-{self.name}")
        self._reader.start()
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.CopyFrom(self.election_id)
        if self.role:
            request.arbitration.role.name = self.role
        self._requests.put(request)
        try:
            reply = self._responses.get(timeout=self.timeout_s)
        except queue.Empty:
            raise P4RuntimeError(f"{self.name}: no arbitration reply from {self.address}") from None
        if isinstance(reply, Exception):
            raise P4RuntimeError(f"{self.name}: stream to {self.address} failed: {reply}") from None
        if reply.arbitration.status.code != code_pb2.OK:
            raise P4RuntimeError(f"{self.name}: not primary on {self.address} "
                                 f"(status {reply.arbitration.status.code}: {reply.arbitration.status.message})")

    def _read_stream(self) -> None:
        try:
            for message in self._stream:
                self._responses.put(message)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                self._responses.put(error)

    def packet_in(self, timeout_s: float) -> p4runtime_pb2.PacketIn | None:
        """The next PacketIn from the stream, or None after timeout_s."""
        try:
            while True:
                message = self._responses.get(timeout=timeout_s)
                if isinstance(message, Exception):
                    raise P4RuntimeError(f"{self.name}: stream failed: {message}")
                if message.HasField("packet"):
                    return message.packet
        except queue.Empty:
            return None

    def close(self) -> None:
        self._requests.put(None)
        self.channel.close()

    # -- pipeline ----------------------------------------------------------------
    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int = 0) -> None:
        """Load a program. The switch compiles it (front end, native build) before it answers, and
        a fabric of one process per switch loads all at once on a few cores, so this call waits
        PIPELINE_TIMEOUT_S (at least the client's timeout), not the one for table writes."""
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, election_id=self.election_id, role=self.role,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = device_config
        request.config.cookie.cookie = cookie
        self._call("SetForwardingPipelineConfig", request, max(self.timeout_s, PIPELINE_TIMEOUT_S))
        self.index = P4InfoIndex(p4info)

    def _call(self, method: str, request, timeout_s: float | None = None):
        try:
            return getattr(self.stub, method)(request, timeout=self.timeout_s if timeout_s is None else timeout_s)
        except grpc.RpcError as error:
            detail = _details(error)
            raise P4RuntimeError(f"{self.name}: {method} failed: {error.code().name}: {error.details()}"
                                 + (f" ({detail})" if detail else "")) from None

    # -- writes ------------------------------------------------------------------
    def write(self, updates: list[p4runtime_pb2.Update]) -> None:
        if not updates:
            return
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id, election_id=self.election_id, role=self.role)
        request.updates.extend(updates)
        self._call("Write", request)

    def table_entry(self, spec: TableEntrySpec) -> p4runtime_pb2.TableEntry:
        return encode_table_entry(self._need_index(), spec)

    def insert(self, specs: list[TableEntrySpec]) -> None:
        updates = []
        for spec in specs:
            kind = p4runtime_pb2.Update.MODIFY if spec.is_default else p4runtime_pb2.Update.INSERT
            update = p4runtime_pb2.Update(type=kind)
            update.entity.table_entry.CopyFrom(self.table_entry(spec))
            updates.append(update)
        self.write(updates)

    def modify(self, specs: list[TableEntrySpec]) -> None:
        updates = []
        for spec in specs:
            update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
            update.entity.table_entry.CopyFrom(self.table_entry(spec))
            updates.append(update)
        self.write(updates)

    def write_register(self, name: str, index: int, value: int) -> None:
        register = self._need_index().register(name)
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        entry = update.entity.register_entry
        entry.register_id = register.preamble.id
        entry.index.index = index
        width = register.type_spec.bitstring.bit.bitwidth or 64
        entry.data.bitstring = encode_value(value, width, f"register {name}[{index}]")
        self.write([update])

    def write_meter(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        meter = self._need_index().meter(name)
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
        entry = update.entity.meter_entry
        entry.meter_id = meter.preamble.id
        entry.index.index = index
        entry.config.cir, entry.config.cburst = cir, cburst
        entry.config.pir, entry.config.pburst = pir, pburst
        self.write([update])

    def set_multicast_group(self, group_id: int, ports: list[int]) -> None:
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        group = update.entity.packet_replication_engine_entry.multicast_group_entry
        group.multicast_group_id = group_id
        for instance, port in enumerate(ports, start=1):
            group.replicas.add(egress_port=port, instance=instance)
        self.write([update])

    # -- reads -------------------------------------------------------------------
    def read(self, entities: list[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id, role=self.role)
        request.entities.extend(entities)
        try:
            return [e for response in self.stub.Read(request, timeout=self.timeout_s) for e in response.entities]
        except grpc.RpcError as error:
            raise P4RuntimeError(f"{self.name}: Read failed: {error.code().name}: {error.details()}") from None

    def read_counter(self, name: str) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) for every cell of an indirect counter."""
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = self._need_index().counter(name).preamble.id
        return {e.counter_entry.index.index: (e.counter_entry.data.packet_count, e.counter_entry.data.byte_count)
                for e in self.read([entity])}

    def read_register(self, name: str) -> dict[int, int]:
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = self._need_index().register(name).preamble.id
        return {e.register_entry.index.index: decode_value(e.register_entry.data.bitstring)
                for e in self.read([entity])}

    def _need_index(self) -> P4InfoIndex:
        if self.index is None:
            raise P4RuntimeError(f"{self.name}: no pipeline set yet")
        return self.index
