"""Fixtures of the ControlPlane tests: a ControlPlane over the toy pipeline."""

import pytest
from fake_switch import make_p4info, make_pipeline

from testbed.p4model.control_plane import ControlPlane


@pytest.fixture
def switch():
    pipeline = make_pipeline()
    return ControlPlane(pipeline, make_p4info()), pipeline
