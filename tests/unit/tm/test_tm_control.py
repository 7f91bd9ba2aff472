"""The control protocol over a real loopback TCP socket, the client and the CLI."""

import json
import socket
import threading

import pytest

from testbed.cli import main
from testbed.p4model.clock import ManualClock
from testbed.p4model.tm import TMCommands, TrafficManager
from testbed.p4model.tm.control import (
    CommandQueue,
    ControlServer,
    LockedExecutor,
    SwitchControlClient,
    SwitchControlError,
    parse_address,
)


@pytest.fixture
def tm():
    return TrafficManager(ManualClock(), priority_queues=2, ports=[1, 2])


@pytest.fixture
def server(tm):
    with ControlServer(LockedExecutor(TMCommands(tm)), host="127.0.0.1", port=0) as srv:
        yield srv


def raw_session(address, payload: bytes, replies: int) -> list[dict]:
    with socket.create_connection(address, timeout=5) as sock:
        sock.sendall(payload)
        reader = sock.makefile("rb")
        return [json.loads(reader.readline()) for _ in range(replies)]


def test_one_json_reply_per_line_and_errors_keep_the_server_alive(server, tm):
    replies = raw_session(server.address, b"set_queue_rate 10 1 1\nbogus 1\n\n# note\n"
                          b"set_queue_depth x\n\xff\xfe\nqueue_stats 1\n", 5)
    assert replies[0]["ok"] and replies[0]["result"]["scope"] == "port 1 priority 1"
    assert replies[1] == {"ok": False, "command": "bogus",
                          "error": replies[1]["error"]} and "unknown command" in replies[1]["error"]
    assert not replies[2]["ok"] and "<nb_pkts>" in replies[2]["error"]
    assert not replies[3]["ok"] and "UTF-8" in replies[3]["error"]
    assert [r["rate_pps"] for r in replies[4]["result"]] == [0, 10]
    # the server still serves new connections
    assert raw_session(server.address, b"tm_stats\n", 1)[0]["ok"]


def test_overlong_line_is_refused(server):
    (reply,) = raw_session(server.address, b"x" * (70 * 1024) + b"\n", 1)
    assert not reply["ok"] and "longer than" in reply["error"]


def test_client_methods_mirror_the_commands(server, tm):
    with SwitchControlClient(*server.address) as client:
        assert client.set_queue_rate(1000)["queues"] == 4
        assert client.set_queue_rate(50, 2)["queues"] == 2
        assert client.set_queue_rate(5, 2, 1)["scope"] == "port 2 priority 1"
        assert client.set_queue_depth(32, 1, 0)["depth_packets"] == 32
        assert client.set_queue_depth_bytes(9000, 1)["queues"] == 2
        assert client.set_port_rate_bps(20_000_000, 1)["ports"] == 1
        assert client.set_port_delay_us(7.5)["ports"] == 2
        tm.enqueue(1, 1, b"x" * 100)
        tm.enqueue(1, 3, b"x" * 100)
        stats = {(r["port"], r["priority"]): r for r in client.queue_stats()}
        assert stats[(1, 0)]["limit_packets"] == 32 and stats[(2, 1)]["rate_pps"] == 5
        assert stats[(1, 1)]["depth"] == 1 and stats[(1, 1)]["bytes"] == 100
        assert len(client.queue_stats(2)) == 2
        summary = client.tm_stats()
        assert summary["totals"]["dropped_priority"] == 1
        assert summary["ports"][0]["delay_us"] == 7.5
        assert "dequeue" in summary["fidelity"]
        assert "tm_stats" in client.help()
        with pytest.raises(SwitchControlError, match="refused: set_queue_rate: argument <priority>"):
            client.set_queue_rate(5, 2, 7)
        with pytest.raises(SwitchControlError, match="needs a port"):
            client.set_queue_depth(5, None, 1)


def test_client_reports_an_unreachable_switch():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: refused
        with pytest.raises(SwitchControlError, match=f"127.0.0.1:{port}"):
            SwitchControlClient("127.0.0.1", port, timeout_s=2).tm_stats()


def test_listen_failure_is_a_clear_error(server):
    with pytest.raises(SwitchControlError, match="cannot listen"):
        ControlServer(lambda line: None, *server.address)


def test_command_queue_runs_commands_in_the_event_loop_thread(tm):
    queue = CommandQueue(TMCommands(tm), timeout_s=5)
    ran_in = []
    stop = threading.Event()

    def event_loop():
        import select
        while not stop.is_set():
            ready, _, _ = select.select([queue], [], [], 0.05)
            if ready:
                ran_in.append(threading.current_thread().name)
                queue.drain()

    loop = threading.Thread(target=event_loop, name="event-loop")
    loop.start()
    try:
        with ControlServer(queue, port=0) as srv, SwitchControlClient(*srv.address) as client:
            client.set_port_rate_bps(1_000_000, 2)
            assert client.tm_stats()["ports"][1]["rate_bps"] == 1_000_000
    finally:
        stop.set()
        loop.join()
        queue.close()
    assert ran_in and set(ran_in) == {"event-loop"}


def test_command_queue_times_out_without_an_event_loop(tm):
    queue = CommandQueue(TMCommands(tm), timeout_s=0.05)
    reply = queue("tm_stats")
    assert not reply["ok"] and "did not run 'tm_stats'" in reply["error"]
    assert queue.drain() == 1  # the late command still runs, as the error says
    queue.close()


def test_switch_cli_one_command_and_stdin(server, capsys, monkeypatch):
    address = "%s:%d" % server.address
    assert main(["switch-cli", "--switch", address, "set_queue_depth", "12", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"] == "port 2"
    assert main(["switch-cli", "--switch", address, "set_queue_depth", "many"]) == 1
    assert "<nb_pkts>" in capsys.readouterr().err
    import io
    monkeypatch.setattr("sys.stdin", io.StringIO("queue_stats 2\nnope\n"))
    assert main(["switch-cli", "--switch", address]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["limit_packets"] == 12
    assert "unknown command 'nope'" in captured.err


def test_parse_address():
    assert parse_address("10.0.0.1:9091") == ("10.0.0.1", 9091)
    assert parse_address("9092") == ("127.0.0.1", 9092)
    assert parse_address("[::1]:9093") == ("::1", 9093)
    with pytest.raises(SwitchControlError, match="HOST:PORT"):
        parse_address("host:port")
