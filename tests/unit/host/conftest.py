"""Shared builders for the host transport tests (scaled-down defaults)."""

import pytest

from testbed.host.config import TransportConfig
from testbed.simulation.sim import LinkSpec

BDP = 16
RATE = 100e6


def make_cfg(cc: str, **kw) -> TransportConfig:
    return TransportConfig(cc=cc, link_rate_bps=RATE, bdp_cells=BDP, **kw)


def star_link(cfg: TransportConfig, buffer_bdp: float = 2.0, **kw) -> LinkSpec:
    # Host-switch-host: 4 link traversals per round trip make up the base RTT.
    return LinkSpec(rate_bps=RATE, delay_s=cfg.rtt_s / 4 - cfg.cell_time_s / 2,
                    buffer_cells=int(buffer_bdp * BDP), ecn=(0.2 * BDP, 1.0 * BDP, 0.2), **kw)


@pytest.fixture
def cfg_factory():
    return make_cfg


@pytest.fixture
def link_factory():
    return star_link


def run_agents(agents) -> dict:
    """Run loopback agents side by side, one thread each; their AgentResults by name."""
    import threading

    results: dict = {}
    threads = [threading.Thread(target=lambda a=a: results.__setitem__(a.name, a.run())) for a in agents]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results
