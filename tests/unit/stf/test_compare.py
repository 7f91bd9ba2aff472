"""Judging outputs and rendering the diff."""

from testbed.p4model.stf.compare import (Expectation, PortExpectations, compare_port,
                                         mismatch_positions)


def exp(text, exact=False, line=1):
    return Expectation(text, exact, line)


def test_prefix_match_and_wildcards():
    assert mismatch_positions(exp("01**03"), "0102030405") == []
    assert mismatch_positions(exp("01**03", exact=True), "0102030405") == [6, 7, 8, 9]
    assert mismatch_positions(exp("0103"), "0102") == [3]
    assert mismatch_positions(exp("010203"), "0102") == [4, 5]


def test_count_mismatch_and_extra_packets():
    problems = compare_port(1, PortExpectations([exp("01")]), [b"\x01", b"\x02"])
    assert "expected 1 packet(s), received 2" in problems[0][0]
    assert "unexpected" in problems[-1][0]
    problems = compare_port(1, PortExpectations([exp("01", line=7)]), [])
    assert any("line 7): not received" in p[0] for p in problems)


def test_any_packets_allowed():
    assert compare_port(1, PortExpectations([], anything=True), [b"\x01"]) == []


def test_diff_marks_differing_nibbles():
    [problem] = compare_port(2, PortExpectations([exp("0011223344")]), [b"\x00\x11\x23\x32\x44"])
    text = "\n".join(problem)
    assert "2 byte(s) differ, first at offset 2" in problem[0]
    assert "expected 00 11 22 33 44" in text and "received 00 11 23 32 44" in text
    marker = [l for l in problem if l.strip().startswith("^")][0]
    row = [l for l in problem if "expected 00" in l][0]
    assert [i for i, c in enumerate(marker) if c == "^"] == [row.index("22") + 1, row.index("33") + 1]
