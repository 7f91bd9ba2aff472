"""The switch's traffic-manager control port: a line protocol over TCP.

Why not thrift: bmv2's runtime CLI speaks thrift on port 9090; the builtin
switch keeps its command names (set_queue_rate, set_queue_depth) but uses a
protocol anyone can drive with `nc`: one command per line in, one JSON
object per line out (see tm.commands for the reply shape).  The default
port mirrors bmv2's thrift port so the emulation allocates control ports the
same way for both targets; the switch exposes it as `--control-port`.

Threading: the server runs in its own thread(s); the TrafficManager does
not lock its packet path.  Two executors decide where commands run:

* CommandQueue (what the switch uses): connection threads put lines on a
  queue and poke a socketpair; the switch's event loop includes
  `fileno()` in its select set and calls `drain()`, which executes the
  commands in the event-loop thread, between packets.  A connection waits
  at most `timeout_s` for its reply.
* LockedExecutor: executes in the connection thread under a lock, for
  processes without an event loop (tools, tests) whose other TM users take
  the same lock.

SwitchControlClient is the Python side for the controller and telemetry.

Who may send commands: given an ssl.SSLContext (the switch's
p4model/tls.ServerTls, the same files as its P4Runtime server), the port
speaks the same lines inside TLS, and with client authentication a client
without a certificate of the run's CA fails the handshake before any line
is read (the connection is closed, one line in the switch's log).  TLS
rather than a shared token: one CA then decides for both control ports, and
over servers the port listens on a network address, where a token would
travel in clear.  Without a context the port is plain, as before.
"""

from __future__ import annotations

import json
import queue
import logging
import socket
import socketserver
import ssl
import threading
from typing import Any, Callable

from testbed.errors import TestbedError
from testbed.p4model.tm.command_language import TMCommands

DEFAULT_CONTROL_PORT = 9090
MAX_LINE = 64 * 1024
HANDSHAKE_TIMEOUT_S = 5.0  # a client that opens TLS and says nothing is let go after this

log = logging.getLogger("testbed.p4model.tm.control")

Handler = Callable[[str], "dict | None"]


class SwitchControlError(TestbedError):
    """The control port could not be reached or refused a command."""


class LockedExecutor:
    """Execute each line at once in the caller's thread, serialised by `lock`."""

    def __init__(self, commands: TMCommands, lock: threading.Lock | None = None) -> None:
        self.commands = commands
        self.lock = lock or threading.Lock()

    def __call__(self, line: str) -> dict | None:
        with self.lock:
            return self.commands.execute(line)


class _Slot:
    __slots__ = ("line", "reply", "done")

    def __init__(self, line: str) -> None:
        self.line = line
        self.reply: dict | None = None
        self.done = threading.Event()


class CommandQueue:
    """Hand lines to the event-loop thread; see the module docstring."""

    def __init__(self, commands: TMCommands, timeout_s: float = 5.0) -> None:
        self.commands = commands
        self.timeout_s = timeout_s
        self._queue: queue.SimpleQueue[_Slot] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def fileno(self) -> int:
        """Readable when commands wait; put it in the event loop's select set."""
        return self._wake_r.fileno()

    def __call__(self, line: str) -> dict | None:
        slot = _Slot(line)
        self._queue.put(slot)
        try:
            self._wake_w.send(b"!")
        except (BlockingIOError, OSError):
            pass  # the pipe is full of wake-ups already, or closed at shutdown
        if not slot.done.wait(self.timeout_s):
            name = line.split()[0] if line.split() else line
            return {"ok": False, "command": name,
                    "error": f"the switch's event loop did not run {name!r} within {self.timeout_s} s "
                             "(it may still be applied later)"}
        return slot.reply

    def drain(self) -> int:
        """Event-loop side: run every waiting command; returns how many ran."""
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass
        ran = 0
        while True:
            try:
                slot = self._queue.get_nowait()
            except queue.Empty:
                return ran
            try:
                slot.reply = self.commands.execute(slot.line)
            except Exception as error:  # a bug must not kill the switch loop
                slot.reply = {"ok": False, "command": slot.line.split()[0],
                              "error": f"internal error: {type(error).__name__}: {error}"}
            slot.done.set()
            ran += 1

    def close(self) -> None:
        self._wake_r.close()
        self._wake_w.close()


class _ConnectionHandler(socketserver.StreamRequestHandler):
    def setup(self) -> None:
        self.refused = False
        if isinstance(self.request, ssl.SSLSocket):
            try:
                self.request.settimeout(HANDSHAKE_TIMEOUT_S)
                self.request.do_handshake()
                self.request.settimeout(None)
            except (ssl.SSLError, OSError) as error:
                log.warning("TM control: TLS handshake with %s refused: %s", self.client_address[0],
                            getattr(error, "reason", None) or error)
                self.refused = True
        super().setup()

    def handle(self) -> None:
        if self.refused:
            return
        handler: Handler = self.server.handler  # type: ignore[attr-defined]
        while True:
            raw = self.rfile.readline(MAX_LINE + 1)
            if not raw:
                return
            if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
                self._reply({"ok": False, "command": None,
                             "error": f"line longer than {MAX_LINE} bytes; connection closed"})
                return
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                self._reply({"ok": False, "command": None, "error": "the line is not valid UTF-8"})
                continue
            try:
                reply = handler(line)
            except Exception as error:  # never let one command kill the server
                reply = {"ok": False, "command": line.split()[0] if line.split() else None,
                         "error": f"internal error: {type(error).__name__}: {error}"}
            if reply is not None:
                self._reply(reply)

    def _reply(self, reply: dict) -> None:
        self.wfile.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
        self.wfile.flush()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    tls: ssl.SSLContext | None = None

    def get_request(self):
        sock, address = super().get_request()
        if self.tls is not None:  # the handshake runs in the connection's thread (setup)
            sock = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address


