"""The ping-all pinger on loopback: answers counted, silence reported, the window kept."""

import json
import os
import subprocess
import sys

import pytest

from testbed.emulation import pinger

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="raw ICMP sockets need root")


def test_every_loopback_address_answers():
    assert pinger.ping_all([f"127.0.0.{i}" for i in range(1, 40)], timeout_s=2.0, window=4) == []


def test_an_address_nobody_holds_is_reported_once():
    """In a namespace of the test's own (only lo, so nothing leaves the machine): an address
    routed to lo but held by nobody is silent, an unroutable one cannot be sent to."""
    ns = f"tbping{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        for argv in (["ip", "link", "set", "lo", "up"], ["ip", "route", "add", "10.254.0.0/16", "dev", "lo"]):
            subprocess.run(["ip", "netns", "exec", ns, *argv], check=True)
        out = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "testbed.emulation.pinger",
                              "--timeout", "0.3", "--window", "2", "127.0.0.1", "10.254.0.1", "127.0.0.2",
                              "10.99.0.1"], capture_output=True, text=True, check=True)
        assert json.loads(out.stdout) == {"failed": ["10.254.0.1", "10.99.0.1"]}
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def test_the_echo_request_checksum_is_valid():
    packet = pinger.echo_request(0x1234, 7)
    assert pinger.checksum(packet) == 0


def test_bad_options_are_one_line(capsys):
    assert pinger.main(["--window", "0", "127.0.0.1"]) == 2
    assert "--window >= 1" in capsys.readouterr().err
