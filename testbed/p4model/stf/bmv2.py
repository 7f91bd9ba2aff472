"""Running STF files on bmv2's simple_switch (`testbed stf --target bmv2`).

Why: the builtin target claims simple_switch semantics; the same STF files
on the real switch check that claim (and `--target both` compares the two).

How: p4c-bm2-ss compiles the program once.  Each file gets a fresh
simple_switch with `--use-files`: it reads `p<N>_in.pcap` and writes
`p<N>_out.pcap` for every observed port.  When every control line comes
before the first packet, the inputs are plain files and simple_switch
waits START_DELAY_S seconds before reading them, in which the control
lines are sent through simple_switch_CLI (cli_commands.py); input records
are stamped in file order and bmv2's reader merges the input files by time
stamp, so packets enter in file order even across ports, back to back (one
burst).  When control lines come between packets, the input port's file is
a named pipe written phase by phase (CLI lines, then that phase's packets,
then a wait until the outputs are quiet, as the reference harness sleeps
after a CLI command); bmv2's reader would wait on every other input pipe,
so such a file must send all its packets on one port, else it is refused.
`--priority-queues N` is a target option of simple_switch: it goes after
`--`.  The run ends when the output files have stopped growing; each
observed port is then judged as on the builtin target (compare.py).

Failures say what happened in one line: a missing binary, p4c-bm2-ss's
first error, the switch's or the CLI's exit status with its first error
line (else its last line); a command the CLI refuses is a warning, as on
the builtin target.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from testbed import bmv2_cli
from testbed.errors import TestbedError
from testbed.p4model.stf.cli_commands import CliTranslator
from testbed.p4model.stf.parser import IGNORED, StfError, parse_file
from testbed.p4model.stf.result import FileResult, expectations, judge
from testbed.p4model.switch.pcap import PcapWriter

TOOLS = ("p4c-bm2-ss", "simple_switch", "simple_switch_CLI")
START_DELAY_S = 3            # --use-files: the time the CLI has before packets are read
_QUIET_S = 1.0               # outputs unchanged this long after reading began: done
_RUN_TIMEOUT_S = 60


class Bmv2Error(TestbedError):
    """The bmv2 target cannot run (binary missing, compile error, switch died)."""


def missing_tools() -> list:
    return [t for t in TOOLS if shutil.which(t) is None]


def check_tools() -> None:
    missing = missing_tools()
    if missing:
        raise Bmv2Error(f"the bmv2 target needs {', '.join(TOOLS)} on PATH; not found: "
                        f"{', '.join(missing)}")


def _key_line(text: str) -> str:
    """The first line that mentions an error, else the last line."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["(no output)"])[0 if errors else -1]


def compile_program(program: str, out_dir: Path, include=(), defines=None) -> dict:
    """p4c-bm2-ss PROGRAM -> the bmv2 JSON (raises Bmv2Error with p4c's first error)."""
    target = out_dir / (Path(program).stem + ".json")
    cmd = ["p4c-bm2-ss", "--std", "p4-16", "-o", str(target)]
    cmd += [arg for d in include for arg in ("-I", str(d))]
    cmd += [f"-D{name}" if value is None else f"-D{name}={value}"
            for name, value in (defines or {}).items()]
    result = subprocess.run([*cmd, str(program)], capture_output=True, text=True)
    if result.returncode != 0:
        raise Bmv2Error(f"p4c-bm2-ss failed on {program} (exit {result.returncode}): "
                        f"{_key_line(result.stderr or result.stdout)}")
    return json.loads(target.read_text())


