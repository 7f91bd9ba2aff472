"""`testbed shell` finds a running switch by name through the run manifests."""

import os
import sys
import subprocess

import pytest

from testbed.emulation import manifest as manifest_mod
from testbed.emulation.commands import running_switch_address
from testbed.emulation.manifest import Manifest
from testbed.emulation.switches import SwitchConfig
from testbed.errors import TestbedError


def test_switch_address_comes_from_the_manifest(tmp_path, monkeypatch):
    monkeypatch.setattr(manifest_mod, "REGISTRY_DIR", tmp_path / "registry")
    config = SwitchConfig(name="spine2", target="builtin", device_id=6, grpc_port=9564, thrift_port=9095,
                          ports={1: "spine2-eth1"}, log_file=tmp_path / "s.log")
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        m = Manifest(run_id="r1", path=tmp_path / "manifest.json")
        m.add_process(stand_in.pid, "switch spine2", config.argv())
        assert running_switch_address("spine2") == ("127.0.0.1:9564", 6)
        from testbed.scenario.model import Server  # a switch on another server: at that server's address

        there = SwitchConfig(name="leaf3", target="builtin", device_id=3, grpc_port=9553, thrift_port=9093,
                             ports={1: "leaf3-eth1"}, log_file=tmp_path / "l.log", address="192.0.2.7")
        m.add_server(Server("right", "192.0.2.7", "root"), None)
        m.add_process(4242, "switch leaf3", there.argv(), "root@192.0.2.7", 99)
        assert running_switch_address("leaf3") == ("192.0.2.7:9553", 3)
        with pytest.raises(TestbedError, match="no running switch named 'leaf9'"):
            running_switch_address("leaf9")
    finally:
        stand_in.kill()


def test_a_switch_in_a_fabric_process_is_found_with_the_run_certificates(tmp_path, monkeypatch):
    """The default builtin mode runs switches in fabric processes: their argv are in the spec file,
    and with control_tls the shell's certificate lies beside the CA the argv names."""
    from testbed.emulation.commands import running_switch_argv
    from testbed.emulation.switches import FabricProcess
    from testbed.p4model.certs import make_run_certificates, run_client

    monkeypatch.setattr(manifest_mod, "REGISTRY_DIR", tmp_path / "registry")
    certificates = make_run_certificates(tmp_path / "certs")
    configs = [SwitchConfig(name=n, target="builtin", device_id=i, grpc_port=9550 + i, thrift_port=9090 + i,
                            ports={1: f"{n}-eth1"}, log_file=tmp_path / f"{n}.log", tls=certificates.server)
               for i, n in enumerate(["leaf1", "leaf2"], start=1)]
    process = FabricProcess(0, configs, tmp_path / "logs")
    process._prepare()  # writes the spec the process would be started with
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        m = Manifest(run_id="r2", path=tmp_path / "manifest.json")
        m.add_process(stand_in.pid, process.name, process.argv())
        assert running_switch_address("leaf2") == ("127.0.0.1:9552", 2)
        argv = running_switch_argv("leaf2")
        tls = run_client(argv[argv.index("--grpc-server-cacert") + 1], "shell")
        assert tls == certificates.client("shell")
        certificates.delete_keys()
        with pytest.raises(TestbedError, match="has the run ended"):
            run_client(certificates.ca, "shell")
    finally:
        stand_in.kill()
