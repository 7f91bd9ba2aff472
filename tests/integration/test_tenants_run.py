"""Tenants on the emulated fabric: the ping-all check, which every run with tenants makes before
its traffic (no pingall phase here), reaches every pair within a tenant and no pair across, each
refused ping counted at its source's ToR under its reason (fabric.p4's drop counters in the
switches' 100 ms telemetry); the report's first lines say so; the tenant's own traffic completes."""

from __future__ import annotations

import json

import pytest

from testbed.telemetry.tenants import reachability_lines

from fitting import run_fitted  # noqa: E402 (tests/integration is on sys.path)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCENARIO = """
name: tenants-run
duration_s: 10
topology: {kind: leaf_spine, leaves: 2, spines: 2, hosts_per_leaf: 3}
links: {rate_mbps: 5, delay_us: 2500, fabric: {rate_mbps: 2.5}}
fabric: {load_balancing: spray, cell_size: 1024}
transport: {cc: tita}
tenants:
  - {name: blue, hosts: [h1, h2, h4]}
  - {name: red, hosts: [h3, h5]}
workload:
  - {kind: all_to_all, start_s: 0.5, hosts: [h1, h2, h4], message_bytes: 32768}
"""


def test_tenants_isolated_on_the_emulated_fabric(tmp_path, registry):
    scenario, result, summary, run_dir, context = run_fitted(SCENARIO, tmp_path / "tenants")
    # within: blue 3 x 2 + red 2 x 1 ordered pairs; across: the other 30 - 8, h6 (in no tenant) included
    assert result.pingall == {"pairs": 8, "failed": [], "across_tenants": 22, "crossed": []}, context
    assert summary["messages_planned"] == summary["messages_completed"] == 6, context
    assert reachability_lines({"base": summary}) == [
        "- Tenants (base): ping-all before traffic: 8/8 pairs within tenants answered, 0/22 across; "
        "as the tenants say.", ""]
    last: dict[str, dict] = {}
    for line in (run_dir / "telemetry.jsonl").read_text().splitlines():
        record = json.loads(line)
        if "switch" in record:
            last[record["switch"]] = record.get("drops_packets", {})
    counted = {reason: sum(drops.get(reason, 0) for drops in last.values())
               for reason in ("foreign_tenant", "port_unbound")}
    # blue's 3 hosts ping 3 foreign hosts each, red's 2 ping 4: 17 foreign; h6's 5 pings: its port unbound
    assert counted == {"foreign_tenant": 17, "port_unbound": 5}, (counted, context)