def _read_output(path: Path) -> list:
    """Frames simple_switch wrote.  Its pcap header says link type 0 and
    snaplen 0 (so switch.pcap.read_pcap refuses it) and is only flushed
    with the first frame: a port that sent nothing may have an empty file."""
    data = path.read_bytes() if path.exists() else b""
    if len(data) < 24:
        return []
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
             b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\x3c\x4d": ">"}.get(data[:4])
    if order is None:
        raise Bmv2Error(f"{path}: not a pcap file")
    frames, off = [], 24
    while off + 16 <= len(data):
        _sec, _frac, caplen, _length = struct.unpack_from(order + "IIII", data, off)
        off += 16
        if off + caplen > len(data):
            break
        frames.append(data[off:off + caplen])
        off += caplen
    return frames


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Bmv2Runner:
    """STF files of one program on simple_switch; `run_file` per file."""

    def __init__(self, program: str, include=(), defines=None, priority_queues: int = 1,
                 out=sys.stdout, verbose: bool = False, start_delay: int = START_DELAY_S) -> None:
        check_tools()
        self.program = str(program)
        self.priority_queues = priority_queues
        self.out = out
        self.verbose = verbose
        self.start_delay = start_delay
        self._tmp = tempfile.TemporaryDirectory(prefix="testbed-stf-bmv2-")
        self.dir = Path(self._tmp.name)
        self.json = compile_program(self.program, self.dir, include, defines)
        (self.dir / "program.json").write_text(json.dumps(self.json))

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def say(self, text: str) -> None:
        print(text, file=self.out)

    def run_file(self, path, priority_queues: int | None = None) -> FileResult:
        """One file on a fresh simple_switch, with `priority_queues` (default: the runner's)."""
        if priority_queues is not None:
            self.priority_queues = priority_queues
        result = FileResult(str(path), "bmv2")
        try:
            commands = parse_file(path)
            observed, expected = expectations(commands)
            phases = self._phases(str(path), commands)
            workdir = Path(tempfile.mkdtemp(prefix="run-", dir=self.dir))
            received = self._run(str(path), workdir, sorted(observed), phases)
        except TestbedError as exc:
            result.error = str(exc)
            return result
        result.received = received
        result.problems = judge(observed, expected, received)
        return result

    def _phases(self, path: str, commands) -> list:
        """[(CLI lines with their STF line, input packets)]: a control line
        after packets starts a new phase.  Several phases need every packet
        on one input port (see _run_phased)."""
        translator = CliTranslator(self.json, path)
        phases = [([], [])]
        for cmd in commands:
            if cmd.kind in IGNORED or cmd.kind == "expect":
                continue
            if cmd.kind == "packet":
                phases[-1][1].append((cmd.port, bytes.fromhex(cmd.data)))
                continue
            if phases[-1][1]:
                phases.append(([], []))
            phases[-1][0].append((cmd.line, translator.command(cmd)))
        in_ports = {port for _cli, packets in phases for port, _data in packets}
        if len(phases) > 1 and len(in_ports) > 1:
            first = phases[1][0][0][0]
            raise StfError(path, first, f"a control line after packets needs every packet on "
                           f"one input port for the bmv2 runner (this file uses ports "
                           f"{', '.join(map(str, sorted(in_ports)))})")
        return phases

    def _run(self, path: str, workdir: Path, ports: list, phases: list) -> dict:
        """Start simple_switch on pcap files, feed it, stop it; port -> frames."""
        phased = len(phases) > 1
        fifo_port = None
        if phased:
            fifo_port = next(port for _cli, packets in phases for port, _d in packets)
            os.mkfifo(workdir / f"p{fifo_port}_in.pcap")
        for port in ports:
            if port == fifo_port:
                continue
            writer = PcapWriter(workdir / f"p{port}_in.pcap")
            for i, (p, data) in enumerate(phases[0][1]):
                if p == port:
                    writer.write(data, timestamp=float(1000 + i))   # file order
            writer.close()
        thrift = _free_port()
        delay = 0 if phased else self.start_delay
        argv = ["simple_switch", "--use-files", str(delay), "--thrift-port",
                str(thrift), "--device-id", "0",
                "--notifications-addr", f"ipc://{workdir}/notifications.ipc",
                *[arg for p in ports for arg in ("-i", f"{p}@p{p}")], str(self.dir / "program.json"),
                "--", "--priority-queues", str(self.priority_queues)]
        if self.verbose:
            self.say(f"{path}: {' '.join(argv)}")
        log = open(workdir / "simple_switch.log", "w+")
        switch = subprocess.Popen(argv, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
        outputs = [workdir / f"p{p}_out.pcap" for p in ports]
        try:
            if phased:
                self._run_phased(path, switch, log, thrift, workdir / f"p{fifo_port}_in.pcap",
                                 phases, outputs)
            else:
                ready = self._wait_ready(switch, thrift, log)
                self._configure(path, switch, thrift, phases[0][0], log, ready)
                self._wait_outputs(switch, outputs, ready + self.start_delay, log)
        finally:
            if switch.poll() is None:
                switch.terminate()
                try:
                    switch.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    switch.kill()
                    switch.wait()
            log.close()
        received = {}
        for port, out in zip(ports, outputs):
            received[port] = _read_output(out)
            if self.verbose:
                for data in received[port]:
                    self.say(f"{path}: packet out port {port}: {data.hex().upper()}")
        return received

    def _run_phased(self, path: str, switch, log, thrift: int, fifo: Path, phases: list,
                    outputs: list) -> None:
        """Control lines between packets: the input port's file is a named
        pipe that simple_switch opens at start-up and reads as it is written.
        Each phase's CLI lines go first, then its packets (one burst), then
        the run waits until the outputs are quiet, as the reference harness
        sleeps after a CLI command."""
        fd = self._open_fifo(switch, log, fifo)
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
            pipe.flush()
            self._wait_ready(switch, thrift, log)
            n = 0
            for cli, packets in phases:
                self._configure(path, switch, thrift, cli, log)
                for _port, data in packets:
                    n += 1
                    pipe.write(struct.pack("<IIII", 1000 + n, 0, len(data), len(data)) + data)
                pipe.flush()
                self._wait_outputs(switch, outputs, time.monotonic(), log)

    def _open_fifo(self, switch, log, fifo: Path) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if switch.poll() is not None:
                raise self._died(switch, log)
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:    # ENXIO: no reader yet
                    raise
                time.sleep(0.05)
                continue
            os.set_blocking(fd, True)
            return fd
        raise Bmv2Error(f"simple_switch did not open {fifo.name} in 30 s")

    @staticmethod
    def _died(switch, log) -> Bmv2Error:
        log.flush()
        log.seek(0)
        return Bmv2Error(f"simple_switch exited with status {switch.returncode}: "
                         f"{_key_line(log.read())}")

    def _wait_ready(self, switch, thrift: int, log) -> float:
        """Wait for the Thrift server; returns when it answered."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if switch.poll() is not None:
                raise self._died(switch, log)
            try:
                with socket.create_connection(("127.0.0.1", thrift), timeout=0.5):
                    return time.monotonic()
            except OSError:
                time.sleep(0.05)
        raise Bmv2Error(f"simple_switch did not open its Thrift port {thrift} in 30 s")

    def _configure(self, path: str, switch, thrift: int, cli: list, log,
                   ready: float | None = None) -> None:
        """Send CLI lines; with `ready`, they must be done before simple_switch
        starts reading its files (start_delay after it was ready)."""
        if not cli:
            return
        if self.verbose:
            for number, line in cli:
                self.say(f"{path}:{number}: {line}")
        try:
            replies = bmv2_cli.ask("simple_switch", thrift, [line for _n, line in cli],
                                   timeout_s=self.start_delay + 30)
        except bmv2_cli.Bmv2CliError as error:
            if switch.poll() is not None:
                raise self._died(switch, log) from None
            raise Bmv2Error(str(error)) from None
        if ready is not None:
            late = time.monotonic() - ready
            if late > self.start_delay - 0.2:
                raise Bmv2Error(f"simple_switch_CLI took {late:.1f} s, more than the "
                                f"{self.start_delay} s simple_switch waits before reading "
                                f"packets: the tables may not have been written in time")
        for (number, line), reply in zip(cli, replies):
            reply = " ".join(reply.split())
            word = line.split()[0]
            if bmv2_cli.refused(reply):
                self.say(f"{path}:{number}: warning: {word} refused by simple_switch_CLI: "
                         f"{reply}")
            elif reply and (self.verbose or word.endswith(("_read", "_get", "_get_rates"))):
                self.say(f"{path}:{number}: {reply}")

    def _wait_outputs(self, switch, outputs: list, reading: float, log) -> None:
        """Until _QUIET_S after reading began, with no output file growing for _QUIET_S."""
        deadline = time.monotonic() + _RUN_TIMEOUT_S
        last, since = None, time.monotonic()
        while time.monotonic() < deadline:
            if switch.poll() is not None:
                raise self._died(switch, log)
            sizes = [os.path.getsize(p) if p.exists() else -1 for p in outputs]
            now = time.monotonic()
            if sizes != last:
                last, since = sizes, now
            elif now >= reading + _QUIET_S and now - since >= _QUIET_S:
                return
            time.sleep(0.1)
        raise Bmv2Error(f"simple_switch was still writing packets after {_RUN_TIMEOUT_S} s")
