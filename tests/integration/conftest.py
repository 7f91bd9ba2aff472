"""Fixtures shared by the fabric tests."""

import pytest

from switch_modes import MODES  # noqa: E402 (tests/integration is on sys.path)


@pytest.fixture(params=list(MODES), ids=list(MODES.values()))
def processes(request):
    """A fabric test runs in each switch mode: one process per switch, the default (one fabric
    process per two cores: on 2 cores every cable in memory), and two fabric processes (cables
    between them are veths); switch_modes.in_mode narrows a test to one."""
    return request.param


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A run registry of the test's own, so `testbed clean` sees only this test's runs. It nests in
    the session's (a killed test's runs stay findable); what the test left registered is cleaned
    when it ends, and the registry goes."""
    import shutil
    import tempfile
    from pathlib import Path

    from testbed.emulation import cleanup, manifest

    manifest.REGISTRY_DIR.mkdir(parents=True, exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix=f"{tmp_path.name}-", dir=manifest.REGISTRY_DIR))
    monkeypatch.setattr(manifest, "REGISTRY_DIR", path)
    monkeypatch.setenv("TESTBED_REGISTRY", str(path))
    yield path
    cleanup.clean_orphans(path)
    shutil.rmtree(path, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    """The costs the fabric tests' clocks were fitted with, per switch mode (or why the machine could
    not measure them), and every fabric run a test set aside because it fell behind real time
    (fitting.until_real_time_kept): a passing session says how often the machine could not hold a
    run's clock."""
    from fitting import MEASURED, RERUNS

    from testbed.scenario import capacity

    if MEASURED:
        terminalreporter.section("fabric tests' clocks: this machine's costs, measured in this session")
        for mode, why in sorted(MEASURED.items()):
            terminalreporter.write_line(f"{mode}: {why or capacity.load_costs(mode).line()}")
    if RERUNS:
        terminalreporter.section("fabric runs rerun: they fell behind real time")
        for line in RERUNS:
            terminalreporter.write_line(line)
