"""The hardware a fabric is planned from, checked once.

The model: every switch has `switch_ports` ports of `port_gbps` each (its
radix at that speed; `switch_tbps`, when given, must equal the two
multiplied). A server holds `gpus_per_server` GPUs; each GPU has
`ports_per_gpu` NIC ports of `nic_port_gbps`, each on its own ToR. A
switch port faster than a NIC port is broken out into
`port_gbps / nic_port_gbps` host ports (a 400G port as two 200G ports).
With `planes` P > 1 the fabric is P identical, independent planes and a
GPU's NIC ports are dealt over them, so `ports_per_gpu` must be a multiple
of P. Oversubscription is the ratio of a switch's downlink to its uplink
bandwidth, per tier below the top (the top tier has no uplinks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from testbed.errors import TestbedError


class PlanError(TestbedError):
    """A hardware description or GPU count the planner cannot use."""


@dataclass(frozen=True)
class Hardware:
    switch_ports: int
    port_gbps: float
    nic_port_gbps: float
    ports_per_gpu: int = 1
    gpus_per_server: int = 8
    rail_optimised: bool = False
    planes: int = 1
    tor_oversubscription: float = 1.0
    agg_oversubscription: float = 1.0

    @property
    def breakout(self) -> int:
        """Host ports one switch port serves (1 when the speeds are equal)."""
        return round(self.port_gbps / self.nic_port_gbps)


def make_hardware(*, switch_ports: int | None, port_gbps: float, switch_tbps: float | None = None,
                  nic_port_gbps: float | None = None, ports_per_gpu: int = 1, gpus_per_server: int = 8,
                  rail_optimised: bool = False, planes: int = 1, tor_oversubscription: float = 1.0,
                  agg_oversubscription: float = 1.0) -> Hardware:
    """The checked Hardware; a PlanError names the first setting that cannot work."""
    for name, value in (("--port-gbps", port_gbps), ("--switch-tbps", switch_tbps),
                        ("--nic-port-gbps", nic_port_gbps), ("--tor-oversubscription", tor_oversubscription),
                        ("--agg-oversubscription", agg_oversubscription)):
        if value is not None and not math.isfinite(value):
            raise PlanError(f"{name} must be a finite number, not {value:g}")
    if port_gbps <= 0:
        raise PlanError(f"--port-gbps must be positive, not {port_gbps:g}")
    if switch_tbps is not None:
        if switch_tbps <= 0:
            raise PlanError(f"--switch-tbps must be positive, not {switch_tbps:g}")
        radix = switch_tbps * 1000 / port_gbps
        if abs(radix - round(radix)) > 1e-9:
            raise PlanError(f"a {switch_tbps:g} Tbit/s switch does not divide into {port_gbps:g} Gbit/s ports "
                            f"({radix:.2f} ports)")
        if switch_ports is not None and switch_ports != round(radix):
            raise PlanError(f"--switch-ports {switch_ports} disagrees with --switch-tbps {switch_tbps:g} at "
                            f"{port_gbps:g} Gbit/s per port ({round(radix)} ports)")
        switch_ports = round(radix)
    if switch_ports is None:
        raise PlanError("give the switch's radix: --switch-ports N (or --switch-tbps with --port-gbps)")
    if switch_ports < 2:
        raise PlanError(f"--switch-ports must be at least 2, not {switch_ports}")
    nic = port_gbps if nic_port_gbps is None else nic_port_gbps
    if nic <= 0:
        raise PlanError(f"--nic-port-gbps must be positive, not {nic:g}")
    if nic > port_gbps:
        raise PlanError(f"a {nic:g} Gbit/s NIC port cannot be served by a {port_gbps:g} Gbit/s switch port")
    split = port_gbps / nic
    if abs(split - round(split)) > 1e-9:
        raise PlanError(f"a {port_gbps:g} Gbit/s switch port does not break out into {nic:g} Gbit/s NIC ports")
    for name, value in (("--ports-per-gpu", ports_per_gpu), ("--gpus-per-server", gpus_per_server),
                        ("--planes", planes)):
        if value < 1:
            raise PlanError(f"{name} must be at least 1, not {value}")
    if ports_per_gpu % planes:
        raise PlanError(f"--ports-per-gpu {ports_per_gpu} cannot be dealt over {planes} planes "
                        f"(each plane takes the same number of each GPU's ports)")
    for name, value in (("--tor-oversubscription", tor_oversubscription),
                        ("--agg-oversubscription", agg_oversubscription)):
        if value < 1:
            raise PlanError(f"{name} is downlink over uplink bandwidth and must be at least 1, not {value:g}")
    return Hardware(switch_ports=switch_ports, port_gbps=port_gbps, nic_port_gbps=nic,
                    ports_per_gpu=ports_per_gpu, gpus_per_server=gpus_per_server, rail_optimised=rail_optimised,
                    planes=planes, tor_oversubscription=tor_oversubscription,
                    agg_oversubscription=agg_oversubscription)
