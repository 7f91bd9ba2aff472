"""A test session leaves the machine as it found it: a run's costs recorded inside a session go to
the session's own calibration, never to the user's, and results to the session's own runs/.

The check runs a session of its own (a subprocess of pytest under tests/conftest.py, the user's
calibration named by TESTBED_CALIBRATION as a user would) whose one test records a run's costs
the way every emulated run does (emulation.costs.measure_costs of a run that kept real time) and
asks the commands where results go. The user's file is then compared byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

INNER_TEST = '''
import json
import os
from pathlib import Path

from testbed.emulation import costs
from testbed.scenario import capacity


def test_a_run_records_its_costs(tmp_path):
    (tmp_path / "h1.stats.json").write_text(json.dumps(
        {"cpu_s": 1.0, "tx_datagrams": 6000, "rx_datagrams": 4000, "pacer_lateness": {"p99_us": 300.0}}))
    tm = {"tm": {"totals": {"enqueued": 10000}, "fidelity": {"dequeue": {"p99_lag_us": 200}}}}
    out = costs.measure_costs({"s1": 2.0}, {"s1": tm}, tmp_path, 1000.0, "a test's run")
    assert out["calibrates"]
    from testbed.telemetry.rundir import default_runs_dir

    Path(os.environ["REPORT"]).write_text(json.dumps({
        "calibration": str(capacity.calibration_path()),
        "recorded": json.loads(capacity.calibration_path().read_text()),
        "runs_dir": default_runs_dir()}))
'''


def test_a_sessions_recorded_costs_leave_the_users_calibration_byte_identical(tmp_path):
    user = tmp_path / "user" / "calibration.json"
    user.parent.mkdir()
    entry = {"switch_us_per_packet": 210.0, "agent_us_per_datagram": 45.0, "from": "the user's run",
             "mode": "per_switch"}
    user.write_bytes(json.dumps({"runs": [entry]}, indent=1).encode())
    before = user.read_bytes()
    session = tmp_path / "session"
    session.mkdir()
    shutil.copy(REPO / "tests" / "conftest.py", session / "conftest.py")
    (session / "test_inner.py").write_text(INNER_TEST)
    report = tmp_path / "report.json"
    env = {**os.environ, "TESTBED_CALIBRATION": str(user), "TESTBED_RUNS_DIR": str(tmp_path / "user" / "runs"),
           "REPORT": str(report)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           str(session)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    seen = json.loads(report.read_text())
    assert user.read_bytes() == before
    assert seen["calibration"] != str(user) and seen["runs_dir"] != str(tmp_path / "user" / "runs")
    assert Path(seen["calibration"]).parent == Path(seen["runs_dir"]).parent   # the session's own directory
    assert [r["from"].split(",")[0] for r in seen["recorded"]["runs"]] == ["a test's run"]  # it did record
    assert not Path(seen["calibration"]).exists()   # the session's own place went with the session
    assert not (tmp_path / "user" / "runs").exists()
