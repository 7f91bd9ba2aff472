"""Every float option of `testbed`: nan and inf are one TestbedError line, never a traceback."""

from __future__ import annotations

import argparse

import pytest

from testbed.cli import build_parser, check_finite, main
from testbed.errors import TestbedError
from testbed.plan.hardware import PlanError, make_hardware

PLAN = ["plan", "--gpus", "8", "--switch-ports", "64"]


@pytest.mark.parametrize("argv, option", [
    (PLAN + ["--port-gbps", "nan"], "--port-gbps"),
    (PLAN + ["--port-gbps", "inf"], "--port-gbps"),
    (PLAN + ["--port-gbps", "400", "--tor-oversubscription", "nan"], "--tor-oversubscription"),
    (PLAN + ["--port-gbps", "400", "--agg-oversubscription", "inf"], "--agg-oversubscription"),
    (PLAN + ["--port-gbps", "400", "--nic-port-gbps", "nan"], "--nic-port-gbps"),
    (["sim", "scenarios/flap.yaml", "--host-rate-mbps", "nan"], "--host-rate-mbps"),
])
def test_nan_and_inf_are_one_line(argv, option, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"testbed: {option} ") and "not a finite number" in err and "\n" not in err


def _float_options():
    """(subcommand, option) for every float option the parser has."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        for action in p._actions:
            if action.type is float and action.option_strings:
                yield name, action.option_strings[-1]


def test_every_float_option_refuses_nan():
    options = list(_float_options())
    assert len(options) >= 8
    for _command, option in options:
        namespace = argparse.Namespace(**{option.lstrip("-").replace("-", "_"): float("nan")})
        with pytest.raises(TestbedError, match=f"{option} nan: not a finite number"):
            check_finite(namespace)


@pytest.mark.parametrize("kwargs", [dict(port_gbps=float("nan")), dict(port_gbps=400, switch_tbps=float("inf")),
                                    dict(port_gbps=400, tor_oversubscription=float("nan"))])
def test_make_hardware_refuses_what_is_not_finite(kwargs):
    with pytest.raises(PlanError, match="finite"):
        make_hardware(switch_ports=64, **kwargs)
