"""One p4runtime-shell session, run unchanged against the builtin switch and
against simple_switch_grpc (tests/bmv2): push the pipeline, insert / read /
delete entries, read counters, packet-out and packet-in, with real pings
through the switch between two namespaces (SwitchNet hosts 1 and 2).

`config_path` is what the target takes as p4_device_config: the .p4 source
for the builtin switch, p4c-bm2-ss's JSON for bmv2.
"""

from __future__ import annotations

import subprocess
import sys

from switch_net import SwitchNet, host_mac, install_host_routes, wait_for

RECEIVE_ONE = r"""
import socket, sys, select
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
marker = bytes.fromhex(sys.argv[2])
print("listening", flush=True)
while True:
    r, _, _ = select.select([s], [], [], 5)
    if not r:
        sys.exit(1)
    data = s.recv(65536)
    if marker in data:
        print(data.hex(), flush=True)
        sys.exit(0)
"""


def ping(net: SwitchNet, src: int, dst_ip: str, count: int = 3) -> subprocess.CompletedProcess:
    return net.exec(src, "ping", "-c", str(count), "-i", "0.2", "-W", "1", dst_ip, check=False)


def run(net: SwitchNet, grpc_addr: str, p4info_path, config_path) -> dict:
    import p4runtime_sh.shell as sh

    facts = {}
    sh.setup(device_id=1, grpc_addr=grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info_path), str(config_path)), verbose=False)
    try:
        install_host_routes(sh, net.hosts)
        te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.send_to_cpu")
        te.match["hdr.ipv4.dstAddr"] = "10.0.99.0/24"
        te.insert()
        facts["entries"] = len(list(sh.TableEntry("MyIngress.ipv4_lpm").read()))

        result = ping(net, 1, "10.0.2.1")
        facts["ping_ok"] = result.returncode == 0
        facts["ping_output"] = result.stdout

        counter = sh.CounterEntry("MyIngress.port_pkts")
        counter.index = 1
        (cell,) = list(counter.read())
        facts["port1_packets"] = cell.data.packet_count

        # packet-out to port 2: a frame with a marker arrives in host 2
        marker = bytes.fromhex("c0ffee00c0ffee")
        listener = subprocess.Popen(["ip", "netns", "exec", net.ns(2), sys.executable, "-c", RECEIVE_ONE,
                                     net.host_if(2), marker.hex()], stdout=subprocess.PIPE, text=True)
        assert listener.stdout.readline().strip() == "listening"
        frame = bytes.fromhex(host_mac(2).replace(":", "")) + bytes(6) + b"\x88\xb5" + marker + bytes(40)
        packet = sh.PacketOut(payload=frame, egress_port="2")
        for _ in range(5):
            packet.send()
            try:
                out, _ = listener.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            listener.kill()
            out, _ = listener.communicate()
        facts["packet_out_received"] = bytes.fromhex(out.strip()) if out.strip() else None
        facts["packet_out_frame"] = frame

        # packet-in: traffic for 10.0.99.0/24 goes to the controller with ingress_port and reason
        sniffer = sh.PacketIn()
        ping(net, 1, "10.0.99.9", count=2)
        messages = list(sniffer.sniff(timeout=3))
        facts["packet_ins"] = [({m.metadata_id: int.from_bytes(m.value, "big") for m in msg.packet.metadata},
                                msg.packet.payload) for msg in messages]

        for entry in list(sh.TableEntry("MyIngress.ipv4_lpm").read()):
            entry.delete()
        facts["entries_after_delete"] = len(list(sh.TableEntry("MyIngress.ipv4_lpm").read()))
        facts["ping_after_delete_ok"] = ping(net, 1, "10.0.2.1", count=1).returncode == 0
    finally:
        sh.teardown()
    return facts


def check(facts: dict) -> None:
    assert facts["entries"] == 3
    assert facts["ping_ok"], facts["ping_output"]
    assert facts["port1_packets"] >= 3
    assert facts["packet_out_received"] == facts["packet_out_frame"]
    assert facts["packet_ins"], "no PacketIn arrived"
    metadata, payload = facts["packet_ins"][0]
    assert metadata == {1: 1, 2: 1}  # ingress_port 1, reason 1
    assert payload[12:14] == b"\x08\x00" and payload[30:34] == bytes([10, 0, 99, 9])
    assert facts["entries_after_delete"] == 0
    assert not facts["ping_after_delete_ok"]
