"""Which bmv2 builds the testbed can drive, told apart before any switch starts."""

import os
import stat

import pytest

from testbed import targets


def _fake(directory, name, help_text, code=0):
    path = directory / name
    path.write_text(f"#!/bin/sh\ncat <<'END'\n{help_text}\nEND\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    targets._help_text.cache_clear()
    yield tmp_path
    targets._help_text.cache_clear()


def _bmv2(directory, grpc_help="  --thrift-port arg  TCP port", cli_help="usage: [--thrift-port THRIFT_PORT]"):
    _fake(directory, "simple_switch_grpc", grpc_help)
    _fake(directory, "p4c-bm2-ss", "p4c-bm2-ss")
    _fake(directory, "simple_switch_CLI", cli_help)


def test_a_thrift_build_is_usable(fake_path):
    _bmv2(fake_path)
    assert targets.bmv2_problem() is None
    assert targets.effective_target("auto") == "bmv2"


def test_a_build_without_thrift_is_named_with_the_fix(fake_path):
    _bmv2(fake_path, grpc_help="  --grpc-server-addr arg")
    problem = targets.bmv2_problem()
    assert "built without Thrift" in problem and "--with-thrift" in problem
    assert str(fake_path / "simple_switch_grpc") in problem
    assert targets.effective_target("auto") == "builtin"


def test_a_cli_without_its_python_module_is_named(fake_path):
    _bmv2(fake_path, cli_help="Traceback (most recent call last):\nModuleNotFoundError: No module named 'thrift'")
    problem = targets.bmv2_problem()
    assert "simple_switch_CLI does not run" in problem and "thrift" in problem
    assert "\n" not in problem


def test_bmv2_runs_keep_their_costs_apart_from_the_builtin_ones():
    from testbed.scenario import capacity, parse_scenario

    text = ("name: t\ntopology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
            "switch: {target: %s}\nworkload: [{kind: pingall}]\n")
    assert capacity.scenario_mode(parse_scenario(text % "bmv2", "t.yaml")) == "bmv2"
    assert capacity.scenario_mode(parse_scenario(text % "builtin", "t.yaml")).split("/")[0] in ("fabric", "per_switch")
    assert capacity.load_costs("bmv2").mode == "bmv2"
