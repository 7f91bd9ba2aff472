"""The transport-floor driver (benchmarks/transport_floor.py): on its lossless ideal network every
message is delivered and verified and every datagram sent is received; a drive cut short is
reported incomplete; the ideal network's delay gives a cell and its ACK the scenario's base RTT."""

import pytest

from benchmarks import transport_floor
from testbed.cells.wire import FRAME_OVERHEAD
from testbed.scenario.load import load_scenario


@pytest.mark.parametrize("cc", ["none", "tita"])
def test_every_message_delivered_and_every_datagram_received(cc):
    drive = transport_floor.measure(cc, hosts=4, message_bytes=64 << 10)
    assert drive.cc == cc
    assert drive.expected == 4
    assert drive.delivered == 4
    assert drive.verify_failures == 0
    assert drive.incomplete == ()
    assert drive.complete
    data_cells = (64 << 10) // 1024
    assert drive.tx >= 4 * data_cells  # each message's DATA cells, and at least their ACKs besides
    assert drive.tx == drive.rx  # a lossless network: every datagram handed out arrived
    assert 0 < drive.us_per_datagram < float("inf")
    assert "every message delivered and verified" in transport_floor.line(drive)


def test_a_drive_cut_short_is_incomplete():
    drive = transport_floor.measure("none", hosts=4, message_bytes=64 << 10, limit_s=0.01)
    assert not drive.complete
    assert drive.delivered < drive.expected
    assert set(drive.incomplete) == {"h1", "h2", "h3", "h4"}
    assert drive.tx > drive.rx  # cells still in flight when it stopped
    assert "INCOMPLETE" in transport_floor.line(drive)


def test_permutation_pairs_host_i_with_host_i_plus_half():
    specs = transport_floor.permutation(16, 1000)
    assert [(s.src, s.dst) for s in specs[:2]] == [("h1", "h9"), ("h2", "h10")]
    assert [(s.src, s.dst) for s in specs[-1:]] == [("h16", "h8")]
    assert {s.size_bytes for s in specs} == {1000}


def test_ideal_network_gives_a_cell_and_its_ack_the_base_rtt():
    cfg, network, seed = transport_floor.config_from_scenario()
    derived = load_scenario(str(transport_floor.SCENARIO)).derived
    data = network.arrival(0.0, derived.cell_wire_bytes - FRAME_OVERHEAD)
    ack = network.arrival(0.0, derived.credit_wire_bytes - FRAME_OVERHEAD)
    assert data + ack == pytest.approx(derived.base_rtt_us / 1e6)
    assert network.rate_bps == cfg.link_rate_bps == 5e6
    assert cfg.cc == "none" and cfg.bdp_cells == derived.bdp_cells
    assert transport_floor.config_from_scenario(cc="tita")[0].cc == "tita"


def _drive(cpu_s: float, incomplete: tuple[str, ...] = ()) -> transport_floor.Drive:
    return transport_floor.Drive(4, 1024, "none", tx=100, rx=100, polls=200, cpu_s=cpu_s, virtual_s=1.0,
                                 delivered=4 - len(incomplete), expected=4, verify_failures=0,
                                 incomplete=incomplete)


def test_median_drive_is_the_median_of_its_rounds(monkeypatch):
    rounds = iter([_drive(0.003), _drive(0.001), _drive(0.002)])
    monkeypatch.setattr(transport_floor, "measure", lambda cc, **kw: next(rounds))
    shown, low, high = transport_floor.median_drive("none", rounds=3)
    assert (shown.us_per_datagram, low, high) == pytest.approx((10.0, 5.0, 15.0))


def test_median_drive_shows_an_incomplete_round_rather_than_the_median(monkeypatch):
    rounds = iter([_drive(0.003), _drive(0.001, incomplete=("h2",)), _drive(0.002)])
    monkeypatch.setattr(transport_floor, "measure", lambda cc, **kw: next(rounds))
    shown, _low, _high = transport_floor.median_drive("none", rounds=3)
    assert shown.incomplete == ("h2",)
    assert "INCOMPLETE: 3 of 4 messages delivered" in transport_floor.line(shown)
