"""STF -> ControlPlane -> compiled pipeline, with the P4Info generator's
output, on the compiler's hand-built IPv4 program (no front end needed)."""

import io

import pytest

handbuilt = pytest.importorskip("tests.unit.compile.test_handbuilt")

from testbed.p4model.p4info import generate  # noqa: E402
from testbed.p4model.pipeline import Pipeline  # noqa: E402
from testbed.p4model.stf import run_files  # noqa: E402

STF = """
add ipv4_lpm dstAddr:0x0a000100/24 ipv4_forward(dstAddr:0x000000000102, port:2)
setdefault ipv4_lpm ipv4_forward(dstAddr:0x000000000999, port:3)
packet 1 000000000001 0000000000AA 0800 4500 0018 0001 0000 4011 65C7 0A000009 0A000105 DEADBEEF
expect 2 000000000102 000000000001 0800 4500 0018 0001 0000 3F11 66C7 0A000009 0A000105 DEADBEEF $
packet 1 000000000001 0000000000AA 0800 4500 0018 0001 0000 4011 65CB 0A000009 0B000001 DEADBEEF
expect 3 000000000999 000000000001 0800 4500 0018 0001 0000 3F11 66CB 0A000009 0B000001 DEADBEEF $
"""


def test_stf_through_the_compiled_pipeline(tmp_path):
    info = generate(handbuilt.build_basic())
    path = tmp_path / "basic.stf"
    path.write_text(STF)
    out = io.StringIO()
    passed, failed = run_files(
        lambda clock: (Pipeline(handbuilt.build_basic(), clock=clock), info), [path], out=out)
    assert (passed, failed) == (1, 0), out.getvalue()
