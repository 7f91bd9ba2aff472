"""Host transport speed: simulated cells per wall second, codec rate, and the UDP agent's CPU per
datagram: two agents on loopback, each in its own process, at 5 Mbit/s with a 2.5 ms host-link
delay (the NIC's timed send queue), 1 MiB each way, as an agent runs inside an emulated fabric.

And the two floors an agent's CPU per datagram in a run is held against: the transport's own
(benchmarks/transport_floor.py: fattree.yaml's 16 hosts in one process, no I/O) and the kernel's
(benchmarks/udp_floor.py: C, UDP over a veth pair between two namespaces, at one host's datagram
rate and at a group of 8 hosts'). Their sum is the least an agent can cost per datagram in-run."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import transport_floor, udp_floor
from testbed.cells import wire

from testbed.host import workloads
from testbed.host.config import TransportConfig
from testbed.simulation.sim import LinkSpec, star


def _incast(cc: str) -> str:
    cfg = TransportConfig(cc=cc, link_rate_bps=100e6, bdp_cells=16)
    spec = LinkSpec(rate_bps=100e6, delay_s=cfg.rtt_s / 4 - cfg.cell_time_s / 2, buffer_cells=32,
                    ecn=(3.2, 16, 0.2))
    net = star(9, cfg, spec)
    net.load(workloads.incast([f"h{i}" for i in range(1, 9)], "h9", 256 * 1024))
    started = time.perf_counter()
    net.run(10.0)
    wall = time.perf_counter() - started
    cells = sum(p.stats.tx_packets for p in net.ports)
    done_ms = max(r["delivered_us"] for r in net.records() if r["kind"] == "message_delivered") / 1e3
    return (f"sim incast 8:1 {cc}: {cells / wall:,.0f} packet-hops/s, {net.sim.events / wall:,.0f} events/s, "
            f"incast done at virtual {done_ms:.1f} ms, wall {wall * 1e3:.0f} ms, max queue "
            f"{net.max_queue_cells():.1f} cells, drops {net.drops()} packets")


def _codec() -> str:
    cell = wire.CellPacket(type=wire.DATA, flow_id=1, msg_id=2, psn=3, aux=4096, body=bytes(1024))
    n = 50_000
    started = time.perf_counter()
    for _ in range(n):
        wire.decode(wire.encode(cell), 1024)
    wall = time.perf_counter() - started
    return f"wire encode+decode: {n / wall:,.0f} cells/s ({wall / n * 1e6:.2f} us/cell)"


PAIR = {"h1": "127.0.0.12", "h2": "127.0.0.13"}


def _pair_agent(name: str, epoch: float, records_dir: str) -> None:
    """One agent of the loopback pair; prints its CPU per datagram sent or received, split into the
    packet loop's thread and the process (the native NIC's sending thread is the difference)."""
    from testbed.host.agent import Agent
    specs = [workloads.MessageSpec("h1", "h2", 0, 1 << 20), workloads.MessageSpec("h2", "h1", 0, 1 << 20)]
    cfg = TransportConfig(cc="tita", link_rate_bps=5e6, bdp_cells=16)
    agent = Agent(name, PAIR[name], PAIR, specs, cfg, Path(records_dir), seed=1, port=4901, grace_s=0.3,
                  timeout_s=60, epoch=epoch, link_delay_s=2.5e-3)
    thread0, ru0 = time.thread_time(), resource.getrusage(resource.RUSAGE_SELF)
    result = agent.run()
    thread, ru1 = time.thread_time() - thread0, resource.getrusage(resource.RUSAGE_SELF)
    stats = json.loads((Path(records_dir) / f"{name}.stats.json").read_text())
    datagrams = stats["tx_datagrams"] + stats["rx_datagrams"]
    user, system = ru1.ru_utime - ru0.ru_utime, ru1.ru_stime - ru0.ru_stime
    print(json.dumps({"name": name, "reason": result.reason, "datagrams": datagrams, "wakeups": agent.wakeups,
                      "us": (user + system) * 1e6 / datagrams, "loop_us": thread * 1e6 / datagrams,
                      "user_us": user * 1e6 / datagrams, "sys_us": system * 1e6 / datagrams}))


def _agent_pair() -> list[str]:
    epoch = time.time() + 0.5
    with tempfile.TemporaryDirectory() as records_dir:
        procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.host_bench", "agent", name, str(epoch),
                                   records_dir], stdout=subprocess.PIPE, text=True) for name in PAIR]
        outs = [json.loads(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    return [f"agent {o['name']} on loopback (5 Mbit/s, 2.5 ms host link, tita): {o['us']:.1f} CPU us/datagram "
            f"(packet loop {o['loop_us']:.1f}, user {o['user_us']:.1f}, system {o['sys_us']:.1f}), "
            f"{o['datagrams']} datagrams, {o['wakeups'] / o['datagrams']:.2f} loop wake-ups per datagram, "
            f"{o['reason']}" for o in outs]


def _floors() -> list[str]:
    """The transport floor for fattree.yaml's cc (none) and for tita; the kernel floor at one host's
    datagram rate at 5 Mbit/s (600/s) and at eight hosts' (4,800/s), one datagram per wake-up, and
    at 600/s with 8 per wake-up, which splits it into per wake-up and per datagram; and the sums."""
    drives = {cc: transport_floor.median_drive(cc) for cc in ("none", "tita")}
    lines = [transport_floor.line(*drives[cc]) for cc in drives]
    broken = [line for (drive, _low, _high), line in zip(drives.values(), lines) if not drive.complete]
    if broken:  # a floor that lost messages measures nothing: the benchmark fails
        raise RuntimeError("; ".join(broken))
    try:
        one_host, eight_hosts, batched = udp_floor.measure_all(((600, 1), (4800, 1), (600, 8)))
    except udp_floor.FloorUnavailable as why:
        return lines + [f"kernel UDP floor: skipped: {why}"]
    lines += [udp_floor.line(f) for f in (one_host, eight_hosts, batched)]
    lines.append(udp_floor.split_line(one_host, batched))
    kernel = one_host.mean_us
    for cc, (drive, _low, _high) in drives.items():
        lines.append(f"agent floor, cc={cc}, one wake-up per datagram: transport {drive.us_per_datagram:.1f} + kernel "
                     f"at {one_host.rate:,.0f}/s {kernel:.1f} = {drive.us_per_datagram + kernel:.1f} CPU us per "
                     "datagram sent or received")
    return lines


def run() -> list[str]:
    return [_codec()] + [_incast(cc) for cc in ("tita", "dcqcn", "none")] + _floors() + _agent_pair()


if __name__ == "__main__" and sys.argv[1:2] == ["agent"]:
    _pair_agent(sys.argv[2], float(sys.argv[3]), sys.argv[4])
