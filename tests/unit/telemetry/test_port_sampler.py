"""A switch process samples its own ports into --telemetry-file: one line per switch every
--telemetry-interval (here 0.1 s) while it runs, plus the first and the last."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time



def test_a_switch_process_writes_a_line_every_100_ms(tmp_path):
    path = tmp_path / "t.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "testbed.p4model.switch", "--no-p4", "--thrift-port", "0",
                             "--telemetry-file", str(path), "--", "--grpc-server-addr", "127.0.0.1:0",
                             "--backend", "python"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("switch ready"), proc.stderr.read()
        ready = time.time()
        time.sleep(1.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    stopped = time.time()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    times = [r["t_s"] for r in rows]
    assert abs(times[0] - ready) < 1 and times[-1] <= stopped  # wall-clock seconds
    assert abs(len(rows) - ((times[-1] - times[0]) / 0.1 + 1)) <= 1.5, len(rows)
    assert all(set(r) >= {"tx", "rx", "drops_packets", "ecn_marks_packets", "max_qdepth_packets", "tx_by_type"}
               for r in rows)


def test_a_bad_interval_is_one_line(tmp_path):
    run = subprocess.run([sys.executable, "-m", "testbed.p4model.switch", "--no-p4", "--telemetry-interval", "-1"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == ["python -m testbed.p4model.switch: --telemetry-interval -1 must be "
                                               "above 0 seconds"]


