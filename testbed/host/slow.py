"""The host_slow fault's command to a running agent: a file, then a signal.

The run (`testbed.emulation.faults`) writes the command file (JSON
`{"delay_ms": D, "rate_mbps": R}`, R null for the NIC's own rate, both 0/null
to end the slow-down) in one rename, so the agent never reads half of it, and
sends the agent SIGUSR1, as agent_stall reaches the agent with SIGSTOP. The
agent's handler only raises a flag, and the signal wakes its packet loop's
select (`signal.set_wakeup_fd`), which then reads the file and applies it: the application
starts each message `delay_ms` after its turn (`WorkloadRunner.set_slow`) and
the NIC sends at `rate_mbps` (`NicPorts.rate_cap_bps`, then the endpoint's
pacer, credit gate and flows through `Endpoint.set_link_rate`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError

COMMAND_SIGNAL = signal.SIGUSR1


class SlowCommandError(TestbedError):
    """A command file that cannot be read as a slow-down."""


@dataclass(frozen=True)
class SlowCommand:
    delay_ms: float = 0.0  # added before each message the application starts
    rate_mbps: float | None = None  # the NIC's rate; None: its ports' own

    def to_json(self) -> dict:
        return {"delay_ms": self.delay_ms, "rate_mbps": self.rate_mbps}


def write_command(path: Path, command: SlowCommand) -> None:
    """Write the command file whole (a temporary file renamed over it)."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(command.to_json()))
    os.replace(partial, path)


def read_command(path: Path) -> SlowCommand:
    try:
        data = json.loads(Path(path).read_text())
        delay, rate = float(data.get("delay_ms") or 0.0), data.get("rate_mbps")
        rate = None if rate is None else float(rate)
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise SlowCommandError(f"slow-down command {path} cannot be read: {error}") from None
    if delay < 0 or (rate is not None and rate <= 0):
        raise SlowCommandError(f"slow-down command {path}: delay_ms must be >= 0 and rate_mbps > 0")
    return SlowCommand(delay, rate)


class SignalWakeup:
    """A socket that becomes readable when any signal arrives: the interpreter writes a byte to its
    other end (`signal.set_wakeup_fd`), so a loop's select returns at once instead of at its next
    timeout. Making one takes the interpreter's wake-up fd (so a process has one at a time), and
    `close()` gives it back."""

    def __init__(self) -> None:
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        self.reader, self._writer = reader, writer

    def fileno(self) -> int:
        return self.reader.fileno()

    def drain(self) -> bool:
        """Empty the socket (its bytes only say that a signal came); whether there were any."""
        got = False
        try:
            while self.reader.recv(512):
                got = True
        except (BlockingIOError, InterruptedError):
            pass
        return got

    def close(self) -> None:
        signal.set_wakeup_fd(-1)
        self.reader.close()
        self._writer.close()


class SlowCommands:
    """The agent's side: `install()` the signal handler before saying it is ready; `take()` in the
    loop returns the newest command once per signal (None when none came)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.pending = False
        self.wakeup: SignalWakeup | None = None  # readable after any signal: the loop's select wakes
        self.woken = 0  # times the wake-up socket woke the loop (drain found bytes)
        self._seen: bytes | None = None  # the file's bytes when `changed()` last read it

    def install(self) -> None:
        """The handler, and a wake-up socket the interpreter writes to on each signal (so the
        agent's select returns at once instead of at its next timeout)."""
        signal.signal(COMMAND_SIGNAL, self._on_signal)
        self.wakeup = SignalWakeup()

    def close(self) -> None:
        """Undo install(): the signal's default action and no wake-up socket."""
        if self.wakeup is None:
            return
        signal.signal(COMMAND_SIGNAL, signal.SIG_DFL)
        self.wakeup.close()
        self.wakeup = None

    def drain(self) -> None:
        """Empty the wake-up socket (its bytes only say that a signal came)."""
        self.woken += self.wakeup.drain()

    def _on_signal(self, signum, frame) -> None:
        self.pending = True

    def changed(self) -> bool:
        """Whether the file's bytes differ from what this call saw last (a missing file reads as
        none): a group of agents (testbed.host.group) gets one SIGUSR1 for all of them and
        applies a command only in the member whose file the run rewrote."""
        try:
            now = self.path.read_bytes()
        except OSError:
            now = None
        changed = now != self._seen
        self._seen = now
        return changed

    def take(self) -> SlowCommand | None:
        if not self.pending:
            return None
        self.pending = False
        return read_command(self.path)
