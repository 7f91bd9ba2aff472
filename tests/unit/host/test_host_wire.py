import pytest
from hypothesis import given, strategies as st

from testbed.errors import TestbedError
from testbed.cells import segment, wire


def test_field_list_is_the_readme_layout():
    assert sum(w for _, w in wire.CELL_FIELDS) == wire.HEADER_LEN * 8 == 192
    assert [n for n, _ in wire.CELL_FIELDS][:3] == ["version", "type", "flags"]


def test_encode_layout_matches_readme_offsets():
    c = wire.CellPacket(type=wire.ACK, flags=wire.FLAG_ECE, entropy=0x0102, flow_id=0x03040506,
                        msg_id=7, psn=8, credit_seq=9, aux=10, body=wire.sack_encode(0b101))
    b = wire.encode(c)
    assert b[0] == 0x13 and b[1] == 0x04 and b[2:4] == b"\x01\x02" and b[4:8] == b"\x03\x04\x05\x06"
    assert b[12:16] == (8).to_bytes(4, "big") and b[20:24] == (10).to_bytes(4, "big")
    assert len(b) == 24 + 8
    back = wire.decode(b)
    assert back == c and wire.sack_decode(back.body) == 0b101


@pytest.mark.parametrize("data, field", [
    (b"\x10" * 10, "truncated"),
    (bytes([0x20]) + bytes(23), "version"),
    (bytes([0x1F]) + bytes(23), "type"),
    (bytes([0x11, 0x80]) + bytes(22), "flags"),
    (bytes([0x13]) + bytes(23), "body"),  # ACK without its 8-byte SACK
    (bytes([0x10]) + bytes(23) + bytes(16), "aux"),  # DATA with zero message length
])
def test_malformed_cells_name_the_field(data, field):
    with pytest.raises(wire.MalformedCell, match=field) as err:
        wire.decode(data, cell_size=16)
    assert isinstance(err.value, TestbedError)


def test_data_body_must_be_cell_size():
    c = wire.CellPacket(type=wire.DATA, aux=5, body=bytes(100))
    wire.decode(wire.encode(c), cell_size=100)
    with pytest.raises(wire.MalformedCell, match="cell size is 1024"):
        wire.decode(wire.encode(c), cell_size=1024)


def test_encode_rejects_values_wider_than_the_field():
    with pytest.raises(wire.MalformedCell, match="entropy"):
        wire.encode(wire.CellPacket(type=wire.CREDIT, entropy=1 << 16))


@given(st.sampled_from(sorted(wire.TYPE_NAMES)), st.integers(0, 7), st.integers(0, 0xFFFF),
       *[st.integers(0, wire.U32)] * 5)
def test_roundtrip_property(t, flags, entropy, flow_id, msg_id, psn, credit_seq, aux):
    body = bytes(range(32)) if t == wire.DATA else wire.sack_encode(psn) if t == wire.ACK else b""
    aux = aux or 1 if t == wire.DATA else aux
    c = wire.CellPacket(type=t, flags=flags, entropy=entropy, flow_id=flow_id, msg_id=msg_id,
                        psn=psn, credit_seq=credit_seq, aux=aux, body=body)
    assert wire.decode(wire.encode(c), cell_size=32) == c


def test_scapy_layer_matches_field_list_and_dissects():
    from scapy.layers.inet import IP, UDP
    from scapy.packet import Raw

    from testbed.cells.scapy_cell import Cell

    assert [(f.name, f.size) for f in Cell.fields_desc] == wire.CELL_FIELDS
    c = wire.CellPacket(type=wire.DATA, flags=wire.FLAG_LAST, entropy=9, flow_id=5, msg_id=6,
                        psn=7, credit_seq=8, aux=3, body=b"abc" + bytes(13))
    pkt = IP(bytes(IP(dst="127.0.0.2") / UDP(sport=4793, dport=4793) / wire.encode(c)))
    layer = pkt[Cell]
    for name, _ in wire.CELL_FIELDS:
        assert getattr(layer, name) == getattr(c, name), name
    assert bytes(layer[Raw].load) == c.body


def test_segmentation_pads_last_cell_and_checksums():
    framed = segment.frame(b"x" * 2500)
    n = segment.cell_count(len(framed), 1024)
    assert n == 3
    bodies = [segment.cell_body(framed, i, 1024) for i in range(n)]
    assert all(len(b) == 1024 for b in bodies) and bodies[-1].endswith(bytes(10))
    assert segment.unframe(segment.reassemble(bodies, len(framed))) == b"x" * 2500
    bad = bytearray(framed)
    bad[5] ^= 1
    assert segment.unframe(bytes(bad)) is None


