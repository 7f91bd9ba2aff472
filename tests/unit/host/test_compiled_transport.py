"""The transport compiled by mypyc (testbed/compiled/): loaded only for the source it was built
from, said in one line when it is not, and the simulator's results are byte for byte those of the
source run interpreted.

Each check runs a fresh interpreter (the choice is made once, when `testbed` is imported) with
TESTBED_CACHE_DIR pointing at the cache it is about. The build the checks load is the install
step's (`compiled.build()`: found in the cache, or compiled once for the session).
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed import compiled

REPO = Path(__file__).resolve().parents[3]
PROBE = ("import testbed, testbed.compiled as c, testbed.host.endpoint as e, testbed.cells.wire as w, "
         "testbed.host.app; print(c.state()); print(e.__file__); print(w.__file__)")
INTERPRETED_LINE = "testbed: the transport runs interpreted"
MACHINE_TIMES = ("wall_s", "build_s")  # a run's seconds on this machine's clock, not the model's


def _python(code: str, cache: Path, root: Path = REPO, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("TESTBED_TRANSPORT", "PYTHONPATH")}
    environ.update(TESTBED_CACHE_DIR=str(cache), PYTHONPATH=str(root), **env)
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=environ, capture_output=True,
                          text=True, timeout=120)


def _probe(code: str, cache: Path, root: Path = REPO, **env: str) -> tuple[str, list[str], list[str]]:
    """(state, the two modules' files, stderr's lines) of a fresh interpreter."""
    done = _python(code, cache, root, **env)
    assert done.returncode == 0, done.stderr
    state, endpoint, wire = done.stdout.splitlines()
    return state, [endpoint, wire], done.stderr.splitlines()


@pytest.fixture(scope="session")
def build() -> Path:
    """The current source's build in the cache the environment names (the install step's)."""
    try:
        return compiled.build()
    except compiled.CompileUnavailable as e:
        pytest.skip(f"no compiled transport on this machine: {e}")


def test_interpreted_on_request_runs_the_source_and_says_nothing(build):
    state, files, err = _probe(PROBE, build.parent.parent, TESTBED_TRANSPORT="interpreted")
    assert state == "interpreted" and all(f.endswith(".py") for f in files) and err == []


def test_the_build_of_the_source_is_loaded(build):
    state, files, err = _probe(PROBE, build.parent.parent)
    assert state == "compiled" and err == []
    assert all(f.endswith(".so") and Path(f).is_relative_to(build) for f in files), files


def test_a_changed_source_runs_interpreted_with_one_line_naming_it(build, tmp_path):
    shutil.copytree(REPO / "testbed", tmp_path / "testbed", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("p4src", "scenarios"):
        (tmp_path / name).symlink_to(REPO / name)
    state, files, err = _probe(PROBE, build.parent.parent, tmp_path)
    assert state == "compiled", "the unchanged copy should load the build"
    sender = tmp_path / "testbed" / "host" / "sender.py"
    sender.write_text(sender.read_text() + "# a researcher's edit\n")
    state, files, err = _probe(PROBE, build.parent.parent, tmp_path)
    assert all(f.endswith(".py") and Path(f).is_relative_to(tmp_path) for f in files), files
    assert len(err) == 1 and err[0].startswith(INTERPRETED_LINE), err
    assert "testbed/host/sender.py changed since the compiled build" in err[0]
    assert "python -m testbed.compiled" in err[0]


def test_without_a_build_the_source_runs_with_one_line(tmp_path):
    state, files, err = _probe(PROBE, tmp_path / "empty-cache")
    assert all(f.endswith(".py") for f in files)
    assert len(err) == 1 and "no compiled build was made yet" in err[0], err


def test_without_a_c_compiler_and_a_build_the_source_runs_with_one_line(tmp_path):
    state, files, err = _probe(PROBE, tmp_path / "empty-cache", PATH="/nonexistent", CC="none")
    assert all(f.endswith(".py") for f in files)
    assert len(err) == 1 and "no C compiler (cc or gcc) on PATH" in err[0], err


def test_without_the_compiler_the_source_runs_with_one_line(build):
    hidden = "import sys; sys.modules['mypy'] = None; " + PROBE  # find_spec('mypy') finds nothing
    state, files, err = _probe(hidden, build.parent.parent)
    assert all(f.endswith(".py") for f in files)
    assert len(err) == 1 and "the compiler (mypy) is not installed" in err[0], err


def test_a_build_without_the_compiler_is_refused_in_one_line(tmp_path):
    code = ("import sys; sys.modules['mypy'] = None\n"
            "from testbed import compiled\n"
            "try:\n    compiled.build()\nexcept compiled.CompileUnavailable as e:\n    print(e)\n")
    done = _python(code, tmp_path)
    assert done.stdout.strip() == "the compiler (mypy) is not installed"
    assert not (tmp_path / "transport").exists() or not any((tmp_path / "transport").iterdir())


def _small(scenario: str, into: Path) -> Path:
    """The scenario with its messages cut to at most 64 KiB, one round and one size each, and at
    most 6 s: the same code paths, a few seconds of simulation."""
    data = yaml.safe_load((REPO / "scenarios" / f"{scenario}.yaml").read_text())
    data["duration_s"] = min(data["duration_s"], 6)
    for phase in data["workload"]:
        if "message_bytes" in phase:
            phase["message_bytes"] = min(phase["message_bytes"], 65536)
        if "sizes_bytes" in phase:
            phase["sizes_bytes"] = phase["sizes_bytes"][:1]
        if "count" in phase:
            phase["count"] = 1
    path = into / f"{scenario}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _run_files(run: Path) -> dict[str, bytes]:
    """Every file of a `testbed sim` run directory, with what is not the simulation's own output
    left out: the directories report.md names and the machine's seconds (MACHINE_TIMES in
    result.json and summary.json, their columns of results.csv, report.md's wall time)."""
    files = {}
    for path in sorted(p for p in run.rglob("*") if p.is_file()):
        data = path.read_bytes().replace(str(run).encode(), b"RUN")
        if path.suffix == ".json":
            data = re.sub(rb'"(%s)": [-+.0-9e]+' % "|".join(MACHINE_TIMES).encode(), rb'"\1": -', data)
        elif path.suffix == ".csv":
            rows = list(csv.reader(io.StringIO(data.decode())))
            walls = [i for i, name in enumerate(rows[0] if rows else []) if name.endswith(MACHINE_TIMES)]
            data = "\n".join(",".join(v for i, v in enumerate(r) if i not in walls) for r in rows).encode()
        elif path.suffix == ".md":
            data = re.sub(rb"Run directories: [^\n]*", b"Run directories: -", data)
            data = _without_wall_column(data.decode()).encode()
        files[str(path.relative_to(run))] = data
    return files


