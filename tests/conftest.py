"""Shared test configuration: markers that skip with a clear reason."""

import os
import shutil

import pytest


def _integration_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "integration tests need root (network namespaces, Mininet)"
    try:
        import mininet  # noqa: F401
    except ImportError:
        return "integration tests need Mininet (Debian package 'mininet'; run 'make setup')"
    return None


def _bmv2_unavailable() -> str | None:
    missing = [b for b in ("simple_switch_grpc", "p4c-bm2-ss") if shutil.which(b) is None]
    if missing:
        return f"bmv2 tests need {' and '.join(missing)} on PATH (the Vagrant lab installs them)"
    return None


def pytest_collection_modifyitems(config, items):
    reasons = {"integration": _integration_unavailable(), "bmv2": _bmv2_unavailable()}
    for item in items:
        for marker, reason in reasons.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))
