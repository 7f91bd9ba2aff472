"""p4runtime-shell drives a running builtin switch (the same script runs against
simple_switch_grpc in tests/bmv2)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import p4rt_shell_script  # noqa: E402
from switch_net import PROGRAMS, SwitchNet, p4info_file  # noqa: E402

pytestmark = pytest.mark.integration


def test_p4runtime_shell_session(tmp_path):
    program = PROGRAMS / "switch_l3_cpu.p4"
    net = SwitchNet(hosts=2)
    try:
        net.start_switch(tmp_path)
        facts = p4rt_shell_script.run(net, net.grpc_addr, p4info_file(program, tmp_path), program)
        p4rt_shell_script.check(facts)
        assert net.switch_alive()
        assert net.stop_switch() == 0
    finally:
        net.close()
