"""Every DATA cell the simulator loses is counted where the reader looks: the verdict's loss column
counts cells lost on cut or down cables beside queue drops, the DATA conservation line balances with
them, and tests/recompute_report.py recomputes both from the hosts' own counts (a flap and a cut)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from testbed.cli import main

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("recompute_report", ROOT / "tests" / "recompute_report.py")
recompute_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recompute_report)


@pytest.fixture(scope="module", params=["flap.yaml", "failover.yaml"])
def run(request, tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    assert main(["sim", str(ROOT / "scenarios" / request.param), "--runs-dir", str(runs)]) == 0
    (out,) = (p.parent for p in runs.rglob("summary.json"))
    return out


def _hosts_count(variant_dir: Path) -> tuple[int, int]:
    """DATA cells the hosts sent and received, from their own stats files."""
    sent = received = 0
    for path in (variant_dir / "records").glob("*.stats.json"):
        stats = json.loads(path.read_text())
        sent += stats["tx_counts"].get("tx_DATA", 0)
        received += stats["data_cells_received"]
    return sent, received


def _variant_dirs(out: Path) -> dict[str, Path]:
    return {json.loads(p.read_text())["variant"]: p.parent for p in out.glob("*/result.json")}


def test_the_verdict_counts_cells_lost_on_cut_cables(run):
    summaries = json.loads((run / "summary.json").read_text())
    text = (run / "report.md").read_text()
    for name, variant_dir in _variant_dirs(run).items():
        sent, received = _hosts_count(variant_dir)
        cells = summaries[name]["simulator"]["data_cells"]
        assert cells["in_flight_at_end"] == 0          # the runs finish: every cell sent is received or lost
        assert sent - received == cells["lost_total"] > 0
        assert cells["lost"]["cut_links"] > 0
        row = next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
        assert f"| {sent - received} (" in row and f"cut cables {cells['lost']['cut_links']}" in row
        assert f"DATA conservation ({name}): sent {sent} - received {received} - " in text


def test_retransmissions_are_explained_by_shown_losses(run):
    summaries = json.loads((run / "summary.json").read_text())
    for name, s in summaries.items():
        if s["retransmissions_cells"]:
            assert s["simulator"]["data_cells"]["lost_total"] > 0, name


def test_recompute_report_agrees_and_catches_a_wrong_loss(run, capsys, tmp_path):
    assert recompute_report.main([str(run)]) == 0
    assert "all agree" in capsys.readouterr().out
    summaries = json.loads((run / "summary.json").read_text())
    name = next(iter(summaries))
    summaries[name]["simulator"]["data_cells"]["lost_total"] += 1
    copy = tmp_path / "copy"
    import shutil

    shutil.copytree(run, copy)
    (copy / "summary.json").write_text(json.dumps(summaries))
    assert recompute_report.main([str(copy)]) == 1
    assert "lost_total" in capsys.readouterr().out
