"""Shared test configuration: markers that skip with a clear reason."""

import os

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
    from testbed.targets import bmv2_problem

    problem = bmv2_problem()
    return f"bmv2 tests need a usable bmv2: {problem} (the Vagrant lab installs one)" if problem else None


def pytest_collection_modifyitems(config, items):
    reasons = {"integration": _integration_unavailable(), "bmv2": _bmv2_unavailable()}
    for item in items:
        for marker, reason in reasons.items():
            if reason and item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))
