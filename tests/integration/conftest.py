"""Fixtures shared by the fabric tests."""

import pytest


@pytest.fixture(params=["per_switch", "auto", 2], ids=["per-switch", "fabric-auto", "fabric-2"])
def processes(request):
    """Every fabric test runs in each switch mode: one process per switch, the default (one fabric
    process per two cores: on 2 cores every cable in memory), and two fabric processes (cables
    between them are veths)."""
    return request.param


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A run registry of the test's own, so `testbed clean` sees only this test's runs."""
    from testbed.emulation import manifest

    path = tmp_path / "registry"
    monkeypatch.setattr(manifest, "REGISTRY_DIR", path)
    monkeypatch.setenv("TESTBED_REGISTRY", str(path))
    return path
