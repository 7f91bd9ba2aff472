"""A fabric over several servers, without a network: what each server's runner runs, which cable
becomes which tunnel and what each server records and removes, the tunnel probe's arithmetic, and
the manifest's parts on other servers."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from testbed.emulation import cleanup
from testbed.emulation.cluster import Runner, ServerCommandError, ServerNode
from testbed.emulation.cluster_network import TAP_BASE, ClusterNetwork, removal_script, tunnel_argv
from testbed.emulation.manifest import Manifest
from testbed.emulation.network import Pacing
from testbed.emulation.tunnel_probe import figures, frame, parse
from testbed.scenario import parse_scenario
from testbed.scenario.model import Server
from testbed.scenario.servers import server_switches
from testbed.topo.partition import split_servers

HERE = Server("here", "localhost")
THERE = Server("there", "10.9.8.7", "root")

SCENARIO = """name: cl
topology: {kind: fat_tree, k: 4}
links: {rate_mbps: 5}
switch: {target: builtin, backend: python}
placement:
  servers:
    - {name: here, address: localhost}
    - {name: there, address: 10.9.8.7, user: root}
workload:
  - {kind: permutation, message_bytes: 20000, count: 1}
"""


def test_localhost_runs_here_and_any_other_server_over_one_shared_ssh_connection(tmp_path, monkeypatch):
    monkeypatch.delenv("TESTBED_SSH_CONFIG", raising=False)
    assert Runner(HERE, tmp_path).wrap(["ip", "link"]) == ["ip", "link"]
    argv = Runner(THERE, tmp_path, ssh_config="/etc/cl.conf").wrap(["ip", "netns", "exec", "n 1", "x"], cwd="/r d")
    assert argv[:3] == ["ssh", "-F", "/etc/cl.conf"]
    assert argv[-2] == "root@10.9.8.7" and argv[-1] == "cd '/r d' && exec ip netns exec 'n 1' x"
    for option in ("BatchMode=yes", "ConnectTimeout=5", "StrictHostKeyChecking=accept-new",
                   "ControlMaster=auto", f"ControlPath={tmp_path}/%C", "ControlPersist=60"):
        assert option in argv
    node = ServerNode("h1", Runner(THERE, tmp_path), "tb1-h1")
    assert node.command(["ip", "addr"]) == ["ip", "netns", "exec", "tb1-h1", "ip", "addr"]


def test_a_local_runner_runs_spawns_and_says_what_failed(tmp_path):
    runner = Runner(HERE)
    assert runner.run(["echo", "hi"], "greet").strip() == "hi"
    with pytest.raises(ServerCommandError, match=r"^server here \(localhost\): cannot fail on purpose: sh -c "
                                                 r"'echo no; exit 3' exited with 3: no$"):
        runner.run(["sh", "-c", "echo no; exit 3"], "fail on purpose")
    handle, pid, start = runner.spawn([sys.executable, "-c", "print('logged')"], tmp_path / "out.log")
    assert handle.pid == pid and handle.wait(timeout=20) == 0
    assert start > 0 and (tmp_path / "out.log").read_text() == "logged\n"


def test_each_cut_cable_is_a_tunnel_with_distinct_taps_and_the_client_on_this_machine():
    scenario = parse_scenario(SCENARIO, "cl.yaml")
    groups = server_switches(scenario)
    assert groups == split_servers(scenario.topo, 2)
    where = {s: i for i, g in enumerate(groups) for s in g}
    runners = [Runner(HERE), Runner(THERE)]
    network = ClusterNetwork(scenario.topo, Pacing(5), frozenset(), None, runners, where, "7")
    assert len(network.tunnels) == 8  # a k=4 tree over two servers cuts 8 cables (partition.py)
    taps = [t for x in network.tunnels for t in (x.client_tap, x.server_tap)]
    assert sorted(taps) == list(range(TAP_BASE, TAP_BASE + 16))
    for x in network.tunnels:
        assert x.client == 0 and x.server == 1  # the ssh client runs here, where `localhost` is
        link = next(link for link in scenario.topo.links if link.name == x.cable)
        assert {x.client_interface, x.server_interface} == {f"{link.a}-eth{link.a_port}", f"{link.b}-eth{link.b_port}"}
    parts = network.server_parts()
    hosts_there = [h for h in scenario.topo.hosts if where[scenario.topo.tors_of(h)[0]] == 1]
    assert parts[1]["namespaces"] == [f"tb7-{h}" for h in hosts_there] and len(hosts_there) == 8
    assert "tap6001" in parts[1]["interfaces"] and "tap6000" in parts[0]["interfaces"]
    mine = set(parts[0]["interfaces"]) & set(parts[1]["interfaces"])
    assert not mine  # no interface is recorded on both servers
    argv = tunnel_argv(runners[1], 6000, 6001)
    assert argv[-1] == "root@10.9.8.7" and "Tunnel=ethernet" in argv and argv[argv.index("-w") + 1] == "6000:6001"
    assert "-N" in argv and "ControlPath=none" in argv and "ExitOnForwardFailure=yes" in argv
    runners[1].ssh_config = "/here/only.conf"
    assert tunnel_argv(runners[1], 1, 2)[1:3] == ["-F", "/here/only.conf"]
    assert "-F" not in tunnel_argv(runners[1], 1, 2, here=False)  # started there: its own configuration


def test_what_a_run_over_servers_cannot_do_is_refused_in_one_line(monkeypatch):
    from testbed.scenario import servers as servers_module

    monkeypatch.setattr(servers_module, "probe", lambda server: servers_module.ServerFacts(2, 64 << 30))
    servers_module._FACTS.clear()
    from testbed.emulation.network import NetworkError
    from testbed.emulation.run import refuse_servers
    from testbed.errors import TestbedError

    dual = parse_scenario(SCENARIO.replace("{kind: fat_tree, k: 4}", "{kind: fat_tree, k: 4, dual_homed: true}"),
                          "cl.yaml")
    where = {s: i for i, g in enumerate(server_switches(dual)) for s in g}
    split = [h for h in dual.topo.hosts if len({where[t] for t in dual.topo.tors_of(h)}) > 1]
    if split:  # the partition may keep every host's pair of ToRs together; name them apart then
        with pytest.raises(TestbedError, match=f"^cl.yaml: placement.servers: host {split[0]} plugs into "):
            refuse_servers(dual)
    where = {s: i % 2 for i, s in enumerate(dual.topo.switches)}
    pairs = [h for h in dual.topo.hosts if len({where[t] for t in dual.topo.tors_of(h)}) > 1]
    assert pairs
    with pytest.raises(NetworkError, match=f"^host {pairs[0]} plugs into "):
        ClusterNetwork(dual.topo, Pacing(5), frozenset(), None, [Runner(HERE), Runner(THERE)], where, "7")
    faulted = parse_scenario(SCENARIO + "faults:\n  - {kind: link_down, at_s: 1, target: " +
                             f"{dual.topo.links[-1].name}" + "}\n", "cl.yaml")
    with pytest.raises(TestbedError, match="^cl.yaml: faults: a fabric over several servers"):
        refuse_servers(faulted)
    refuse_servers(parse_scenario(SCENARIO, "cl.yaml"))  # nothing to refuse


def test_the_removal_script_stops_what_runs_in_each_namespace_and_never_fails_on_what_is_gone():
    text = removal_script(["tb7-h1"], ["spine1-eth1"])
    assert "ip netns pids tb7-h1" in text and "ip netns del tb7-h1" in text
    assert "[ -e /sys/class/net/spine1-eth1 ] && ip link del spine1-eth1" in text
    done = subprocess.run(["sh", "-e", "-s"], input=removal_script(["tb-no-such-ns-x"], ["no-such-if0"]),
                          text=True, capture_output=True)
    assert done.returncode == 0 and not done.stderr


def test_probe_frames_and_figures():
    data = frame(41, 123456789)
    assert len(data) == 60 and data[12:14] == b"\x88\xb5" and parse(data) == (41, 123456789)
    assert parse(b"\0" * 60) is None
    got = figures(5, [100.0, 110.0, 100.0, 130.0])
    assert got["sent"] == 5 and got["received"] == 4
    assert got["one_way_us"] == {"mean": 110.0, "p50": 110.0, "p99": 130.0, "max": 130.0}
    assert got["jitter_us"] == pytest.approx((10 + 10 + 30) / 3, abs=0.05)
    assert figures(3, []) == {"sent": 3, "received": 0, "one_way_us": None, "jitter_us": None}


def test_the_manifest_keeps_each_other_servers_part_and_clean_takes_it_there(tmp_path, monkeypatch):
    manifest = Manifest(run_id="r", path=tmp_path / "manifest.json")
    monkeypatch.setattr("testbed.emulation.manifest.REGISTRY_DIR", tmp_path / "registry")
    manifest.add_server(THERE, "/etc/cl.conf")
    manifest.plan_interfaces(["spine1-eth1"], THERE.login)
    manifest.plan_namespaces(["tb7-h9"], THERE.login)
    manifest.add_process(4242, "fabric1", ["python"], THERE.login, 99)
    manifest.plan_interfaces(["leaf1-eth1"])
    loaded = Manifest.load(manifest.path)
    part = loaded.remote[THERE.login]
    assert part["server"] == {"name": "there", "address": "10.9.8.7", "user": "root"}
    assert part["ssh_config"] == "/etc/cl.conf" and part["interfaces"] == ["spine1-eth1"]
    assert part["namespaces"] == ["tb7-h9"] and part["processes"][0]["pid"] == 4242
    assert loaded.interfaces == ["leaf1-eth1"]
    asked = []

    def fake_run(self, argv, what, stdin=None, cwd=None, timeout_s=60, check=True):
        asked.append((self.server.login, self.ssh_config, argv[1:], json.loads(stdin)))
        raise ServerCommandError(f"{self.label}: cannot {what}: ssh: connect to host 10.9.8.7 port 22: timed out")

    monkeypatch.setattr(Runner, "run", fake_run)
    monkeypatch.setattr(cleanup, "clean_part", lambda *a: cleanup.CleanReport())
    report = cleanup.clean_manifest(loaded)
    assert asked == [("root@10.9.8.7", "/etc/cl.conf", ["-m", "testbed.emulation.cleanup"],
                      {"processes": part["processes"], "interfaces": ["spine1-eth1"], "namespaces": ["tb7-h9"]})]
    assert report.problems == ["server there (root@10.9.8.7): cannot clean this run's part: ssh: connect to host "
                               "10.9.8.7 port 22: timed out"]
    assert not Manifest.load(manifest.path).finished  # kept for the next clean


def test_cleanup_main_cleans_the_part_on_its_stdin_and_answers_in_json():
    document = json.dumps({"processes": [{"pid": 1, "start_time": -5, "role": "not ours", "argv": []}],
                           "interfaces": ["no-such-if0"], "namespaces": ["tb-no-such-ns"]})
    done = subprocess.run([sys.executable, "-m", "testbed.emulation.cleanup"], input=document, text=True,
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"killed": [], "interfaces": [], "namespaces": [], "problems": []}
