"""--pcap writes per-port, per-direction pcaps tcpdump reads; -L debug logs each packet."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from test_switch_robustness import pings, routes  # noqa: E402
from switch_net import PROGRAMS, SwitchNet  # noqa: E402

pytestmark = pytest.mark.integration


def test_pcaps_and_debug_log(tmp_path):
    net = SwitchNet(hosts=2, tag=f"p{__import__('os').getpid() % 1000}")
    try:
        net.start_switch(tmp_path, extra=["--pcap", str(tmp_path / "pcap"), "-L", "debug"],
                         program=PROGRAMS / "switch_l3_cpu.p4")
        routes(net)
        assert pings(net)
        assert net.stop_switch() == 0
        for name in (f"{net.port_if(1)}_in.pcap", f"{net.port_if(2)}_out.pcap"):
            out = subprocess.run(["tcpdump", "-n", "-r", str(tmp_path / "pcap" / name)],
                                 capture_output=True, text=True)
            assert out.returncode == 0, out.stderr
            assert out.stdout.count("ICMP echo request") >= 3, out.stdout
        log = net.log_path.read_text()
        assert "port 1 in 98 B: -> port 2 prio 0 queued behind 0" in log
    finally:
        net.close()
