"""The agent's NIC obeys PFC: a paused port holds its data, XON or the guard's end sends it.

Agents run on loopback; the pause frames arrive on a socket pair standing in
for the port's raw socket, or (as root) on a real veth pair."""

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import uuid

import pytest

from testbed.host import agent as agent_module
from testbed.host import records, workloads
from testbed.host.agent import Agent, AgentError
from testbed.host.config import TransportConfig
from testbed.cells import pfc as frame

from conftest import run_agents

RATE = 20e6
MAC = bytes.fromhex("020000000001")
HOSTS = {"h1": "127.0.9.1", "h2": "127.0.9.2"}
MESSAGE = 60_000  # about 25 ms at 20 Mbit/s
GUARD_S = 0.2  # the XOFF of a pause that is never XONed


def make_agents(tmp_path, interface: str, link_delay_s: float) -> list[Agent]:
    cfg = TransportConfig(cc="none", link_rate_bps=RATE, bdp_cells=16)
    wl = [workloads.MessageSpec("h1", "h2", 0, MESSAGE)]
    return [Agent(n, a, HOSTS, wl, cfg, tmp_path / "rec", seed=3, grace_s=0.2, timeout_s=20.0,
                  link_delay_s=link_delay_s, nic_interfaces=[interface if n == "h1" else f"{n}-eth0"],
                  pfc=n == "h1") for n, a in HOSTS.items()]


def run_paused(tmp_path, agents, inject, xon_after_s: float | None, look_at_s: float) -> dict:
    """Run the agents with h1's port paused from the start; at `look_at_s` check that nothing
    got through, and XON at `xon_after_s` (None: let the guard end the pause)."""
    h1, h2 = agents
    quanta = frame.XOFF_QUANTA if xon_after_s is not None else round(GUARD_S * RATE / frame.QUANTUM_BITS)
    inject(frame.build(MAC, 0, True, quanta))
    seen = {}

    def during_the_pause():
        time.sleep(look_at_s)
        seen.update(held=len(h1.pause_gates[0].held), delivered=h2.ep.in_order_cells)
        if xon_after_s is not None:
            time.sleep(xon_after_s - look_at_s)
            inject(frame.build(MAC, 0, False))

    watcher = threading.Thread(target=during_the_pause)
    watcher.start()
    results = run_agents(agents)
    watcher.join()
    assert {n: r.reason for n, r in results.items()} == {"h1": "done", "h2": "done"}
    got = [r for r in records.read_jsonl(tmp_path / "rec" / "h2.jsonl") if r["kind"] == "message_delivered"]
    assert len(got) == 1 and got[0]["verified"]
    assert seen["held"] > 0 and seen["delivered"] == 0, seen
    return json.loads((tmp_path / "rec" / "h1.stats.json").read_text())


@pytest.fixture
def paired_socket(monkeypatch):
    """The port's raw socket replaced by one end of a datagram socket pair; the other end injects."""
    port_end, injector = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    opened = []

    def fake_open(interface):
        opened.append(interface)
        port_end.setblocking(False)
        return port_end

    monkeypatch.setattr(agent_module, "open_pause_socket", fake_open)
    yield injector.send, opened
    injector.close()
    port_end.close()


@pytest.mark.parametrize("link_delay_s", [0.0, 0.0005])
def test_xon_releases_what_the_pause_held(tmp_path, paired_socket, link_delay_s):
    inject, opened = paired_socket
    agents = make_agents(tmp_path, "h1-eth0", link_delay_s)
    assert opened == ["h1-eth0"] and agents[1].pause_gates is None
    inject(b"not a pause frame")
    stats = run_paused(tmp_path, agents, inject, xon_after_s=0.3, look_at_s=0.2)
    pfc = stats["pfc"]
    assert (pfc["xoff_frames"], pfc["xon_frames"], pfc["malformed_frames"]) == (1, 1, 1)
    assert 0.25 < pfc["paused_s"] < 0.6
    assert pfc["held_cells_max"] > 0 and pfc["held_cells_now"] == 0
    assert pfc["ports"]["h1-eth0"]["xoff_frames"] == 1
    h2_stats = json.loads((tmp_path / "rec" / "h2.stats.json").read_text())
    assert h2_stats["pfc"] is None


def test_the_guards_end_releases_the_held_cells_without_an_xon(tmp_path, paired_socket):
    inject, _ = paired_socket
    stats = run_paused(tmp_path, make_agents(tmp_path, "h1-eth0", 0.0005), inject,
                       xon_after_s=None, look_at_s=0.1)
    assert stats["pfc"]["xon_frames"] == 0
    assert stats["pfc"]["paused_s"] == pytest.approx(GUARD_S, abs=0.001)


def test_pfc_on_a_missing_interface_says_which_and_why(tmp_path):
    with pytest.raises(AgentError, match=r"tbnosuch0.*(No such device|root)"):
        make_agents(tmp_path, "tbnosuch0", 0.0)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind((HOSTS["h1"], 4793))  # the failed agent left nothing bound


@pytest.fixture
def veth_pair():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make a veth pair and open raw sockets")
    a, b = f"tp{uuid.uuid4().hex[:6]}a", f"tp{uuid.uuid4().hex[:6]}b"
    try:
        subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
        for name in (a, b):
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
        yield a, b
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


def test_real_pause_frames_on_a_veth_pause_and_resume_the_port(tmp_path, veth_pair):
    port, tor = veth_pair
    agents = make_agents(tmp_path, port, 0.0005)
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tor_side:
        tor_side.bind((tor, 0))
        stats = run_paused(tmp_path, agents, tor_side.send, xon_after_s=0.3, look_at_s=0.2)
    assert (stats["pfc"]["xoff_frames"], stats["pfc"]["xon_frames"]) == (1, 1)
    assert 0.25 < stats["pfc"]["paused_s"] < 0.6
    assert agents[0]._pause_socks[0].fileno() == -1  # closed by run()


def test_the_cli_flag_turns_pfc_on(tmp_path, capsys):
    from testbed.cli import main

    (tmp_path / "peers.json").write_text(json.dumps(HOSTS))
    (tmp_path / "wl.json").write_text(json.dumps({"seed": 1, "messages": []}))
    argv = ["host", "--name", "h1", "--addr", HOSTS["h1"], "--peers-file", str(tmp_path / "peers.json"),
            "--workload-file", str(tmp_path / "wl.json"), "--records", str(tmp_path / "rec"),
            "--nic-interfaces", "tbnosuch0", "--grace-s", "0", "--timeout-s", "0.5"]
    assert main(argv) == 0  # without --pfc the missing interface is never opened
    assert main(argv + ["--pfc"]) == 1
    err = capsys.readouterr().err
    assert "PFC" in err and "tbnosuch0" in err, err