def _without_wall_column(text: str) -> str:
    """A Markdown report with the cells of every table column headed "wall time" blanked."""
    out, wall = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            wall = None
        else:
            cells = line.split("|")
            if wall is None:
                wall = next((i for i, c in enumerate(cells) if "wall time" in c), -1)
            elif 0 <= wall < len(cells):
                cells[wall] = " - "
            line = "|".join(cells)
        out.append(line)
    return "\n".join(out)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["default", "incast", "fattree", "gpu-collectives-small"])
def test_the_simulator_gives_the_same_bytes_compiled_and_interpreted(build, tmp_path, scenario):
    """Every file the simulator writes (summary.json, each variant's records, statistics and
    telemetry, the plots) is the same compiled and interpreted, but for wall-clock time."""
    path = _small(scenario, tmp_path)
    outputs = {}
    for mode in ("interpreted", "compiled"):
        runs = tmp_path / mode
        env = {"TESTBED_TRANSPORT": "interpreted"} if mode == "interpreted" else {}
        done = _python(f"from testbed import cli; raise SystemExit(cli.main(['sim', {str(path)!r}, "
                       f"'--runs-dir', {str(runs)!r}]))", build.parent.parent, **env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert INTERPRETED_LINE not in done.stderr
        found = sorted(runs.glob("*/*-sim"))
        assert len(found) == 1, found
        outputs[mode] = _run_files(found[0])
    assert "summary.json" in outputs["compiled"] and any(k.endswith(".jsonl") for k in outputs["compiled"])
    assert outputs["compiled"].keys() == outputs["interpreted"].keys()
    differ = [name for name in outputs["compiled"] if outputs["compiled"][name] != outputs["interpreted"][name]]
    assert not differ, f"compiled and interpreted differ in {differ}"
