"""A fabric process as a user sees it: two switches in one process, a cable in memory
between them, each switch driven by its own p4runtime-shell session, with its own log and
pcaps, and the cable's delay in the pings' round trip."""

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from switch_net import PROGRAMS, REPO, SwitchNet, host_mac, p4info_file  # noqa: E402

pytestmark = pytest.mark.integration
READY = re.compile(r"fabric ready: 2 switches, 1 links in memory, grpc (\d+)\.\.(\d+)")
DELAY_US = 20_000  # each direction of the cable in memory


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def install_routes(grpc_addr, p4info, program, routes, device_id):
    """One p4runtime-shell session: each (prefix, port, dst MAC) into MyIngress.ipv4_lpm."""
    import p4runtime_sh.shell as sh

    sh.setup(device_id=device_id, grpc_addr=grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info), str(program)), verbose=False)
    try:
        for prefix, port, mac in routes:
            te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.set_nhop")
            te.match["hdr.ipv4.dstAddr"] = prefix
            te.action["dstAddr"] = mac
            te.action["port"] = str(port)
            te.insert()
        return len(list(sh.TableEntry("MyIngress.ipv4_lpm").read()))
    finally:
        sh.teardown()


@pytest.mark.parametrize("backend", ["python", "native"])
def test_two_switches_in_one_process_forward_over_a_cable_in_memory(tmp_path, backend):
    """On the Python loop and on the native engine, each with its pcaps."""
    from testbed.p4model.backend.native import compiler

    if backend == "native" and compiler() is None:
        pytest.skip("no C compiler: no native engine")
    program = PROGRAMS / "basic_ipv4.p4"
    p4info = p4info_file(program, tmp_path)
    net = SwitchNet(hosts=2)
    fabric = None
    try:
        grpc = dict(zip(("sa", "sb"), free_ports(2)))

        def switch(name, device_id, iface):
            return {"name": name, "links": {"2": {"peer": "sb" if name == "sa" else "sa", "peer_port": 2,
                                                  "name": f"{name}-eth2"}},
                    "argv": ["-i", f"1@{iface}", "--device-id", str(device_id), "--thrift-port", "0",
                             "--log-file", str(tmp_path / f"{name}.log"), "--log-level", "info",
                             "--pcap", str(tmp_path / "pcap" / name),
                             "--backend", backend, "--no-p4", "--",
                             "--grpc-server-addr", f"127.0.0.1:{grpc[name]}", "--tm", f"set_port_delay_us {DELAY_US} 2"]}
        for name in ("sa", "sb"):
            (tmp_path / "pcap" / name).mkdir(parents=True)
        spec = tmp_path / "fabric.json"
        spec.write_text(json.dumps({"log_file": str(tmp_path / "fabric.log"),
                                    "switches": [switch("sa", 1, net.port_if(1)), switch("sb", 2, net.port_if(2))]}))
        fabric = subprocess.Popen([sys.executable, "-m", "testbed.p4model.fabric", str(spec)], cwd=REPO,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = fabric.stdout.readline()
        match = READY.search(line)
        assert match, f"{line!r} {fabric.stderr.read()[-2000:] if fabric.poll() is not None else ''}"
        assert (int(match.group(1)), int(match.group(2))) == tuple(sorted(grpc.values()))
        assert line.rstrip().endswith(f"{backend} packet path"), line
        # Each switch has its own P4Runtime endpoint.
        assert install_routes(f"127.0.0.1:{grpc['sa']}", p4info, program,
                              [("10.0.1.0/24", 1, host_mac(1)), ("10.0.2.0/24", 2, host_mac(2))], 1) == 2
        assert install_routes(f"127.0.0.1:{grpc['sb']}", p4info, program,
                              [("10.0.2.0/24", 1, host_mac(2)), ("10.0.1.0/24", 2, host_mac(1))], 2) == 2
        ping = net.exec(1, "ping", "-c", "5", "-i", "0.2", "-W", "2", "10.0.2.1", check=False)
        assert ping.returncode == 0, ping.stdout + ping.stderr
        rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", ping.stdout)]
        assert len(rtts) == 5 and min(rtts) >= 2 * DELAY_US / 1000, rtts  # the cable's delay, both ways
        assert max(rtts) < 2 * DELAY_US / 1000 + 30, rtts
        fabric.terminate()
        assert fabric.wait(15) == 0, fabric.stderr.read()[-2000:]
        for name in ("sa", "sb"):  # each switch's own log and pcaps, the cable's included
            log = (tmp_path / f"{name}.log").read_text()
            assert "pipeline installed" in log, log[-2000:]
            cable = tmp_path / "pcap" / name / f"{name}-eth2_out.pcap"
            assert cable.exists() and cable.stat().st_size >= 24 + 5 * (16 + 98), sorted(
                p.name for p in (tmp_path / "pcap" / name).iterdir())
            assert (tmp_path / "pcap" / name / f"{name}-eth2_in.pcap").stat().st_size >= 24 + 5 * (16 + 98)
    finally:
        if fabric is not None and fabric.poll() is None:
            fabric.kill()
            fabric.wait(5)
        net.close()