class ControlServer:
    """TCP server for the control protocol, run in a background thread."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1", port: int = DEFAULT_CONTROL_PORT,
                 tls: ssl.SSLContext | None = None) -> None:
        try:
            self._server = _Server((host, port), _ConnectionHandler)
        except OSError as error:
            raise SwitchControlError(f"cannot listen for switch control on {host}:{port}: {error.strerror}") from None
        self._server.handler = handler  # type: ignore[attr-defined]
        self._server.tls = tls
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return host, port

    def start(self, poll_interval_s: float = 0.05) -> "ControlServer":
        """`poll_interval_s`: how often the thread looks for stop() (it costs a wake-up, and the GIL,
        each time: a fabric process with forty switches waits longer and stops them all at once)."""
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": poll_interval_s},
                                        name="tm-control", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> "ControlServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def parse_address(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """'HOST:PORT', '[v6]:PORT' or 'PORT' -> (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = default_host, text
    host = host.strip("[]") or default_host
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise SwitchControlError(f"switch address {text!r} is not HOST:PORT with a port in 1..65535")
    return host, number


def _word(value: Any) -> str:
    text = str(value)
    if not text or any(c.isspace() for c in text):
        raise SwitchControlError(f"argument {value!r} is empty or contains white space")
    return text


class SwitchControlClient:
    """Python client of the control port; methods mirror the commands."""

    def __init__(self, host: str, port: int = DEFAULT_CONTROL_PORT, timeout_s: float = 10.0, tls=None) -> None:
        """`tls`: a p4model.tls.ClientTls for a switch whose control port speaks TLS."""
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.tls = tls
        self._sock: socket.socket | None = None
        self._file = None

    def _connect(self) -> None:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        except OSError as error:
            raise SwitchControlError(
                f"cannot reach the switch control port {self.host}:{self.port}: {error.strerror or error}"
            ) from None
        if self.tls is not None:
            try:
                sock = self.tls.ssl_context().wrap_socket(sock, server_hostname=self.host)
            except (ssl.SSLError, OSError) as error:
                sock.close()
                raise SwitchControlError(f"TLS with the switch control port {self.host}:{self.port} failed: "
                                         f"{getattr(error, 'reason', None) or error}") from None
        self._sock = sock
        self._file = self._sock.makefile("rb")

    def request(self, line: str) -> dict:
        """Send one raw line, return the reply object (ok or not)."""
        if "\n" in line or "\r" in line:
            raise SwitchControlError(f"a command must be one line, got {line!r}")
        if self._sock is None:
            self._connect()
        try:
            self._sock.sendall(line.encode() + b"\n")
            raw = self._file.readline()
        except OSError as error:
            self.close()
            raise SwitchControlError(
                f"switch control {self.host}:{self.port} failed during {line.split()[0]!r}: {error}"
            ) from None
        if not raw:
            self.close()
            raise SwitchControlError(f"switch control {self.host}:{self.port} closed the connection")
        return json.loads(raw)

    def call(self, command: str, *args: Any) -> Any:
        """Run a command; return its result or raise SwitchControlError with the switch's message."""
        words = [command] + [_word(a) for a in args if a is not None]
        reply = self.request(" ".join(words))
        if not reply.get("ok"):
            raise SwitchControlError(f"switch {self.host}:{self.port} refused: {reply.get('error')}")
        return reply.get("result")

    def set_queue_rate(self, pps: float, port: int | None = None, priority: int | None = None) -> Any:
        return self.call("set_queue_rate", pps, *_optional(port, priority))

    def set_queue_depth(self, packets: int, port: int | None = None, priority: int | None = None) -> Any:
        return self.call("set_queue_depth", packets, *_optional(port, priority))

    def set_queue_depth_bytes(self, nbytes: int, port: int | None = None, priority: int | None = None) -> Any:
        return self.call("set_queue_depth_bytes", nbytes, *_optional(port, priority))

    def set_port_rate_bps(self, bps: int, port: int | None = None) -> Any:
        return self.call("set_port_rate_bps", bps, port)

    def set_port_delay_us(self, delay_us: float, port: int | None = None) -> Any:
        return self.call("set_port_delay_us", delay_us, port)

    def queue_stats(self, port: int | None = None) -> list[dict]:
        return self.call("queue_stats", port)

    def tm_stats(self) -> dict:
        return self.call("tm_stats")

    def help(self, command: str | None = None) -> Any:
        return self.call("help", command)

    def close(self) -> None:
        if self._sock is not None:
            self._file.close()
            self._sock.close()
        self._sock = self._file = None

    def __enter__(self) -> "SwitchControlClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _optional(port: int | None, priority: int | None) -> tuple:
    if port is None and priority is not None:
        raise SwitchControlError("a priority needs a port (bmv2 order: <value> [port [priority]])")
    return (port, priority)
