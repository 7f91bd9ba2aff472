"""The switch's argv has simple_switch_grpc's shape (options, program, `--`, target options)."""

import pytest

from testbed.cli import build_parser
from testbed.p4model.switch.options import OptionsError, parse_args


def test_bmv2_shaped_command_line():
    opts = parse_args(["-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "3", "--thrift-port", "9092",
                       "--log-file", "/tmp/s1.log", "--log-level", "debug", "--pcap", "/tmp/pcaps",
                       "prog.p4", "--", "--grpc-server-addr", "127.0.0.1:9561", "--cpu-port", "255",
                       "--priority-queues", "2", "--drop-port", "500"])
    assert opts.interfaces == {1: "s1-eth1", 2: "s1-eth2"}
    assert (opts.device_id, opts.thrift_port, opts.log_file, opts.log_level) == (3, 9092, "/tmp/s1.log", "debug")
    assert opts.pcap_dir == "/tmp/pcaps" and opts.program == "prog.p4"
    assert (opts.grpc_host, opts.grpc_port, opts.cpu_port) == ("127.0.0.1", 9561, 255)
    assert (opts.priority_queues, opts.drop_port) == (2, 500)


def test_defaults_match_bmv2_and_target_options_are_accepted_before_the_split():
    opts = parse_args(["--no-p4", "--cpu-port", "64", "--tm", "set_queue_rate 100 1", "--", "--tm",
                       "set_port_delay_us 50"])
    assert opts.no_p4 and opts.program is None and opts.cpu_port == 64
    assert (opts.device_id, opts.thrift_port, opts.grpc_addr, opts.drop_port) == (0, 9090, "0.0.0.0:9559", 511)
    assert opts.log_level == "warn" and opts.pcap_dir is None
    assert opts.tm_commands == ["set_queue_rate 100 1", "set_port_delay_us 50"]


def test_pcap_without_directory_and_short_log_level():
    opts = parse_args(["-L", "trace", "--pcap", "--", "--cpu-port", "3"])
    assert opts.pcap_dir == "." and opts.log_level == "trace"


@pytest.mark.parametrize("argv, message", [
    (["-i", "eth0"], "PORT@IFACE"),
    (["-i", "x@eth0"], "PORT@IFACE"),
    (["-i", "600@eth0"], "outside 0..510"),
    (["-i", "1@a", "-i", "1@b"], "port 1 is given twice"),
    (["-i", "1@a", "-i", "2@a"], "interface a is given twice"),
    (["--grpc-server-addr", "nohost"], "HOST:PORT"),
    (["--priority-queues", "9"], "1..8"),
    (["--cpu-port", "1", "-i", "1@a"], "also an interface port"),
    (["--no-p4", "prog.p4"], "choose one"),
])
def test_bad_values_are_one_sentence(argv, message):
    with pytest.raises(OptionsError, match=message):
        parse_args(argv)


def test_unknown_options_exit_with_usage(capsys):
    with pytest.raises(SystemExit) as excinfo:
        parse_args(["--", "--no-such-option"])
    assert excinfo.value.code == 2


def test_testbed_switch_passes_argv_through_untouched():
    args = build_parser().parse_args(["switch", "-i", "1@a", "--", "--cpu-port", "3"])
    assert args.argv == ["-i", "1@a", "--", "--cpu-port", "3"]
