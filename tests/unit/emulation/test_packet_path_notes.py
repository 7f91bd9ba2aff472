"""A run's packet path says in its notes what the switches will not log."""

from __future__ import annotations

import pytest

from testbed.emulation import packet_path
from testbed.scenario import load_scenario


def _scenario(tmp_path, backend: str, level: str):
    path = tmp_path / "s.yaml"
    path.write_text("name: nat\nduration_s: 3\ntopology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}\n"
                    f"switch: {{target: builtin, backend: {backend}, log_level: {level}}}\n"
                    "workload:\n  - {kind: permutation, start_s: 1, message_bytes: 10000}\n")
    return load_scenario(str(path))


@pytest.mark.parametrize("level, noted", [("debug", True), ("warn", False)])
def test_native_with_a_per_packet_level_is_noted(level, noted, tmp_path, monkeypatch):
    monkeypatch.setattr(packet_path, "native_problem", lambda program: None)
    monkeypatch.setattr(packet_path, "packet_path", lambda target, backend, log_level: "native")
    path, note = packet_path.choose(_scenario(tmp_path, "native", level))
    assert path == "native"
    assert (note is not None and "wrote no per-packet log" in note) == noted
