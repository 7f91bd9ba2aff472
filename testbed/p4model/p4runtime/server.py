"""The P4Runtime 1.x gRPC server of the builtin switch.

Behaves like simple_switch_grpc (PI's DeviceMgr) as p4runtime-shell and
our controller use it:

* Capabilities: the P4Runtime API version of the installed p4runtime
  package.
* StreamChannel: arbitration (see arbitration.py; the first reply comes at
  once, well inside p4runtime-shell's 2 s), PacketOut from the primary of
  the default role (metadata packed into the program's packet_out header,
  see packetio.py), PacketIn and DigestList to that primary, DigestListAck.
  Problems with a PacketOut are reported on the stream as StreamError; a
  bad arbitration request ends the stream with its status.
* SetForwardingPipelineConfig: VERIFY, VERIFY_AND_SAVE, VERIFY_AND_COMMIT,
  COMMIT (the saved config) and RECONCILE_AND_COMMIT (the new program with
  the old table entries, action profile members/groups, multicast groups
  and clone sessions carried over; refused, with the old program kept, if
  any of them does not fit the new program; default actions, counters,
  meters and registers start fresh).  `p4_device_config` is the P4-16
  source text (config.py).  Only the primary may change the pipeline.
* GetForwardingPipelineConfig: ALL, COOKIE_ONLY, P4INFO_AND_COOKIE,
  DEVICE_CONFIG_AND_COOKIE.
* Write (primary only, PERMISSION_DENIED otherwise; CONTINUE_ON_ERROR only,
  UNIMPLEMENTED for the other atomicity modes, as PI) and Read (streamed,
  wildcards) go through ControlPlane.  A batch with failures ends with
  gRPC UNKNOWN and one p4.v1.Error per update (status.py).
* With no pipeline, Get/Read/Write fail with FAILED_PRECONDITION.
* Who may program the switch: the primary of a role (arbitration.py: election
  id 0 is refused, an unset one never becomes primary), within what its role
  allows (roles.py: a role config with read-only and table-limited roles),
  over TLS with client certificates when the switch is given them
  (p4model/tls.py).  Every refusal is a gRPC status with one sentence.

Threading: gRPC handlers run in the server's thread pool; everything that
touches the pipeline goes through Device.call (device.py).  No handler
exception can reach the packet path: unexpected ones become INTERNAL.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
from concurrent import futures

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.p4runtime.arbitration import Arbitrator
from testbed.p4model.p4runtime.config import LoadedConfig, compile_source, first_difference
from testbed.p4model.p4runtime.digests import DigestManager
from testbed.p4model.p4runtime.roles import RoleConfig
from testbed.p4model.p4runtime.status import RpcError, canonical_code, grpc_code, write_error_status

log = logging.getLogger("testbed.p4model.p4runtime")

try:
    from importlib.metadata import version as _version

    API_VERSION = _version("p4runtime")
except Exception:  # pragma: no cover - metadata missing in odd installs
    API_VERSION = "1.4.1"

_SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
_GetReq = p4runtime_pb2.GetForwardingPipelineConfigRequest
MAX_ENTITIES_PER_RESPONSE = 1000
STREAM_QUEUE_LIMIT = 10000  # PacketIns waiting for a slow controller beyond this are dropped


def _election(message) -> tuple[int, int] | None:
    """A request's (or arbitration's) election id; None when the field is unset."""
    if not message.HasField("election_id"):
        return None
    return (message.election_id.high, message.election_id.low)


def _client_name(context) -> str | None:
    """The common name of the client's TLS certificate, or None (no certificate, plain port)."""
    try:
        names = context.auth_context().get("x509_common_name")
    except Exception:  # a context without auth data (in-process tests)
        return None
    return names[0].decode("utf-8", "replace") if names else None


def _rpc(method):
    """Turn RpcError / ControlPlaneError / bugs into a gRPC status for unary handlers."""
    @functools.wraps(method)
    def handler(self, request, context):
        try:
            return method(self, request, context)
        except RpcError as error:
            context.abort(grpc_code(error.code), error.message)
        except ControlPlaneError as error:
            context.abort(grpc_code(error.code), error.message)
        except _Abort as abort:
            context.abort_with_status(abort.status)
        except Exception as error:
            self.log.exception("P4Runtime %s failed", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}: {error}")
    return handler


