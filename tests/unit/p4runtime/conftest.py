"""A P4Runtime server on 127.0.0.1 over the toy pipeline, and a client for it."""

import queue
import sys
import threading
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

sys.path.insert(0, str(Path(__file__).parent))
import toy  # noqa: E402

from testbed.p4model.p4runtime import DirectDevice, P4RuntimeServer  # noqa: E402
from testbed.p4model.p4runtime import server as server_module  # noqa: E402


class Client:
    """A minimal controller: a stub and StreamChannel queues."""

    def __init__(self, port: int, device_id: int = 1, credentials=None, role: str = "") -> None:
        self.channel = (grpc.insecure_channel(f"127.0.0.1:{port}") if credentials is None
                        else grpc.secure_channel(f"127.0.0.1:{port}", credentials))
        self.role = role
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election_id = (0, 0)
        self._out: queue.Queue = queue.Queue()
        self.inbox: queue.Queue = queue.Queue()
        self.stream = None

    def open_stream(self, election_id=(0, 1), device_id=None, role=None):
        self.election_id = election_id

        def requests():
            while True:
                item = self._out.get()
                if item is None:
                    return
                yield item

        self.stream = self.stub.StreamChannel(requests())

        def reader():
            try:
                for message in self.stream:
                    self.inbox.put(message)
            except grpc.RpcError as error:
                self.inbox.put(error)
            self.inbox.put(None)

        threading.Thread(target=reader, daemon=True).start()
        return self.arbitrate(election_id, device_id, role)

    def arbitrate(self, election_id, device_id=None, role=None):
        """election_id None leaves the field unset."""
        self.election_id = election_id
        role = self.role if role is None else role
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id if device_id is None else device_id
        if election_id is not None:
            request.arbitration.election_id.high, request.arbitration.election_id.low = election_id
        if role:
            request.arbitration.role.name = role
        self._out.put(request)
        return self.next("arbitration")

    def send(self, request) -> None:
        self._out.put(request)

    def next(self, kind=None, timeout=2.0):
        while True:
            try:
                message = self.inbox.get(timeout=timeout)
            except queue.Empty:
                return None
            if message is None or isinstance(message, grpc.RpcError):
                return message
            if kind is None or message.HasField(kind):
                return message

    def close_stream(self) -> None:
        self._out.put(None)
        if self.stream is not None:
            self.stream.cancel()

    def set_pipeline(self, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                     p4info=None, source=toy.SOURCE, cookie=0):
        request = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=self.device_id, action=action,
                                                                   role=self.role)
        request.election_id.high, request.election_id.low = self.election_id
        if p4info is not False:
            request.config.p4info.CopyFrom(p4info or toy.make_p4info())
            request.config.p4_device_config = source
            request.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(request)

    def write(self, *updates, election_id=None):
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id, updates=list(updates), role=self.role)
        request.election_id.high, request.election_id.low = election_id or self.election_id
        return self.stub.Write(request)

    def read(self, *entities):
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=list(entities), role=self.role)
        out = []
        for response in self.stub.Read(request):
            out.extend(response.entities)
        return out

    def close(self) -> None:
        self.close_stream()
        self.channel.close()


@pytest.fixture
def compiled(monkeypatch):
    """Replace the compiler: any source compiles to the toy (the config check still runs)."""
    built = []

    def fake_compile(source, clock=None, include_dirs=(), drop_port=511, backend="python"):
        if b"syntax error" in source:
            from testbed.p4model.p4runtime.status import RpcError
            raise RpcError("INVALID_ARGUMENT", "the P4 program does not load: program.p4:1:1: syntax error")
        pipeline = toy.make_pipeline(clock)
        built.append(pipeline)
        return pipeline, toy.make_p4info()

    monkeypatch.setattr(server_module, "compile_source", fake_compile)
    return built


@pytest.fixture
def server(compiled):
    device = DirectDevice(cpu_port=toy.CPU_PORT)
    srv = P4RuntimeServer(device, device_id=1)
    srv.start("127.0.0.1:0")
    yield srv
    srv.stop(0)


@pytest.fixture
def client(server):
    clients = []

    def make(election_id=(0, 1), stream=True):
        c = Client(server.port)
        clients.append(c)
        if stream:
            reply = c.open_stream(election_id)
            assert reply is not None and not isinstance(reply, grpc.RpcError), reply
        return c

    yield make
    for c in clients:
        c.close()


@pytest.fixture
def connect():
    """Clients of any server: connect(port, credentials=None, role=""); closed at the end."""
    made = []

    def make(port, credentials=None, role=""):
        c = Client(port, credentials=credentials, role=role)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()
