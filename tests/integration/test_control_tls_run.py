"""A run with switch.control_tls: the switches take only the run's own clients, and the run still
configures them (P4Runtime and the TM control port), pings every pair and reads the traffic
managers' statistics through the run's certificates; at its end the private keys are gone.
While it runs, a client without the run's certificate is refused from the machine, and from a
host's namespace (a tenant's root) neither control port of any switch answers."""

import json
import sys
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from testbed.emulation.network import run_in
from testbed.emulation.run import VariantRun
from testbed.scenario import expand_variants, parse_scenario

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """
name: tls
duration_s: 5
topology: {kind: leaf_spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {rate_mbps: 10, delay_us: 100}
switch: {target: builtin, control_tls: true}
transport: {cc: none}
workload:
  - {kind: pingall}
"""

# Run in a host's namespace: a plain P4Runtime call, a TLS one with the CA but no certificate, and
# the TM control port, against every switch; one line per attempt.
PROBE = """
import json, socket, sys
import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
targets = json.loads(sys.argv[1])
for grpc_addr, host, port, ca in targets:
    for how in ("plain", "ca only"):
        creds = None if how == "plain" else grpc.ssl_channel_credentials(open(ca, "rb").read())
        channel = grpc.insecure_channel(grpc_addr) if creds is None else grpc.secure_channel(grpc_addr, creds)
        try:
            p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=2)
            print(grpc_addr, how, "ANSWERED")
        except grpc.RpcError as error:
            print(grpc_addr, how, error.code().name)
    try:
        with socket.create_connection((host, port), timeout=2) as sock:
            sock.sendall(b"tm_stats\\n")
            print(host, port, "tm", "ANSWERED" if sock.recv(1) else "CLOSED")
    except OSError as error:
        print(host, port, "tm", type(error).__name__)
"""


def test_a_run_with_control_tls_configures_its_switches_and_refuses_strangers(tmp_path, registry):
    (variant,) = expand_variants(parse_scenario(SCENARIO, "tls.yaml"))
    run = VariantRun(variant, tmp_path / "tls", ROOT, progress=lambda m: None)
    refused = {}
    pingall = run._pingall

    def stranger_then_pingall():  # while the switches run: a client without the run's certificate
        switch = run.switches[0]
        with grpc.insecure_channel(switch.grpc_addr) as channel:
            try:
                p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(p4runtime_pb2.CapabilitiesRequest(),
                                                                        timeout=3)
            except grpc.RpcError as error:
                refused["p4runtime"] = error.code()
        targets = [[c.grpc_addr, c.address, c.thrift_port, str(run.certificates.ca)] for c in run.switches]
        refused["from h1"] = run_in(run.network.host("h1"), [sys.executable, "-c", PROBE, json.dumps(targets)],
                                    "probe the control ports from h1").split("\n")
        pingall()

    run._pingall = stranger_then_pingall
    result = run.run()
    context = f"notes {result.notes}"
    assert result.failed is None, context
    from_h1 = [line for line in refused.pop("from h1") if line.strip()]
    assert refused == {"p4runtime": grpc.StatusCode.UNAVAILABLE}, context
    assert len(from_h1) == 3 * 3 and not [line for line in from_h1 if "ANSWERED" in line], from_h1
    assert result.pingall["pairs"] and not result.pingall["failed"], context
    assert set(result.tm_stats) == {"leaf1", "leaf2", "spine1"}, context  # telemetry's certificate
    certs = tmp_path / "tls" / "certs"
    assert (certs / "ca.pem").is_file() and (certs / "roles.yaml").is_file()
    assert not list(certs.glob("*.key")), "the run's private keys outlived it"
