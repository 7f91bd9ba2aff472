"""Fixtures shared by the fabric tests."""

import pytest


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A run registry of the test's own, so `testbed clean` sees only this test's runs."""
    from testbed.emulation import manifest

    path = tmp_path / "registry"
    monkeypatch.setattr(manifest, "REGISTRY_DIR", path)
    monkeypatch.setenv("TESTBED_REGISTRY", str(path))
    return path
