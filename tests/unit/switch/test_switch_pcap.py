"""pcap files are standard (tcpdump reads them) and complete after close."""

import shutil
import subprocess

import pytest

from testbed.p4model.switch.pcap import PcapWriter, PortCapture, read_pcap

FRAME = bytes.fromhex("ffffffffffff0000000000010806") + bytes(28)


def test_records_round_trip(tmp_path):
    w = PcapWriter(tmp_path / "x.pcap")
    w.write(FRAME, 1000.25)
    w.write(b"\x01" * 70000, 1001.0)
    w.close()
    records = read_pcap(tmp_path / "x.pcap")
    assert records[0] == (1000.25, FRAME)
    assert len(records[1][1]) == 70000


def test_port_capture_names_files_like_bmv2(tmp_path):
    c = PortCapture(str(tmp_path / "d"), "s1-eth1")
    c.rx.write(FRAME)
    c.close()
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["s1-eth1_in.pcap", "s1-eth1_out.pcap"]
    assert read_pcap(tmp_path / "d" / "s1-eth1_out.pcap") == []


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump is not installed")
def test_tcpdump_reads_it(tmp_path):
    w = PcapWriter(tmp_path / "a.pcap")
    for _ in range(3):
        w.write(FRAME)
    w.close()
    out = subprocess.run(["tcpdump", "-n", "-r", str(tmp_path / "a.pcap")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 3 and "ARP" in out.stdout
