"""Pushing pipelines and plans to running switches, all switches in parallel.

The device config differs per target: bmv2 takes the JSON that p4c-bm2-ss
compiles; the builtin target takes the program's preprocessed source text
(self-contained: includes expanded), which it compiles itself.  The P4Info
is the same shape for both.  Traffic-manager settings go to the builtin
switch's control port, or to bmv2's simple_switch_CLI (which has no
propagation delay: that is reported, not silently dropped).
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from testbed.bmv2_cli import Bmv2CliError, run_lines
from testbed.control.p4runtime_client import P4RuntimeClient
from testbed.control.plan import SwitchPlan
from testbed.errors import TestbedError
from testbed.targets import bmv2_queue_rate_pps

WRITE_BATCH = 200


class ControlError(TestbedError):
    """A switch that could not be configured."""


@dataclass
class PipelineConfig:
    p4info: p4info_pb2.P4Info
    device_config: bytes
    target: str


def build_pipeline_config(target: str, program: Path, workdir: Path) -> PipelineConfig:
    if target == "bmv2":
        return _bmv2_config(program, workdir)
    from testbed.p4model.frontend import load_program
    from testbed.p4model.frontend.preprocess import Preprocessor
    from testbed.p4model.p4info import generate

    p4info = generate(load_program(program))
    text = Preprocessor().run(program).text
    return PipelineConfig(p4info, text.encode(), target)


def _bmv2_config(program: Path, workdir: Path) -> PipelineConfig:
    workdir.mkdir(parents=True, exist_ok=True)
    json_path = workdir / (program.stem + ".json")
    p4info_path = workdir / (program.stem + ".p4info.txtpb")
    argv = ["p4c-bm2-ss", "--p4v", "16", "--p4runtime-files", str(p4info_path), "-o", str(json_path), str(program)]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise ControlError(f"p4c-bm2-ss could not compile {program} (exit {result.returncode}): "
                           f"{result.stderr.strip()[-2000:]}")
    p4info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    return PipelineConfig(p4info, json_path.read_bytes(), "bmv2")


def bmv2_tm_lines(plan: SwitchPlan, cell_wire_bytes: int) -> tuple[list[str], list[str]]:
    """The plan's traffic-manager lines in simple_switch_CLI words, and notes on
    what bmv2 cannot model: its rates are packets/s (converted at the cell's
    wire size) and it has no propagation delay."""
    lines, notes = [], []
    for line in plan.tm_commands:
        command, *args = line.split()
        if command == "set_port_rate_bps":
            lines.append(f"set_queue_rate {bmv2_queue_rate_pps(int(args[0]), cell_wire_bytes)} {args[1]}")
        elif command == "set_port_delay_us":
            notes.append("bmv2 has no link delay: the switches' set_port_delay_us lines were not sent "
                         "(the report's link line says what bmv2 ran)")
        else:
            lines.append(line)
    return lines, sorted(set(notes))


def apply_tm(target: str, plan: SwitchPlan, thrift_port: int, cell_wire_bytes: int, tls=None) -> list[str]:
    """Send the plan's traffic-manager lines; returns notes on what a target could not do.
    `tls`: the run's client certificate (p4model/tls.ClientTls) where the control port takes only it."""
    if target == "builtin":
        from testbed.p4model.tm.control import SwitchControlClient

        with SwitchControlClient("127.0.0.1", thrift_port, tls=tls) as control:
            for line in plan.tm_commands:
                reply = control.request(line)
                if not reply.get("ok"):
                    raise ControlError(f"{plan.switch}: traffic manager refused {line!r}: {reply.get('error')}")
        return []
    lines, notes = bmv2_tm_lines(plan, cell_wire_bytes)
    try:
        run_lines(plan.switch, thrift_port, lines)
    except Bmv2CliError as error:
        raise ControlError(str(error)) from None
    return notes


def configure_switch(client: P4RuntimeClient, config: PipelineConfig, plan: SwitchPlan) -> None:
    client.connect()
    client.set_pipeline(config.p4info, config.device_config)
    defaults = [e for e in plan.entries if e.is_default]
    regular = [e for e in plan.entries if not e.is_default]
    for start in range(0, len(regular), WRITE_BATCH):
        client.insert(regular[start:start + WRITE_BATCH])
    client.insert(defaults)
    for meter in plan.meters:
        client.write_meter(meter.meter, meter.index, meter.cir, meter.cburst, meter.pir, meter.pburst)


def configure_all(jobs: list[tuple[P4RuntimeClient, PipelineConfig, SwitchPlan]]) -> None:
    """Configure every switch in parallel; the first failure is raised with its switch named."""
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(jobs)))) as pool:
        futures = [pool.submit(configure_switch, *job) for job in jobs]
        for future in futures:
            future.result()
