"""The receiving endpoint keeps the INT hop records of DATA cells (fabric.int), in path order, and
delivers their bodies as if no record were there; cells without records keep nothing."""

from conftest import make_cfg

from testbed.cells import segment, wire
from testbed.host.endpoint import Endpoint

CELL = 256


def _cells(framed, stacks):
    out = []
    for i, stack in enumerate(stacks):
        last = wire.FLAG_LAST if i == len(stacks) - 1 else 0
        out.append(wire.encode(wire.CellPacket(
            type=wire.DATA, flow_id=7, msg_id=0, psn=i, aux=len(framed),
            flags=last | (wire.FLAG_INT if stack is not None else 0),
            body=segment.cell_body(framed, i, CELL), telemetry=stack)))
    return out


def test_endpoint_keeps_int_records_and_delivers_the_message():
    cfg = make_cfg("none", cell_size=CELL)
    ep = Endpoint("h2", cfg)
    payload = b"z" * (3 * CELL - 10)
    framed = segment.frame(payload)
    path = wire.IntStack((wire.IntHop(3, 2, 1, 40), wire.IntHop(1, 4, 0, 7)), max_hops=8)
    stacks = [path, None, wire.IntStack(path.hops, max_hops=2, overflow=1)]
    for i, c in enumerate(_cells(framed, stacks)):
        ep.receive(0.01 + i * 1e-5, "h1", c)
        ep.poll(0.01 + i * 1e-5)
    assert [d.payload for d in ep.delivered] == [payload]
    assert len(ep.int_records) == 2
    first, last = ep.int_records
    assert first["hops"] == [[1, 4, 0, 7], [3, 2, 1, 40]], "first switch crossed first"
    assert (first["src"], first["flow_id"], first["psn"], first["overflow"]) == ("h1", 7, 0, 0)
    assert (last["psn"], last["overflow"]) == (2, 1)


def test_no_records_without_int():
    cfg = make_cfg("none", cell_size=CELL)
    ep = Endpoint("h2", cfg)
    framed = segment.frame(b"q" * CELL)
    for i, c in enumerate(_cells(framed, [None, None])):
        ep.receive(0.01 + i * 1e-5, "h1", c)
    assert ep.int_records == [] and ep.errors["malformed"] == 0
    assert [d.payload for d in ep.delivered] == [b"q" * CELL]
