"""Fixtures shared by the fabric tests."""

import pytest


@pytest.fixture(params=["per_switch", 2], ids=["per-switch", "fabric"])
def processes(request):
    """Every fabric test runs twice: one process per switch, and two fabric processes."""
    return request.param


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A run registry of the test's own, so `testbed clean` sees only this test's runs."""
    from testbed.emulation import manifest

    path = tmp_path / "registry"
    monkeypatch.setattr(manifest, "REGISTRY_DIR", path)
    monkeypatch.setenv("TESTBED_REGISTRY", str(path))
    return path
