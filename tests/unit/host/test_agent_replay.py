"""The agent's event-time replay (Agent.replay): what the transport sends, and when each cell
is due at the ToR, does not depend on when the packet loop woke within its coalescing window,
only on when things happened; and a loop far behind never answers before an arrival."""

import pytest

from testbed.cells import wire
from testbed.host import workloads
from testbed.host.agent import Agent
from testbed.host.config import TransportConfig
from testbed.host.endpoint import Endpoint

HOSTS = {"h1": "127.0.0.31", "h2": "127.0.0.32"}
DELAY_S = 0.0025
RATE_BPS = 5e6  # a cell time of 1.7 ms, the NIC's catch-up: the window is half the delay, 1.25 ms
END_S = 0.06


class RecordingNic:
    """The NIC's timed queue, recording (due, destination, bytes) for each cell handed over."""

    engine = "native"

    def __init__(self):
        self.cells = []

    def submit(self, due, flow, dst, port, data, tos):
        self.cells.append((round(due, 12), dst, bytes(data)))

    stage = submit

    def flush(self):
        pass

    def release(self, now):
        return 0

    def next_due(self):
        return None


class Arrivals:
    """recvmmsg stand-in: hands over the datagrams that arrived by the time it is read."""

    def __init__(self, datagrams, clock):
        self.datagrams = list(datagrams)  # (arrival time, source address, bytes), in time order
        self.clock = clock

    def read(self):
        now = self.clock()
        out = []
        while self.datagrams and self.datagrams[0][0] <= now:
            t, src, data = self.datagrams.pop(0)
            out.append((data, src, 0, t))
        return out


def peer_cells(until_s):
    """The DATA cells h2's transport sends to h1 by `until_s` (a 64 KiB message at time 0), each
    with the time it reaches h1 over two 2.5 ms links."""
    cfg = TransportConfig(cc="none", link_rate_bps=RATE_BPS, bdp_cells=16)
    ep = Endpoint(HOSTS["h2"], cfg)
    ep.send_message(0.0, HOSTS["h1"], 7, workloads.payload(1, "h2", "h1", 7, 64 << 10))
    cells, t = [], 0.0
    while t <= until_s:
        for tx in ep.poll(t):
            cells.append((tx.start + 2 * DELAY_S, HOSTS["h2"], tx.data))
        t += 1e-5
    return cells


def run_agent(tmp_path, wakes):
    """h1 sends 64 KiB to h2 at time 0 and receives h2's cells; its loop wakes at `wakes`."""
    specs = [workloads.MessageSpec("h1", "h2", 0, 64 << 10), workloads.MessageSpec("h2", "h1", 7, 64 << 10)]
    cfg = TransportConfig(cc="none", link_rate_bps=RATE_BPS, bdp_cells=16)
    agent = Agent("h1", HOSTS["h1"], HOSTS, specs, cfg, tmp_path, seed=1, port=4921, epoch=0.0,
                  link_delay_s=DELAY_S)
    try:
        clock = {"now": 0.0}
        agent.now = lambda: clock["now"]
        agent.nicq = RecordingNic()
        agent.receiver = Arrivals(peer_cells(wakes[-1]), agent.now)
        agent._due = agent._event_clock = 0.0
        for wall in wakes:
            clock["now"] = wall
            agent.replay(wall, True)
        return agent.nicq.cells, agent
    finally:
        agent.sock.close()


def test_cells_are_due_at_the_same_times_whenever_the_loop_wakes_within_its_window(tmp_path):
    finest = [i * 1e-5 for i in range(1, int(END_S / 1e-5) + 1)]  # every 10 us
    fine_cells, fine_agent = run_agent(tmp_path / "fine", finest)
    window = fine_agent._coalescing_window()
    assert window == pytest.approx(DELAY_S / 2)
    assert fine_agent.rx_datagrams > 10 and len(fine_cells) > 30  # data out, ACKs for what came in
    coarse = [i * window for i in range(1, int(END_S / window) + 1)] + [END_S]
    cells, agent = run_agent(tmp_path / "coarse", coarse)
    assert cells == fine_cells
    assert agent.ep.in_order_cells == fine_agent.ep.in_order_cells


def test_a_loop_far_behind_never_answers_before_the_arrival(tmp_path):
    """Woken once, long after everything arrived: every ACK is due no earlier than its DATA cell's
    kernel receive time plus the host link."""
    cells, agent = run_agent(tmp_path, [END_S])
    first_arrival = peer_cells(END_S)[0][0]
    acks = [due for due, dst, data in cells if dst == HOSTS["h2"] and data[0] & 0x0F == wire.ACK]
    assert acks and min(acks) >= first_arrival + DELAY_S
