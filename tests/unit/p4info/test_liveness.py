"""P4Info keeps what p4c's front end keeps (tests/p4programs/
conf_p4info_liveness.p4): the dead branch of `if (true)` refers to
nothing, a table applied in another table's key is applied, and an
action only called directly has its parameters bound by the call."""

from pathlib import Path

from testbed.p4model.p4info import generate_file

PROGRAM = Path(__file__).resolve().parents[2] / "p4programs" / "conf_p4info_liveness.p4"


def test_dead_branch_action_is_dropped_and_key_applied_table_kept():
    info = generate_file(PROGRAM)
    assert sorted(a.preamble.name for a in info.actions) == ["I.called", "I.live_one", "NoAction"]
    assert sorted(t.preamble.name for t in info.tables) == ["I.inner", "I.outer"]


def test_action_only_called_directly_has_no_params():
    info = generate_file(PROGRAM)
    [called] = [a for a in info.actions if a.preamble.name == "I.called"]
    assert list(called.params) == []
