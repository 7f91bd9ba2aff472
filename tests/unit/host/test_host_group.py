"""`testbed hosts`: several host agents in one process on loopback (127.0.4.x), as `testbed host`
agents each in its own process would be: messages delivered and verified, stats per member, and
the process's own figures."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

from testbed.host import records, workloads
from testbed.host.netns import NetNamespace, NetnsError
from testbed.host.slow import SlowCommand, write_command

PORT = 4931


def member_argv(tmp_path, name, addr, *extra):
    return ["--name", name, "--addr", addr, "--port", str(PORT), "--peers-file", str(tmp_path / "peers.json"),
            "--workload-file", str(tmp_path / "wl.json"), "--cc", "tita", "--link-rate-mbps", "20",
            "--link-delay-us", "500", "--records", str(tmp_path / "rec"), "--epoch-file", str(tmp_path / "epoch"),
            "--grace-s", "0.3", "--timeout-s", "30", *extra]


def setup(tmp_path, hosts, wl, name="agents-1", netns=None, extra=lambda name: ()):
    (tmp_path / "peers.json").write_text(json.dumps(hosts))
    (tmp_path / "wl.json").write_text(json.dumps({"seed": 5, "messages": [m.to_json() for m in wl]}))
    members = [{"netns": netns, "argv": member_argv(tmp_path, h, a, *extra(h))} for h, a in hosts.items()]
    (tmp_path / "group.json").write_text(json.dumps({"name": name, "realtime_priority": 0, "members": members}))
    return tmp_path / "group.json"


def start(path):
    proc = subprocess.Popen([sys.executable, "-m", "testbed.cli", "hosts", "--group-file", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc


def write_epoch(tmp_path, ahead_s=0.3):
    partial = tmp_path / "epoch.partial"
    partial.write_text(repr(time.time() + ahead_s))
    partial.replace(tmp_path / "epoch")


def stats_of(tmp_path, name):
    return json.loads((tmp_path / "rec" / f"{name}.stats.json").read_text())


def delivered(tmp_path, name):
    return [r for r in records.read_jsonl(tmp_path / "rec" / f"{name}.jsonl") if r["kind"] == "message_delivered"]


HOSTS = {"h1": "127.0.4.1", "h2": "127.0.4.2", "h3": "127.0.4.3"}


def test_a_group_runs_a_permutation_as_separate_agents_do(tmp_path):
    wl = workloads.permutation(list(HOSTS), 150_000, seed=3, start_us=50_000)
    g = tmp_path / "g"
    g.mkdir()
    proc = start(setup(g, HOSTS, wl))
    assert proc.stdout.readline().strip() == "agents ready 3"
    write_epoch(g)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    process = json.loads((g / "rec" / "agents-1.process.json").read_text())
    assert process["process"] == "agents-1" and process["members"] == list(HOSTS)
    assert process["cpu_s"] > 0 and process["loop_wakeups"] > 0 and process["t_s"][1] > process["t_s"][0]
    from testbed.host import nic_native

    try:
        nic_native.load()
        assert process["nic_pacer"] == "shared"  # one pacing thread, a lane per member
    except nic_native.NativeUnavailable:
        assert process["nic_pacer"] == "per member"
    members = {h: stats_of(g, h) for h in HOSTS}
    assert process["tx_datagrams"] == sum(s["tx_datagrams"] for s in members.values()) > 0
    assert process["rx_datagrams"] == sum(s["rx_datagrams"] for s in members.values()) > 0
    assert process["cpu_us_per_datagram"] == pytest.approx(
        process["cpu_s"] * 1e6 / (process["tx_datagrams"] + process["rx_datagrams"]), rel=0.02)  # cpu_s is rounded
    for h, s in members.items():
        assert s["end_reason"] == "done" and s["agent_process"] == "agents-1"
        assert s["cpu_s"] is None and s["cpu_us_per_datagram"] is None
        assert s["pacer_lateness"]["samples"] == s["tx_datagrams"] > 0  # each member times its own sends
        got = delivered(g, h)
        assert len(got) == 1 and got[0]["verified"]
    # the same permutation, each host a `testbed host` process of its own
    solo = tmp_path / "solo"
    solo.mkdir()
    setup(solo, HOSTS, wl)
    procs = [subprocess.Popen([sys.executable, "-m", "testbed.cli", "host", *member_argv(solo, h, a)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for h, a in HOSTS.items()]
    for p in procs:
        assert p.stdout.readline().strip() == "agent ready"
    write_epoch(solo)
    for p in procs:
        p.communicate(timeout=60)
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert not list((solo / "rec").glob("*.process.json"))
    for h in HOSTS:
        alone = stats_of(solo, h)
        assert "agent_process" not in alone and alone["cpu_s"] > 0
        assert set(alone) | {"agent_process"} == set(members[h])  # everything else as a single agent has
        assert len(delivered(solo, h)) == len(delivered(g, h)) == 1
        assert alone["messages_checked_cell_by_cell"] == members[h]["messages_checked_cell_by_cell"] == 1


@pytest.mark.parametrize("change, says", [
    (lambda g: g.pop("members"), "no 'members' key"),
    (lambda g: g["members"][1]["argv"].append("--epoch-file=/elsewhere"), "different epoch files"),
    (lambda g: g["members"][1]["argv"].append("--cc=warp"), "member 1 (h2): argument --cc: invalid choice"),
    (lambda g: g["members"][2]["argv"].remove("--addr"), "member 2 (h3)"),
    (lambda g: g["members"][0].__setitem__("netns", "/nonexistent/ns"), "member 0 (h1): network namespace"),
])
def test_a_bad_group_file_gives_one_line_and_exit_2(tmp_path, change, says):
    path = setup(tmp_path, HOSTS, workloads.permutation(list(HOSTS), 10_000, seed=3), extra=lambda h: ("--seed", "1"))
    group = json.loads(path.read_text())
    change(group)
    path.write_text(json.dumps(group))
    proc = start(path)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err, err
    # nothing was left bound: the addresses are free again
    for addr in HOSTS.values():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.bind((addr, PORT))


def test_sigterm_stops_every_member_and_each_writes_its_records(tmp_path):
    wl = workloads.permutation(list(HOSTS), 50_000_000, seed=3)  # far more than the test waits for
    proc = start(setup(tmp_path, HOSTS, wl))
    assert proc.stdout.readline().strip() == "agents ready 3"
    write_epoch(tmp_path, 0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    for h in HOSTS:
        s = stats_of(tmp_path, h)
        assert s["end_reason"] == "stopped" and s["tx_datagrams"] > 0
    assert json.loads((tmp_path / "rec" / "agents-1.process.json").read_text())["members"] == list(HOSTS)


def test_sigusr1_applies_only_the_command_file_that_changed(tmp_path):
    wl = workloads.combine(*[[workloads.MessageSpec(src, dst, i, 20_000, start_us=100_000 * i)
                              for i in range(5)] for src, dst in (("h1", "h2"), ("h2", "h3"), ("h3", "h1"))])
    path = setup(tmp_path, HOSTS, wl, extra=lambda h: ("--command-file", str(tmp_path / f"{h}.command.json")))
    write_command(tmp_path / "h3.command.json", SlowCommand(0.0, None))  # there before, never rewritten
    proc = start(path)
    assert proc.stdout.readline().strip() == "agents ready 3"
    write_epoch(tmp_path, 0.1)
    time.sleep(0.25)
    write_command(tmp_path / "h1.command.json", SlowCommand(delay_ms=50.0, rate_mbps=5.0))
    proc.send_signal(signal.SIGUSR1)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    changes = {h: stats_of(tmp_path, h)["slow_changes"] for h in HOSTS}
    assert changes["h2"] == [] and changes["h3"] == []
    assert len(changes["h1"]) == 1 and changes["h1"][0]["delay_ms"] == 50.0
    assert changes["h1"][0]["nic_rate_mbps"] == 5.0 and 0.1 < changes["h1"][0]["t_s"] < 1.0
    for h in HOSTS:
        assert len(delivered(tmp_path, h)) == 5


def can_enter_namespaces() -> str | None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "needs unshare(1) and ip(8)"
    if os.geteuid() != 0:
        return "entering a network namespace (setns) needs CAP_SYS_ADMIN; this runner is not root"
    return None


@pytest.fixture
def namespace():
    why = can_enter_namespaces()
    if why:
        pytest.skip(why)
    holder = subprocess.Popen(["unshare", "--net", "sh", "-c", "ip link set lo up && echo up && sleep 60"],
                              stdout=subprocess.PIPE, text=True)
    try:
        if holder.stdout.readline().strip() != "up":
            pytest.skip("unshare --net could not make a namespace here")
        yield f"/proc/{holder.pid}/ns/net"
    finally:
        holder.kill()
        holder.wait()


def test_sockets_opened_inside_a_namespace_stay_in_it(namespace):
    ns = NetNamespace(namespace)
    with ns.entered():
        inside = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        inside.bind(("127.0.0.1", PORT))
        names = {name for _i, name in socket.if_nameindex()}
    try:
        assert names == {"lo"}  # a fresh namespace has its loopback only
        # back in our own namespace: the same address and port are free here
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as outside:
            outside.bind(("127.0.0.1", PORT))
    finally:
        inside.close()
    assert os.readlink("/proc/thread-self/ns/net") == os.readlink("/proc/self/ns/net")


def test_a_namespace_that_cannot_be_entered_says_which():
    with pytest.raises(NetnsError, match="/nonexistent/ns"):
        with NetNamespace("/nonexistent/ns").entered():
            pass


def test_a_group_of_members_inside_a_namespace(tmp_path, namespace):
    hosts = {"h1": "127.0.4.1", "h2": "127.0.4.2"}
    wl = workloads.permutation(list(hosts), 60_000, seed=3, start_us=50_000)
    proc = start(setup(tmp_path, hosts, wl, netns=namespace))
    assert proc.stdout.readline().strip() == "agents ready 2"
    # their sockets are in the namespace: the same addresses and port are free in ours
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((hosts["h1"], PORT))
    write_epoch(tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    for h in hosts:
        got = delivered(tmp_path, h)
        assert len(got) == 1 and got[0]["verified"] and stats_of(tmp_path, h)["end_reason"] == "done"


def test_a_group_without_the_native_nic_runs_each_member_on_the_python_nic(tmp_path):
    hosts = {"h1": "127.0.4.7", "h2": "127.0.4.8"}
    wl = workloads.permutation(list(hosts), 40_000, seed=3, start_us=50_000)
    proc = subprocess.Popen([sys.executable, "-m", "testbed.cli", "hosts", "--group-file", str(setup(tmp_path, hosts, wl))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TESTBED_NIC": "python"})
    assert proc.stdout.readline().strip() == "agents ready 2"
    write_epoch(tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads((tmp_path / "rec" / "agents-1.process.json").read_text())["nic_pacer"] == "per member"
    for h in hosts:
        s = stats_of(tmp_path, h)
        assert s["nic_queue"]["engine"] == "python" and s["end_reason"] == "done"
        assert len(delivered(tmp_path, h)) == 1


def test_a_member_that_times_out_is_named_and_the_group_exits_3_while_the_others_finish(tmp_path):
    hosts = {"h1": "127.0.4.11", "h2": "127.0.4.12", "h3": "127.0.4.13"}  # h2 is never started
    wl = [workloads.MessageSpec("h1", "h2", 0, 5000), workloads.MessageSpec("h3", "h1", 1, 5000)]
    path = setup(tmp_path, hosts, wl)
    group = json.loads(path.read_text())
    group["members"] = [m for m in group["members"] if m["argv"][1] != "h2"]
    for member in group["members"]:
        member["argv"] += ["--timeout-s", "1.5"]
    path.write_text(json.dumps(group))
    proc = start(path)
    assert proc.stdout.readline().strip() == "agents ready 2"
    write_epoch(tmp_path, 0.1)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("testbed host h1: stopped by timeout"), err
    assert stats_of(tmp_path, "h1")["end_reason"] == "timeout"
    assert stats_of(tmp_path, "h3")["end_reason"] == "done"
    assert json.loads((tmp_path / "rec" / "agents-1.process.json").read_text())["members"] == ["h1", "h3"]


def test_the_group_cpu_is_its_loops_and_leaves_out_the_records_written_after_it(tmp_path, monkeypatch):
    """The process's cpu_s is the CPU of its loop (what a datagram costs), as a single agent's is:
    the members' records, written once the loop is over, are not counted in it."""
    from testbed.host.agent import Agent
    from testbed.host.group import build_group

    hosts = {"h1": "127.0.4.21", "h2": "127.0.4.22"}
    wl = workloads.permutation(list(hosts), 30_000, seed=3, start_us=20_000)
    group, _epoch_file, _epoch, _timeout = build_group(setup(tmp_path, hosts, wl))
    write_records = Agent.write_records
    burnt = {}

    def slow_write_records(agent, reason):
        started = time.process_time()
        while time.process_time() - started < 0.25:  # CPU, not sleep: what a slow JSON dump costs
            pass
        burnt[agent.name] = time.process_time() - started
        write_records(agent, reason)

    monkeypatch.setattr(Agent, "write_records", slow_write_records)
    for agent in group.agents:
        agent.epoch = time.time() + 0.1
    results = group.run()
    assert [r.reason for r in results] == ["done", "done"]
    assert sorted(burnt) == ["h1", "h2"]
    process = json.loads((tmp_path / "rec" / "agents-1.process.json").read_text())
    assert 0 < process["cpu_s"] < sum(burnt.values())  # 0.5 s burnt writing records, outside the loop
