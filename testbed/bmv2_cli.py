"""bmv2's Thrift CLI (simple_switch_CLI) as a function call, for what P4Runtime lacks.

Shared by the layers that drive bmv2: the controller (queue rates and
depths), telemetry (the queue peak register, which bmv2's P4Runtime server
will not read) and the STF runner (table entries on plain simple_switch).
One CLI process per batch of lines, because every start costs about half a
second.

The CLI exits 0 whatever happens and prints errors as text; it prints one
"RuntimeCmd: " prompt before each command it reads, so its output splits
into one answer per line sent, and an answer saying Error, Invalid or
exception is that line's refusal.
"""

from __future__ import annotations

import re
import subprocess

from testbed.errors import TestbedError
from testbed.targets import BMV2_CLI

PROMPT = "RuntimeCmd: "
CLI_TIMEOUT_S = 60


class Bmv2CliError(TestbedError):
    """simple_switch_CLI could not run, or refused a line."""


def ask(switch: str, thrift_port: int, lines: list[str], timeout_s: float = CLI_TIMEOUT_S) -> list[str]:
    """Each line's answer, in order, refusals included (see `refused`); raises only
    when the CLI itself did not run or answered fewer lines than it was sent."""
    if not lines:
        return []
    try:
        result = subprocess.run([BMV2_CLI, "--thrift-port", str(thrift_port)], input="\n".join(lines) + "\n",
                                capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Bmv2CliError(f"{switch}: {BMV2_CLI} --thrift-port {thrift_port} did not run: {error}") from None
    answers = result.stdout.split(PROMPT)[1:]
    if result.returncode != 0 or len(answers) < len(lines):
        detail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
        raise Bmv2CliError(f"{switch}: {BMV2_CLI} --thrift-port {thrift_port} failed "
                           f"(exit {result.returncode}): {detail[0]}")
    return [a.strip() for a in answers[:len(lines)]]


def refused(answer: str) -> bool:
    return "Error" in answer or "Invalid" in answer or "exception" in answer.lower()


def run_lines(switch: str, thrift_port: int, lines: list[str]) -> list[str]:
    """Each line's answer, in order; raises on the first refused line, naming it."""
    answers = ask(switch, thrift_port, lines)
    for line, answer in zip(lines, answers):
        if refused(answer):
            raise Bmv2CliError(f"{switch}: {BMV2_CLI} refused {line!r}: {answer.splitlines()[-1]}")
    return answers


def parse_register(name: str, answer: str) -> dict[int, int]:
    """`register_read NAME` (whole array) -> index -> value."""
    match = re.search(rf"^{re.escape(name)}=\s*(.*)$", answer, re.MULTILINE)
    if match is None:
        raise Bmv2CliError(f"register_read {name}: unexpected answer {answer[:80]!r}")
    text = match.group(1).strip()
    return {i: int(v) for i, v in enumerate(text.split(","))} if text else {}


def read_and_reset_register(switch: str, thrift_port: int, name: str) -> dict[int, int]:
    """A register's whole array, then zeroed, in one CLI call (the cells that are not zero)."""
    answers = run_lines(switch, thrift_port, [f"register_read {name}", f"register_reset {name}"])
    return {i: v for i, v in parse_register(name, answers[0]).items() if v}
