"""fabric.p4 on the native back end against the Python pipeline, switch by switch.

Both fabrics of a planned leaf-spine are built the same way (the controller's plan written over
the control plane); random frames (DATA, CREDIT and ACK cells with random fields, plain IPv4
UDP/TCP, IPv4 with options, truncated and random bytes, cells flagged INT) enter random switches on random ports at
increasing times, and each switch must send the same frames out of the same ports, and end with
the same registers and counters.  The credit meter is configured, so its colours are compared too.
(random() is not used: the plan's modes here are round robin and entropy, and ECN is a step.)"""

from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.targets import c_compiler

pytestmark = pytest.mark.skipif(c_compiler() is None, reason="no C compiler: no native back end")

SCENARIO = """
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links: {rate_mbps: 10, delay_us: 200}
fabric: {load_balancing: %s, credits: {enabled: true}}
workload: [{kind: pingall}]
"""


# the last: in-band telemetry on (a hop record per switch, two at most: a leaf-spine-leaf path
# overflows), so the header stack's push, the shim and the length rules are compared too
@pytest.fixture(scope="module", params=["spray_rr_entropy", "spray_rr_switch", "ecmp",
                                        "spray_rr_entropy, int: {enabled: true, sample: 2, max_hops: 2}"])
def fabrics(request):
    from testbed.emulation.model_fabric import build

    text = SCENARIO % request.param
    return build(text, backend="python"), build(text, backend="native")


def _frames(fabric, rng: random.Random) -> list[bytes]:
    from testbed.emulation.model_fabric import data_cells

    hosts = fabric.topology.hosts
    src, dst = rng.sample(hosts, 2)
    cells = data_cells(fabric, src, dst, rng.randrange(1, 15000), 4)
    out = []
    for cell in cells:
        b = bytearray(cell)
        b[42] = (b[42] & 0xF0) | rng.choice((0, 0, 1, 2, 3, 4, 5, 6, 9))  # the cell type
        if rng.random() < 0.2:
            b[43] |= 0x08  # the INT flag: whatever follows the header is read as a shim
        if rng.random() < 0.3:
            b[15] = rng.randrange(256)  # DSCP and ECN
        if rng.random() < 0.2:
            b[rng.randrange(14, len(b))] = rng.randrange(256)
        out.append(bytes(b))
    ip = struct.pack("!BBHHHBBH4s4s", 0x46, 0, 24 + 8 + 16, 1, 0, 64, 17, 0, bytes([10, 0, 1, 1]),
                     bytes([10, 0, 2, 1]))  # IPv4 with one option word
    out.append(cells[0][:14] + ip + bytes(4) + struct.pack("!HHHH", 1234, 80, 24, 0) + bytes(16))
    out.append(cells[0][:rng.randrange(0, len(cells[0]))])
    out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120))))
    return out


def _state(pipeline) -> dict:
    regs = {name: list(r.values) for name, r in pipeline.registers.items()}
    cnts = {name: (list(c.packets), list(c.bytes)) for name, c in pipeline.counters.items()}
    return {"registers": regs, "counters": cnts}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_switch_sends_the_same_frames_and_keeps_the_same_state(fabrics, seed):
    python, native = fabrics
    rng = random.Random(seed)
    forwarded = 0
    for _ in range(6):
        first = rng.choice(sorted(python.switches))
        port = rng.choice([p.number for p in python.topology.ports(first)])
        frames = [(first, port, f) for f in _frames(python, rng)]
        relayed = 0
        for name, port, frame in frames:  # grows: a forwarded frame goes on to the switch it left for
            step = rng.randrange(0, 3_000_000)
            for fabric in (python, native):
                fabric.switches[name].clock.set_ns(fabric.switches[name].clock.now_ns() + step)
            got = native.switches[name].datapath.pipeline.process(port, frame)
            want = python.switches[name].datapath.pipeline.process(port, frame)
            assert got == want, (name, port, frame.hex())
            forwarded += len(got)
            if got and relayed < 8:
                out_port, out_frame = got[0]
                nxt = python.topology.port(name, out_port)
                if nxt.peer in python.switches:  # the next hop adds its record (INT) to the same cell
                    frames.append((nxt.peer, nxt.peer_port, out_frame))
                    relayed += 1
    assert forwarded > 0  # the cells are routed, not all dropped
    for name in python.switches:
        meters = python.switches[name].datapath.pipeline.meters["FabricIngress.credit_meter"]
        assert any(cell.get_config() for cell in meters.cells)  # the credit meter takes part
        assert _state(native.switches[name].datapath.pipeline) == _state(python.switches[name].datapath.pipeline)
