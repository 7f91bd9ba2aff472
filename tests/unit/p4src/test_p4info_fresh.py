"""The committed P4Info files of p4src/ are what `make p4info` generates now."""

from __future__ import annotations

import subprocess
import sys

from .conftest import P4SRC, ROOT


def test_committed_p4info_is_fresh():
    result = subprocess.run(
        [sys.executable, "-m", "testbed.p4model.tools.regen_p4info", "p4src", "--check"],
        capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_program_has_its_p4info():
    for program in ("basic", "fabric"):
        assert (P4SRC / f"{program}.p4info.txtpb").is_file()


def test_fabric_p4info_has_the_contract_objects():
    """The names the controller and the telemetry collector use (p4src/README.md)."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    info = text_format.Parse((P4SRC / "fabric.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    names = {kind: {o.preamble.name for o in getattr(info, kind)}
             for kind in ("tables", "counters", "meters", "registers")}
    assert names["tables"] == {"FabricIngress.cell_config", "FabricIngress.ipv4_routes",
                               "FabricIngress.groups", "FabricIngress.group_members",
                               "FabricIngress.hash_config", "FabricEgress.port_macs", "FabricEgress.ecn_config",
                               "FabricEgress.int_config", "FabricIngress.tenant_config",
                               "FabricIngress.tenant_ports", "FabricIngress.tenant_hosts",
                               "FabricIngress.tenant_queues"}
    assert names["counters"] == {"FabricIngress.rx_port", "FabricIngress.drops",
                                 "FabricEgress.tx_port", "FabricEgress.drops",
                                 "FabricEgress.ecn_marks", "FabricIngress.tenant_packets",
                                 "FabricIngress.tenant_drops"}
    assert names["meters"] == {"FabricIngress.credit_meter", "FabricIngress.tenant_meter"}
    assert names["registers"] == {"FabricIngress.rr_next", "FabricEgress.max_qdepth"}
