"""The p4runtime-shell session of tests/integration, against bmv2's simple_switch_grpc
(compiled with p4c-bm2-ss).  Skipped by tests/conftest.py where bmv2 is missing."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "integration"))
import p4rt_shell_script  # noqa: E402
from switch_net import PROGRAMS, SwitchNet  # noqa: E402

pytestmark = [pytest.mark.bmv2, pytest.mark.integration]
GRPC_PORT = 59559


def test_p4runtime_shell_session_on_bmv2(tmp_path):
    program = PROGRAMS / "switch_l3_cpu.p4"
    subprocess.run(["p4c-bm2-ss", "--arch", "v1model", "-o", str(tmp_path / "prog.json"),
                    "--p4runtime-files", str(tmp_path / "prog.p4info.txtpb"), str(program)], check=True)
    net = SwitchNet(hosts=2)
    bmv2 = None
    try:
        argv = ["simple_switch_grpc", "--device-id", "1", "--log-file", str(tmp_path / "bmv2")]
        for n in net.hosts:
            argv += ["-i", f"{n}@{net.port_if(n)}"]
        argv += ["--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{GRPC_PORT}", "--cpu-port", "255"]
        bmv2 = subprocess.Popen(argv)
        import socket
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", GRPC_PORT)) == 0:
                    break
            time.sleep(0.1)
        facts = p4rt_shell_script.run(net, f"127.0.0.1:{GRPC_PORT}", tmp_path / "prog.p4info.txtpb",
                                      tmp_path / "prog.json")
        p4rt_shell_script.check(facts)
    finally:
        if bmv2 is not None:
            bmv2.terminate()
            bmv2.wait(10)
        net.close()