class _Abort(Exception):
    """End a unary RPC with a prepared (rich) status."""

    def __init__(self, status) -> None:
        super().__init__(status.details)
        self.status = status


class _Stream:
    """One StreamChannel: an outgoing queue and the stream's arbitration state."""

    def __init__(self, peer: str, client: str | None = None) -> None:
        self.peer = peer
        self.client = client  # its TLS certificate's common name, if any
        self.out: queue.Queue = queue.Queue()
        self.closed = threading.Event()
        self.dropped = 0

    def send(self, message) -> None:
        if self.closed.is_set():
            return
        if self.out.qsize() >= STREAM_QUEUE_LIMIT:
            self.dropped += 1
            return
        self.out.put(message)

    def close(self, final=None) -> None:
        if not self.closed.is_set():
            self.closed.set()
            self.out.put(final)


class P4RuntimeServer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """Servicer + lifecycle.  `device` is the switch side (device.Device)."""

    def __init__(self, device, device_id: int = 0, include_dirs=(), logger: logging.Logger | None = None,
                 roles: RoleConfig | None = None) -> None:
        self.device = device
        self.roles = roles or RoleConfig(None)
        self.log = logger or log  # a fabric process gives each switch its own
        self.device_id = device_id
        self.include_dirs = list(include_dirs)
        self.arbitrator = Arbitrator(device_id)
        self.config: LoadedConfig | None = None
        self.saved: LoadedConfig | None = None
        self.digests: DigestManager | None = None
        self._set_lock = threading.Lock()
        self._server: grpc.Server | None = None
        self.port: int | None = None
        self.packet_ins = 0
        self.packet_ins_dropped = 0
        device.attach(self)

    # ---- lifecycle ---------------------------------------------------

    def start(self, address: str = "127.0.0.1:0", workers: int = 32, tls=None) -> int:
        """Listen on HOST:PORT (port 0 picks one); returns the bound port. `tls`: a
        p4model.tls.ServerTls, or None for a plain port."""
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
                                   options=[("grpc.max_receive_message_length", 64 << 20),
                                            ("grpc.max_send_message_length", 64 << 20),
                                            ("grpc.so_reuseport", 0)])
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, self._server)
        try:
            if tls is None:
                port = self._server.add_insecure_port(address)
            else:
                port = self._server.add_secure_port(address, tls.grpc_credentials())
        except RuntimeError:
            port = 0
        if not port and not address.endswith(":0"):
            raise RpcError("UNAVAILABLE", f"cannot listen for P4Runtime on {address} (address in use?)")
        self._server.start()
        self.port = port
        return port

    def stop(self, grace: float = 0.5) -> None:
        if self._server is not None:
            for stream in list(self._streams()):
                stream.close()
            self._server.stop(grace).wait()
            self._server = None

    def _streams(self):
        with self.arbitrator._lock:
            return [m.stream for m in self.arbitrator._members.values()]

    def load_initial(self, source: bytes, pipeline, p4info) -> None:
        """The program given on the command line (before any controller)."""
        from testbed.p4model.control_plane import ControlPlane

        self._install(LoadedConfig(pipeline, ControlPlane(pipeline, p4info), p4info, source))

    # ---- packet side (called from the packet thread) ------------------

    def packet_in(self, data: bytes) -> None:
        config = self.config
        primary = self.arbitrator.primary("")
        if config is None or primary is None:
            self.packet_ins_dropped += 1
            return
        try:
            message = config.packet_io.decode_packet_in(data)
        except Exception:  # a layout problem must not reach the packet loop
            self.log.exception("cannot build a PacketIn")
            self.packet_ins_dropped += 1
            return
        self.packet_ins += 1
        primary.stream.send(p4runtime_pb2.StreamMessageResponse(packet=message))

    def after_packets(self, now_ns: int) -> None:
        """Drain the program's digests into lists (cheap when there are none)."""
        config, digests = self.config, self.digests
        if config is None or digests is None:
            return
        queue_ = getattr(config.pipeline, "digests", None)
        items = queue_.drain() if queue_ is not None else None
        if items:
            digests.collect(items, now_ns)
        else:
            digests.poll(now_ns)

    def next_deadline_ns(self) -> int | None:
        return self.digests.next_deadline_ns() if self.digests is not None else None

    def _send_digest(self, message) -> None:
        primary = self.arbitrator.primary("")
        if primary is not None:
            primary.stream.send(p4runtime_pb2.StreamMessageResponse(digest=message))

    # ---- helpers -----------------------------------------------------

    def _check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise RpcError("NOT_FOUND", f"this switch is device {self.device_id}, not {device_id}")

    def _require_config(self) -> LoadedConfig:
        config = self.config
        if config is None:
            raise RpcError("FAILED_PRECONDITION", "no forwarding pipeline config has been set on this device")
        return config

    def _install(self, config: LoadedConfig | None) -> None:
        self.device.call(lambda: self.device.install(config))
        self.config = config
        missing = self.roles.unknown_tables(config.p4info) if config is not None else []
        if missing:
            self.log.warning("the role config names tables this program lacks: %s", ", ".join(missing))
        # A program without digests has no manager: the packet thread then skips it after every pass.
        self.digests = (DigestManager(config.p4info, config.control_plane.digest_config, self._send_digest)
                        if config is not None and config.p4info.digests
                        and hasattr(config.control_plane, "digest_config") else None)

    # ---- RPCs --------------------------------------------------------

    @_rpc
    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    @_rpc
    def SetForwardingPipelineConfig(self, request, context):
        self._check_device(request.device_id)
        role = self.roles.role(request.role)
        self.roles.check_client(role, _client_name(context))
        self.roles.check_pipeline(role, "SetForwardingPipelineConfig")
        self.arbitrator.check_primary(request.role, _election(request), "SetForwardingPipelineConfig")
        action = request.action
        if action not in (_SetReq.VERIFY, _SetReq.VERIFY_AND_SAVE, _SetReq.VERIFY_AND_COMMIT,
                          _SetReq.COMMIT, _SetReq.RECONCILE_AND_COMMIT):
            raise RpcError("INVALID_ARGUMENT", f"unknown SetForwardingPipelineConfig action {action}")
        with self._set_lock:
            if action == _SetReq.COMMIT:
                if self.saved is None:
                    raise RpcError("FAILED_PRECONDITION", "COMMIT: no config was saved with VERIFY_AND_SAVE")
                new, self.saved = self.saved, None
                self._install(new)
                self.log.info("pipeline committed (cookie %d)", new.cookie)
                return p4runtime_pb2.SetForwardingPipelineConfigResponse()
            new = self._verify(request)
            if action == _SetReq.VERIFY:
                return p4runtime_pb2.SetForwardingPipelineConfigResponse()
            if action == _SetReq.VERIFY_AND_SAVE:
                self.saved = new
                return p4runtime_pb2.SetForwardingPipelineConfigResponse()
            if action == _SetReq.RECONCILE_AND_COMMIT and self.config is not None:
                self._carry_state(self.config, new)
            self.saved = None
            self._install(new)
            self.log.info("pipeline set (cookie %d, %d tables)", new.cookie, len(new.p4info.tables))
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _verify(self, request) -> LoadedConfig:
        from testbed.p4model.control_plane import ControlPlane

        if not request.HasField("config"):
            raise RpcError("INVALID_ARGUMENT", "the request carries no config")
        config = request.config
        if not config.HasField("p4info") or not (len(config.p4info.tables) or len(config.p4info.actions)):
            raise RpcError("INVALID_ARGUMENT", "config.p4info is empty")
        pipeline, ours = compile_source(config.p4_device_config, clock=self.device.clock,
                                        include_dirs=self.include_dirs,
                                        drop_port=getattr(self.device, "drop_port", 511),
                                        backend=getattr(self.device, "backend", "python"))
        difference = first_difference(ours, config.p4info)
        if difference:
            raise RpcError("INVALID_ARGUMENT", f"the P4Info does not match the program: {difference}")
        try:
            control_plane = ControlPlane(pipeline, ours)
        except ControlPlaneError as error:
            raise RpcError("INVALID_ARGUMENT", f"the program cannot be controlled: {error.message}") from None
        return LoadedConfig(pipeline, control_plane, config.p4info, config.p4_device_config,
                            config.cookie.cookie)

    def _carry_state(self, old: LoadedConfig, new: LoadedConfig) -> None:
        """RECONCILE_AND_COMMIT: replay the old forwarding state into the new pipeline."""
        probes = []
        for kind in ("action_profile_member", "action_profile_group", "table_entry"):
            entity = p4runtime_pb2.Entity()
            getattr(entity, kind).SetInParent()
            probes.append(entity)
        mc = p4runtime_pb2.Entity()
        mc.packet_replication_engine_entry.multicast_group_entry.SetInParent()
        clone = p4runtime_pb2.Entity()
        clone.packet_replication_engine_entry.clone_session_entry.SetInParent()
        probes += [mc, clone]

        def read_all():
            out = []
            for probe in probes:
                try:
                    out.extend(old.control_plane.read(probe))
                except ControlPlaneError:
                    continue
            return out

        entities = self.device.call(read_all)
        for entity in entities:
            if entity.HasField("table_entry") and (entity.table_entry.is_default_action
                                                   or getattr(entity.table_entry, "is_const", False)):
                continue
            update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=entity)
            try:
                new.control_plane.write(update)  # the new pipeline is not live yet: no call() needed
            except ControlPlaneError as error:
                raise RpcError("INVALID_ARGUMENT",
                               f"RECONCILE_AND_COMMIT: the state of the running program does not fit the new "
                               f"one ({entity.WhichOneof('entity')}: {error.message}); nothing changed") from None

    @_rpc
    def GetForwardingPipelineConfig(self, request, context):
        self._check_device(request.device_id)
        config = self._require_config()
        response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        rtype = request.response_type
        if rtype not in (_GetReq.ALL, _GetReq.COOKIE_ONLY, _GetReq.P4INFO_AND_COOKIE,
                         _GetReq.DEVICE_CONFIG_AND_COOKIE):
            raise RpcError("INVALID_ARGUMENT", f"unknown response_type {rtype}")
        response.config.cookie.cookie = config.cookie
        if rtype in (_GetReq.ALL, _GetReq.P4INFO_AND_COOKIE):
            response.config.p4info.CopyFrom(config.p4info)
        if rtype in (_GetReq.ALL, _GetReq.DEVICE_CONFIG_AND_COOKIE):
            response.config.p4_device_config = config.source
        return response

    @_rpc
    def Write(self, request, context):
        self._check_device(request.device_id)
        role = self.roles.role(request.role)
        self.roles.check_client(role, _client_name(context))
        self.arbitrator.check_primary(request.role, _election(request), "Write")
        config = self._require_config()
        if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
            raise RpcError("UNIMPLEMENTED", "only atomicity CONTINUE_ON_ERROR is supported (as PI)")
        updates = list(request.updates)
        if not updates:
            return p4runtime_pb2.WriteResponse()
        self.roles.check_write(role, updates, config.p4info)

        def apply():
            control_plane = self._require_config().control_plane
            results = []
            for update in updates:
                try:
                    control_plane.write(update)
                    results.append(("OK", ""))
                except ControlPlaneError as error:
                    results.append((error.code, error.message))
                except Exception as error:  # a bug: report it, keep the batch and the switch going
                    self.log.exception("Write of %s failed", update.entity.WhichOneof("entity"))
                    results.append(("INTERNAL", f"internal error: {type(error).__name__}: {error}"))
            return results

        results = self.device.call(apply)
        if any(code != "OK" for code, _ in results):
            self.log.info("Write: %s", "; ".join(f"#{i} {c} {m}" for i, (c, m) in enumerate(results) if c != "OK"))
            raise _Abort(write_error_status(results))
        return p4runtime_pb2.WriteResponse()

    def Read(self, request, context):
        try:
            self._check_device(request.device_id)
            self.roles.check_client(self.roles.role(request.role), _client_name(context))
            self._require_config()
            for entity in request.entities:
                found = self.device.call(lambda e=entity: self._require_config().control_plane.read_later(e))()
                for i in range(0, len(found), MAX_ENTITIES_PER_RESPONSE):
                    yield p4runtime_pb2.ReadResponse(entities=found[i:i + MAX_ENTITIES_PER_RESPONSE])
        except (RpcError, ControlPlaneError) as error:
            context.abort(grpc_code(error.code), error.message)
        except Exception as error:
            self.log.exception("P4Runtime Read failed")
            context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(error).__name__}: {error}")

    # ---- the stream ------------------------------------------------

    def StreamChannel(self, request_iterator, context):
        stream = _Stream(context.peer(), _client_name(context))
        context.add_callback(lambda: self._stream_gone(stream))
        reader = threading.Thread(target=self._read_stream, args=(stream, request_iterator),
                                  name="p4rt-stream", daemon=True)
        reader.start()
        while True:
            item = stream.out.get()
            if item is None:
                break
            if isinstance(item, RpcError):
                self._stream_gone(stream)
                context.abort(grpc_code(item.code), item.message)
            yield item
        self._stream_gone(stream)

    def _stream_gone(self, stream: _Stream) -> None:
        stream.close()
        for target, primary_id, is_primary in self.arbitrator.leave(stream):
            self._notify(target, primary_id, is_primary)

    def _read_stream(self, stream: _Stream, request_iterator) -> None:
        try:
            for message in request_iterator:
                try:
                    self._on_stream_message(stream, message)
                except RpcError as error:
                    if message.HasField("arbitration"):
                        stream.close(error)
                        return
                    stream.send(self._stream_error(error, message))
                except Exception as error:
                    self.log.exception("stream message failed")
                    stream.send(self._stream_error(RpcError("INTERNAL", str(error)), message))
        except grpc.RpcError:
            pass  # the client went away
        except Exception:
            self.log.exception("stream reader failed")
        finally:
            self._stream_gone(stream)

    def _stream_error(self, error: RpcError, message):
        response = p4runtime_pb2.StreamMessageResponse()
        response.error.canonical_code = canonical_code(error.code)
        response.error.message = error.message
        if message.HasField("packet"):
            response.error.packet_out.packet_out.CopyFrom(message.packet)
        elif message.HasField("digest_ack"):
            response.error.digest_list_ack.digest_list_ack.CopyFrom(message.digest_ack)
        return response

    def _notify(self, stream: _Stream, primary_id: tuple[int, int], is_primary: bool) -> None:
        member = self.arbitrator.stream_member(stream)
        response = p4runtime_pb2.StreamMessageResponse()
        arb = response.arbitration
        arb.device_id = self.device_id
        if member is not None and member.role:
            arb.role.name = member.role
        if primary_id is None:  # spec: no primary yet, the election id is left unset
            arb.status.code = code_pb2.NOT_FOUND
            arb.status.message = "backup: no controller is primary (an unset election id never becomes primary)"
            stream.send(response)
            return
        arb.election_id.high, arb.election_id.low = primary_id
        arb.status.code = code_pb2.OK if is_primary else code_pb2.ALREADY_EXISTS
        arb.status.message = "primary" if is_primary else "backup: another controller is primary"
        stream.send(response)

    def _on_stream_message(self, stream: _Stream, message) -> None:
        kind = message.WhichOneof("update")
        if kind == "arbitration":
            arb = message.arbitration
            if arb.device_id == self.device_id:  # a wrong device is NOT_FOUND first (spec order)
                self.roles.check_client(self.roles.role(arb.role.name), stream.client)
            notes = self.arbitrator.join(stream, arb.device_id, arb.role.name, _election(arb))
            for target, primary_id, is_primary in notes:
                self._notify(target, primary_id, is_primary)
            return
        member = self.arbitrator.stream_member(stream)
        if member is None:
            raise RpcError("FAILED_PRECONDITION", "send a MasterArbitrationUpdate before anything else")
        if kind == "packet":
            if not self.arbitrator.is_primary(member.role, member.election_id):
                raise RpcError("PERMISSION_DENIED", "only the primary controller may send PacketOut")
            self.roles.check_pipeline(self.roles.role(member.role), "PacketOut")
            config = self._require_config()
            data = config.packet_io.encode_packet_out(message.packet)
            if self.device.cpu_port is None:
                raise RpcError("FAILED_PRECONDITION", "the switch was started without --cpu-port")
            self.device.call(lambda: self.device.inject(data))
        elif kind == "digest_ack":
            ack = message.digest_ack
            if self.digests is not None:
                self.digests.ack(ack.digest_id, ack.list_id)
        else:
            raise RpcError("UNIMPLEMENTED", f"stream message {kind!r} is not supported")
