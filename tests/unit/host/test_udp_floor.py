"""The kernel UDP floor (benchmarks/udp_floor.py and udp_floor.c): the C program builds, moves every
datagram between two namespaces over a veth pair with its TOS byte and receive time, and the
namespaces and veths are gone afterwards, also when a measurement fails. Needs root and a C
compiler; skipped, with the reason, without them."""

import os
import subprocess
import tempfile

import pytest

from benchmarks import udp_floor


def _can_run() -> str:
    try:
        return udp_floor.check_can_run()
    except udp_floor.FloorUnavailable as why:
        pytest.skip(f"kernel UDP floor: {why}")


def _ours() -> list[str]:
    """Namespaces of this benchmark's prefix on the machine."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return [name for name in listed if name.startswith(f"{udp_floor.NAME_PREFIX}{os.getpid()}")]


def test_moves_every_datagram_between_the_namespaces_and_cleans_up():
    compiler = _can_run()
    with tempfile.TemporaryDirectory() as workdir:
        binary = udp_floor.build(compiler, workdir)
        pair = udp_floor.VethPair()
        try:
            assert len(pair.exists()) == 4  # two namespaces, two veth ends
            floor = udp_floor.measure(binary, pair, rate=2000, count=300)
            batched = udp_floor.measure(binary, pair, rate=2000, count=300, batch=10)
        finally:
            pair.close()
        assert pair.exists() == []
    assert _ours() == []
    assert floor.sent.datagrams == 300
    assert floor.received.datagrams == 300
    assert floor.received.extra == 0  # each came with ECT(0) and a kernel receive time
    assert floor.sent.wakeups == 300  # one datagram per timer wake-up
    assert 1 <= floor.received.wakeups <= 300
    assert floor.sent.user_s + floor.sent.system_s > 0
    assert 0 < floor.mean_us < float("inf")
    assert "not received" not in udp_floor.line(floor)
    assert batched.sent.datagrams == batched.received.datagrams == 300
    assert batched.sent.wakeups == 30  # ten datagrams per timer wake-up
    assert batched.received.extra == 0


def test_a_failed_measurement_leaves_nothing_behind(monkeypatch):
    _can_run()

    def broken(binary, pair, rate, count, batch):
        assert len(pair.exists()) == 4
        raise RuntimeError("measurement failed")

    monkeypatch.setattr(udp_floor, "measure", broken)
    with pytest.raises(RuntimeError, match="measurement failed"):
        udp_floor.measure_all(((600, 1),), seconds=0.1)
    assert _ours() == []


def test_a_report_line_that_is_not_one_is_named():
    with pytest.raises(RuntimeError, match="not its report line"):
        udp_floor.parse("udp_floor: socket: Permission denied")
    end = udp_floor.parse("recv datagrams=4 user_s=0.000010 system_s=0.000030 wakeups=2 unmarked=1")
    assert (end.datagrams, end.wakeups, end.extra) == (4, 2, 1)
    assert end.us_per_datagram == pytest.approx(10.0)


def _end(wakeups: int, datagrams: int, per_wakeup_us: float, per_datagram_us: float) -> udp_floor.End:
    cpu_s = (wakeups * per_wakeup_us + datagrams * per_datagram_us) / 1e6
    return udp_floor.End(datagrams, cpu_s / 4, cpu_s * 3 / 4, wakeups, 0)


def test_split_recovers_the_cost_per_wake_up_and_per_datagram():
    split = udp_floor.split(_end(1000, 1000, 30.0, 8.0), _end(125, 1000, 30.0, 8.0))
    assert split.per_wakeup_us == pytest.approx(30.0)
    assert split.per_datagram_us == pytest.approx(8.0)


def test_split_refuses_two_measurements_with_the_same_wake_ups_per_datagram():
    assert udp_floor.split(_end(1000, 1000, 30.0, 8.0), _end(950, 1000, 30.0, 8.0)) is None


def test_split_refuses_a_fit_that_gives_a_negative_cost():
    # more CPU per datagram with fewer wake-ups: noise, not a cost model
    assert udp_floor.split(_end(1000, 1000, 10.0, 1.0), _end(400, 1000, 30.0, 1.0)) is None
