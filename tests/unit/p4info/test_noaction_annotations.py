"""NoAction's P4Info annotations are those of p4c v1.2.5.8 (the reference
release): core.p4's `@noWarn("unused")` only.  No p4c release annotates
core.p4 with @corelib, so its P4Info never lists it."""

from pathlib import Path

from testbed.p4model.p4info import generate_file

PROGRAM = Path(__file__).resolve().parents[2] / "p4programs" / "basic_ipv4.p4"


def test_noaction_has_only_nowarn_unused():
    info = generate_file(PROGRAM)
    [noaction] = [a for a in info.actions if a.preamble.name == "NoAction"]
    assert list(noaction.preamble.annotations) == ['@noWarn("unused")']