@given(st.binary(max_size=3000), st.sampled_from([1, 3, 64, 1024]), st.data())
def test_unframe_cells_is_unframe_of_reassemble(payload, cell, data):
    """The one-copy reassembly gives what the join-then-cut one gives, for a message's own cells and
    for cells a byte was flipped in, cut short, dropped or had garbage put among them."""
    framed = segment.frame(payload)
    bodies = [segment.cell_body(framed, i, cell) for i in range(segment.cell_count(len(framed), cell))]
    assert segment.unframe_cells(bodies, len(framed)) == payload
    damage = data.draw(st.sampled_from(["flip", "shorten", "drop", "garbage"]))
    i = data.draw(st.integers(0, len(bodies) - 1))
    if damage == "flip":
        at = data.draw(st.integers(0, len(bodies[i]) - 1))
        bodies[i] = bodies[i][:at] + bytes([bodies[i][at] ^ 0x5A]) + bodies[i][at + 1:]
    elif damage == "shorten":
        bodies[i] = bodies[i][:data.draw(st.integers(0, len(bodies[i])))]
    elif damage == "drop":
        del bodies[i]
    else:
        bodies.insert(i, data.draw(st.binary(max_size=2 * cell)))
    old = segment.unframe(segment.reassemble(bodies, len(framed))) if sum(map(len, bodies)) >= len(framed) else None
    assert segment.unframe_cells(bodies, len(framed)) == old


@given(st.binary(max_size=3000), st.sampled_from([1, 3, 64, 1024]), st.data())
def test_unframer_cell_by_cell_is_unframe_cells(payload, cell, data):
    """segment.Unframer, fed the bodies one at a time, gives unframe_cells's bytes and verdict for a
    message's own cells and for damaged, shortened, dropped or inserted ones; and its comparison
    with the bytes expected, made cell by cell, says what comparing the whole message would."""
    framed = segment.frame(payload)
    bodies = [segment.cell_body(framed, i, cell) for i in range(segment.cell_count(len(framed), cell))]
    damage = data.draw(st.sampled_from(["none", "flip", "shorten", "drop", "garbage"]))
    i = data.draw(st.integers(0, len(bodies) - 1))
    if damage == "flip":
        at = data.draw(st.integers(0, len(bodies[i]) - 1))
        bodies[i] = bodies[i][:at] + bytes([bodies[i][at] ^ 0x5A]) + bodies[i][at + 1:]
    elif damage == "shorten":
        bodies[i] = bodies[i][:data.draw(st.integers(0, len(bodies[i])))]
    elif damage == "drop":
        del bodies[i]
    elif damage == "garbage":
        bodies.insert(i, data.draw(st.binary(max_size=2 * cell)))
    expected = data.draw(st.sampled_from(["same", "flipped", "flipped_last", "short", "long"]))
    want = {"same": payload, "short": payload[:-1], "long": payload + b"\0",
            "flipped": bytes([payload[0] ^ 1]) + payload[1:] if payload else b"\1",
            "flipped_last": payload[:-1] + bytes([payload[-1] ^ 1]) if payload else b"\1"}[expected]
    framed_len = data.draw(st.sampled_from([len(framed), len(framed), 0, 3, len(framed) + 1]))
    unframer = segment.Unframer(framed_len, want)
    plain = segment.Unframer(framed_len)
    for body in bodies:
        unframer.add(body)
        plain.add(body)
    got = unframer.result()
    assert got == segment.unframe_cells(bodies, framed_len) == plain.result()
    if got is not None:
        assert unframer.matches == (bytes(got) == want)
    assert plain.matches is False  # nothing expected, nothing claimed
    if got is not None and unframer.matches:
        assert got is want  # the expected bytes themselves, no copy


def test_unframer_keeps_what_came_once_it_differs_from_what_was_expected():
    """Cells that carry a whole, valid message other than the one expected, from the first, a
    middle or the last cell on; and the expected message itself: delivered as that object."""
    payload = bytes(range(256)) * 20
    framed = segment.frame(payload)
    bodies = [segment.cell_body(framed, i, 1024) for i in range(segment.cell_count(len(framed), 1024))]
    for at in (0, 2500, len(payload) - 1):
        want = payload[:at] + bytes([payload[at] ^ 1]) + payload[at + 1:]
        unframer = segment.Unframer(len(framed), want)
        for body in bodies:
            unframer.add(body)
        assert unframer.result() == payload and unframer.matches is False
    unframer = segment.Unframer(len(framed), payload)
    for body in bodies:
        unframer.add(body)
    assert unframer.result() is payload and unframer.matches is True
    bad = bodies[:-1] + [bodies[-1][:1] + bytes([bodies[-1][1] ^ 1]) + bodies[-1][2:]]  # in the trailer
    unframer = segment.Unframer(len(framed), payload)
    for body in bad:
        unframer.add(body)
    assert unframer.result() is None
