"""placement.servers against real ssh: this machine twice, as `localhost` (no ssh, as the cluster
edition runs it) and as `127.0.0.1` over a private sshd (local_sshd.py); validate reaches both,
the capacity check plans each against the cores ssh reported, and a server whose sshd is gone is
refused with ssh's words. Nothing of the private sshd is left afterwards."""

from __future__ import annotations

import argparse
import os
import socket

import pytest

from leftovers import processes_mentioning
from local_sshd import LocalSshdUnavailable, local_sshd
from testbed.scenario import capacity, load_scenario
from testbed.scenario import servers as servers_module
from testbed.scenario.commands import run_validate
from testbed.scenario.processes import describe_placement, switch_placement

SCENARIO = """name: two-servers
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: 1}
switch: {target: builtin}
placement:
  servers:
    - {name: here, address: localhost}
    - {name: again, address: 127.0.0.1, user: root}
workload:
  - {kind: permutation, message_bytes: 20000, count: 1}
"""


def _port_of(config) -> int:
    return int(next(line.split()[1] for line in config.read_text().splitlines() if line.strip().startswith("Port")))


def test_this_machine_twice_over_ssh(tmp_path, capsys, monkeypatch):
    path = tmp_path / "two.yaml"
    path.write_text(SCENARIO)
    servers_module._FACTS.clear()
    try:
        with local_sshd() as config:
            home, port = str(config.parent), _port_of(config)
            monkeypatch.setenv("TESTBED_SSH_CONFIG", str(config))
            assert run_validate(argparse.Namespace(files=[str(path)])) == 0
            out = capsys.readouterr()
            assert out.out.startswith(f"{path}: ok (1 variant)") and not out.err
            scenario = load_scenario(str(path))
            cores = len(os.sched_getaffinity(0))
            assert [servers_module.facts(s).cores for s in scenario.servers] == [cores, cores]
            placement = switch_placement(scenario)
            assert "8 switch cables between servers" in describe_placement(scenario, placement)
            try:
                line = capacity.check(scenario)
            except capacity.CapacityError as error:
                line = str(error)
            assert "server here (localhost)" in line or "server again (root@127.0.0.1)" in line
            assert f"({cores} cores x {capacity.HEADROOM:g})" in line
    except LocalSshdUnavailable as why:
        pytest.skip(f"ssh to this machine cannot be made to work here: {why}")
    # gone: the daemon, its directory, its port
    assert not os.path.exists(home)
    assert not processes_mentioning(home)
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    # and the server it was is now refused, in one line, with ssh's words
    servers_module._FACTS.clear()
    monkeypatch.delenv("TESTBED_SSH_CONFIG")
    config = tmp_path / "ssh_config"
    config.write_text(f"Host 127.0.0.1\n  Port {port}\n  UserKnownHostsFile {tmp_path / 'known'}\n")
    monkeypatch.setenv("TESTBED_SSH_CONFIG", str(config))
    assert run_validate(argparse.Namespace(files=[str(path)])) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"{path}:8: placement.servers[1].address: server again (root@127.0.0.1) cannot be reached "
                   f"with ssh (BatchMode, ConnectTimeout 5 s): ssh: connect to host 127.0.0.1 port {port}: "
                   "Connection refused")
