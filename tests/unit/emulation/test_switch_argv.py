"""Both targets start from one argv shape: common options, `--`, target options."""

import sys
from pathlib import Path

import pytest

from testbed.emulation import switches
from testbed.emulation.switches import SwitchConfig, SwitchStartError, resolve_target


def config(target):
    return SwitchConfig(name="leaf1", target=target, device_id=3, grpc_port=9561, thrift_port=9092,
                        ports={2: "leaf1-eth2", 1: "leaf1-eth1"}, log_file=Path("/tmp/l.log"),
                        cpu_port=255, priority_queues=2, tm_commands=["set_port_rate_bps 20000000"])


def test_builtin_and_bmv2_share_the_argv_shape():
    builtin, bmv2 = config("builtin").argv(), config("bmv2").argv()
    assert builtin[:3] == [sys.executable, "-m", "testbed.p4model.switch"]
    assert bmv2[0] == "simple_switch_grpc"
    # everything but the executable and our extras (packet path, TM commands) is identical
    assert builtin[3:builtin.index("--backend")] == bmv2[1:]
    assert builtin[builtin.index("--backend") + 1] == "python"
    common, target = bmv2[1:bmv2.index("--")], bmv2[bmv2.index("--") + 1:]
    assert common[:4] == ["-i", "1@leaf1-eth1", "-i", "2@leaf1-eth2"], "ports in ascending order"
    assert "--no-p4" in common and "--device-id" in common and "--thrift-port" in common
    assert target == ["--grpc-server-addr", "127.0.0.1:9561", "--priority-queues", "2", "--cpu-port", "255"]
    assert builtin[-2:] == ["--tm", "set_port_rate_bps 20000000"]


def test_target_resolution(monkeypatch):
    monkeypatch.setattr(switches, "bmv2_problem", lambda: "simple_switch_grpc not on PATH")
    assert resolve_target("auto") == "builtin"
    with pytest.raises(SwitchStartError, match="bmv2, but simple_switch_grpc not on PATH"):
        resolve_target("bmv2")
    with pytest.raises(SwitchStartError, match="unknown switch target"):
        resolve_target("tofino")
    monkeypatch.setattr(switches, "bmv2_problem", lambda: None)
    assert resolve_target("auto") == "bmv2"
    assert resolve_target("builtin") == "builtin"


def test_a_builtin_switch_in_its_own_process_samples_its_ports_itself():
    c = config("builtin")
    c.telemetry_file, c.telemetry_interval_s = Path("/tmp/leaf1.telemetry.jsonl"), 0.25
    argv = switches.SwitchProcess(c).argv()
    assert argv[-4:] == ["--telemetry-file", "/tmp/leaf1.telemetry.jsonl", "--telemetry-interval", "0.25"]
    assert "--telemetry-file" not in c.options()  # a fabric process has one file for all its switches
    c = config("bmv2")
    c.telemetry_file = Path("/tmp/leaf1.telemetry.jsonl")  # simple_switch_grpc has no such option
    assert "--telemetry-file" not in switches.SwitchProcess(c).argv()
    assert switches.SwitchProcess(c).telemetry_file is None


def test_a_dead_process_says_why_with_its_last_words(tmp_path):
    """A switch process that died (an engine that would not build, say) is named with its exit code
    and the last lines of its output; a running one, or one never started, has no death."""
    process = switches.FabricProcess(0, [config("builtin")], tmp_path)
    assert process.death() is None  # never started
    process._prepare()
    import subprocess
    with open(process._stdout_path, "wb") as out:
        process.process = subprocess.Popen([sys.executable, "-c", "import sys, time; print('native build of engine.c "
                                            "failed: generated.c:1: error', flush=True); sys.exit(3)"], stdout=out)
    process.process.wait()
    dead = process.death()
    assert isinstance(dead, SwitchStartError)
    assert str(dead).startswith("fabric0 exited with code 3; its output ")
    assert str(dead).rstrip().endswith("native build of engine.c failed: generated.c:1: error")
    process.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert process.death() is None  # running
    finally:
        process.process.kill()
        process.process.wait()


def test_control_tls_gives_both_targets_bmv2s_tls_flags(tmp_path):
    """switch.control_tls: the scenario field, and the flags each switch process is started with."""
    from testbed.p4model.certs import make_run_certificates
    from testbed.scenario import ScenarioError, parse_scenario

    minimal = "topology: {kind: leaf_spine}\nworkload: [{kind: pingall}]\n"
    assert not parse_scenario(minimal).switch.control_tls
    assert parse_scenario(minimal + "switch: {control_tls: true}\n").switch.control_tls
    with pytest.raises(ScenarioError, match="control_tls"):
        parse_scenario(minimal + "switch: {control_tls: maybe}\n", "tls.yaml")
    server = make_run_certificates(tmp_path / "certs").server
    for target in ("builtin", "bmv2"):
        c = config(target)
        c.tls = server
        argv = c.argv()
        after = argv[argv.index("--") + 1:]
        flags = ["--grpc-server-ssl", "--grpc-server-cert", str(server.cert), "--grpc-server-key", str(server.key),
                 "--grpc-server-cacert", str(server.ca), "--grpc-server-with-client-auth"]
        start = after.index("--grpc-server-ssl")
        assert after[start:start + len(flags)] == flags, target
    assert "--grpc-server-ssl" not in config("bmv2").argv()  # off by default
