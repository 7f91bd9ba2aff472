"""The packet loop's wait (Agent._wait): inside the coalescing window a datagram does not wake the
loop, anything else it watches does; after the window, a datagram or the deadline ends it."""

import socket
import time

import pytest

from testbed.host import agent as agent_module
from testbed.host import workloads
from testbed.host.agent import Agent, AgentError
from testbed.host.config import TransportConfig

HOSTS = {"h1": "127.0.0.91", "h2": "127.0.0.92"}


def make_agent(tmp_path):
    specs = [workloads.MessageSpec("h1", "h2", 0, 4096)]
    cfg = TransportConfig(cc="none", link_rate_bps=5e6, bdp_cells=16)
    return Agent("h1", HOSTS["h1"], HOSTS, specs, cfg, tmp_path, seed=1, port=4941, link_delay_s=0.0025)


def send_to(agent, data=b"x"):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((HOSTS["h2"], 0))
        s.sendto(data, (HOSTS["h1"], 4941))


def test_a_datagram_inside_the_window_waits_for_its_end(tmp_path):
    agent = make_agent(tmp_path)
    try:
        send_to(agent)  # already waiting when the wait starts
        start = time.monotonic()
        readable = agent._wait([agent.sock], None, agent.now() + 0.03)
        waited = time.monotonic() - start
        assert readable == [agent.sock]
        assert waited >= 0.029
    finally:
        agent.sock.close()


def test_a_deadline_inside_the_window_waits_for_its_end(tmp_path):
    agent = make_agent(tmp_path)
    try:
        start = time.monotonic()
        agent._wait([agent.sock], agent.now() + 0.005, agent.now() + 0.03)
        assert time.monotonic() - start >= 0.029
    finally:
        agent.sock.close()


def test_another_watched_socket_ends_the_window_at_once(tmp_path):
    agent = make_agent(tmp_path)
    wake, other = socket.socketpair()
    try:
        send_to(agent)
        wake.send(b"!")
        start = time.monotonic()
        readable = agent._wait([agent.sock, other], None, agent.now() + 0.5)
        assert readable == [agent.sock, other] and time.monotonic() - start < 2.5  # the cell is read too
    finally:
        agent.sock.close()
        wake.close()
        other.close()


def test_after_the_window_a_datagram_or_the_deadline_ends_the_wait(tmp_path, monkeypatch):
    monkeypatch.setattr(agent_module, "MAX_SLEEP_S", 5.0)  # so that only the deadline can end it early
    agent = make_agent(tmp_path)
    try:
        start = time.monotonic()
        assert agent._wait([agent.sock], agent.now() + 0.02, agent.now()) == []  # the deadline
        assert 0.019 <= time.monotonic() - start < 2.5
        send_to(agent)
        start = time.monotonic()
        assert agent._wait([agent.sock], agent.now() + 0.5, agent.now()) == [agent.sock]
        assert time.monotonic() - start < 2.5
    finally:
        agent.sock.close()


def test_the_coalescing_share_comes_from_the_environment_and_is_checked(tmp_path, monkeypatch):
    agent = make_agent(tmp_path)
    agent.sock.close()
    assert agent.coalesce_share == 0.5
    monkeypatch.setenv("TESTBED_AGENT_COALESCE_SHARE", "0.6")
    agent = make_agent(tmp_path)
    agent.sock.close()
    assert agent.coalesce_share == 0.6
    for bad in ("1", "0", "-0.2", "half", "nan"):
        monkeypatch.setenv("TESTBED_AGENT_COALESCE_SHARE", bad)
        with pytest.raises(AgentError, match="TESTBED_AGENT_COALESCE_SHARE"):
            make_agent(tmp_path)
