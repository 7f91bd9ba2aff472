"""Payloads built ahead of the epoch (WorkloadRunner.prepare): same bytes, same verdicts, held to a
budget, and a message that arrives short fails its check whether its bytes were built ahead or not."""

from types import SimpleNamespace

from testbed.cells import segment
from testbed.host import workloads
from testbed.host.app import PREPARE_BUDGET_BYTES as PREPARE_ALL, WorkloadRunner
from testbed.host.receiver import Delivered, MsgReorder
from testbed.host.workloads import MessageSpec


class FakeEndpoint:
    """What WorkloadRunner asks of an endpoint: the messages it was handed."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, bytes]] = []
        self.on_delivered = self.on_acked = None

    def send_message(self, now, dst, msg_id, payload, channel=0):
        self.sent.append((dst, msg_id, payload))
        return SimpleNamespace(msg_id=msg_id)

    def idle(self) -> bool:
        return True


SPECS = [MessageSpec("h1", "h2", 0, 3000, start_us=2e6), MessageSpec("h1", "h3", 1, 5000, start_us=1e6),
         MessageSpec("h2", "h1", 7, 4000, start_us=0.0), MessageSpec("h3", "h2", 9, 100, start_us=0.0)]


def runner(budget=None):
    ep = FakeEndpoint()
    r = WorkloadRunner("h1", ep, SPECS, seed=5)
    built = r.prepare() if budget is None else r.prepare(budget)
    return r, ep, built


def delivered(src, msg_id, payload):
    return Delivered(src=src, flow_id=1, msg_id=msg_id, payload=payload, delivered_s=1.0, cells=1,
                     reorder=MsgReorder(first_cell_s=0.5))


def test_prepared_messages_carry_the_bytes_built_when_they_start():
    ahead, ep_ahead, built = runner()
    late, ep_late, _ = runner(budget=0)
    assert built == 3000 + 5000 + 4000  # both sends and the one message h1 checks; h3 -> h2 is not h1's
    for r in (ahead, late):
        r.poll(3.0)
    # the one built ahead is handed over framed, the other framed by the transport: the same message
    assert [(dst, i, segment.framed(m)) for dst, i, m in ep_ahead.sent] == \
        [(dst, i, segment.framed(m)) for dst, i, m in ep_late.sent]
    assert isinstance(ep_ahead.sent[0][2], segment.Framed) and not isinstance(ep_late.sent[0][2], segment.Framed)
    assert segment.framed(ep_ahead.sent[0][2]) == (segment.frame(workloads.payload(5, "h1", "h3", 1, 5000)), 5000)


def test_the_budget_takes_the_earliest_messages_first():
    r, _, built = runner(budget=9000)
    assert built == 4000 + 5000  # h2 -> h1 at 0 s, then h1 -> h3 at 1 s; h1 -> h2 at 2 s does not fit
    assert set(r._expected) == {("h2", 7)} and [r._specs[i].msg_id for i in r._prepared] == [1]


def test_a_short_or_wrong_message_fails_its_check_built_ahead_or_not():
    good = workloads.payload(5, "h2", "h1", 7, 4000)
    for budget in (None, 0):
        r, _, _ = runner(budget)
        r._delivered(delivered("h2", 7, good[:3000]))  # a prefix of the right bytes is not the message
        assert r.verify_failures == 1
        r, _, _ = runner(budget)
        r._delivered(delivered("h2", 7, good))
        assert r.verify_failures == 0 and r.records[-1]["verified"]


def test_a_sender_takes_a_message_framed_ahead_as_the_same_message():
    from testbed.host.config import TransportConfig
    from testbed.host.sender import SenderFlow

    payload = workloads.payload(5, "h1", "h2", 3, 4097)
    cfg = TransportConfig(cc="none", link_rate_bps=5e6)
    a, b = SenderFlow(cfg, "10.0.0.2", 1, 0.0), SenderFlow(cfg, "10.0.0.2", 1, 0.0)
    now_framed, ahead = a.enqueue(0.0, 3, payload), b.enqueue(0.0, 3, segment.frame_ahead(payload))
    assert (ahead.framed, ahead.payload_bytes, ahead.ncells) == (now_framed.framed, 4097, now_framed.ncells)
    assert [a.build(0.0) for _ in range(5)] == [b.build(0.0) for _ in range(5)]


def _deliver_over_endpoints(runner_budget, tamper=False):
    """h2's transport sends h1 its 4000 B message, cell by cell, into h1's transport and runner."""
    from testbed.host.config import TransportConfig
    from testbed.host.endpoint import Endpoint

    cfg = TransportConfig(cc="none", link_rate_bps=5e6)
    tx, rx = Endpoint("h2", cfg), Endpoint("h1", cfg)
    r = WorkloadRunner("h1", rx, [MessageSpec("h2", "h1", 7, 4000)], seed=5)
    r.prepare(runner_budget)
    if tamper:  # the bytes h1 expects differ from what h2 sends in one byte of its last cell
        good = r._expected[("h2", 7)]
        r._expected[("h2", 7)] = good[:3999] + bytes([good[3999] ^ 1])
    got = []
    check = rx.on_delivered
    rx.on_delivered = lambda d: (got.append(d), check(d))
    tx.send_message(0.0, "h1", 7, workloads.payload(5, "h2", "h1", 7, 4000))
    t = 0.0
    while not got and t < 1.0:
        for out in tx.poll(t):
            rx.receive(t, "h2", out.data)
        t += 1e-3
    return r, got


def test_a_message_built_ahead_is_compared_cell_by_cell_as_it_comes():
    r, got = _deliver_over_endpoints(PREPARE_ALL)
    assert [d.matches_expected for d in got] == [True] and got[0].payload == workloads.payload(5, "h2", "h1", 7, 4000)
    assert r.verify_failures == 0 and r.records[-1]["verified"] and not r._expected and r.checked_as_they_came == 1
    r, got = _deliver_over_endpoints(PREPARE_ALL, tamper=True)  # the transport's CRC passes, the check does not
    assert [d.matches_expected for d in got] == [False] and r.verify_failures == 1 and not r.records[-1]["verified"]
    r, got = _deliver_over_endpoints(0)  # nothing built ahead: the runner regenerates the bytes to check
    assert [d.matches_expected for d in got] == [None] and r.verify_failures == 0 and r.records[-1]["verified"]
    assert r.checked_as_they_came == 0
