"""Pieces of `testbed stf --target bmv2|both` that need no bmv2: the
differential comparison, STF lines -> simple_switch_CLI commands, and the
one-line error when the binaries are missing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.p4model.stf.cli_commands import CliTranslator
from testbed.p4model.stf.differential import differences
from testbed.p4model.stf.parser import StfError, parse_text
from testbed.p4model.stf.result import FileResult

ROOT = Path(__file__).resolve().parents[3]


def result(target, received, error=None):
    return FileResult("t.stf", target, received=received, error=error)


def test_the_same_outputs_have_no_differences():
    a = result("builtin", {1: [b"\x01\x02"], 2: []})
    b = result("bmv2", {1: [b"\x01\x02"], 2: []})
    assert differences(a, b) == []


def test_differences_are_reported_per_port_and_packet():
    a = result("builtin", {1: [b"\x01\x02", b"\x03"], 2: [b"\x05"]})
    b = result("bmv2", {1: [b"\x01\x09", b"\x03"], 2: []})
    problems = differences(a, b)
    text = "\n".join(line for lines in problems for line in lines)
    assert "port 1, packet 1: builtin and bmv2 differ (2 vs 2 bytes)" in text
    assert " builtin 01 02" in text and "    bmv2 01 09" in text and "^" in text
    assert "port 2: builtin sent 1 packet(s), bmv2 0" in text
    assert "port 2, packet 1: only builtin sent it" in text
    assert "port 1, packet 2" not in text


def test_a_target_that_could_not_run_is_not_compared():
    problems = differences(result("builtin", {}), result("bmv2", {}, error="x"))
    assert problems == [["  not compared: bmv2 could not run the file"]]


BMV2_JSON = {
    "header_types": [{"name": "h_t", "fields": [["dst", 32, False], ["proto", 8, False]]}],
    "headers": [{"name": "h", "header_type": "h_t"}],
    "actions": [{"name": "I.fwd", "runtime_data": [{"name": "port", "bitwidth": 9},
                                                    {"name": "tag", "bitwidth": 8}]},
                {"name": "NoAction", "runtime_data": []}],
    "pipelines": [{"tables": [
        {"name": "I.lpm", "key": [{"match_type": "lpm", "name": "h.dst", "target": ["h", "dst"]}],
         "actions": ["I.fwd", "NoAction"]},
        {"name": "I.acl", "key": [{"match_type": "ternary", "name": "h.dst", "target": ["h", "dst"]},
                                  {"match_type": "range", "name": "h.proto",
                                   "target": ["h", "proto"]}],
         "actions": ["I.fwd", "NoAction"]},
    ]}],
}


def translate(line):
    return CliTranslator(BMV2_JSON).command(parse_text(line)[0])


def test_cli_commands_follow_the_json_order_and_match_kinds():
    assert translate("add lpm dst:0x0a000100/24 fwd(tag:3, port:2)") == \
        "table_add I.lpm I.fwd 167772416/24 => 2 3"
    assert translate("add acl 5 dst:0x0a****** fwd(port:1, tag:0)") == \
        f"table_add I.acl I.fwd {0x0a000000}&&&{0xff000000} 0->255 => 1 0 9995"
    assert translate("setdefault lpm NoAction()") == "table_set_default I.lpm NoAction"
    assert translate("mc_mgrp_create 7") == "mc_mgrp_create 7"


def test_cli_translation_errors_name_the_line():
    with pytest.raises(StfError, match="need a priority"):
        translate("add acl dst:0x0a****** fwd(port:1, tag:0)")
    with pytest.raises(StfError, match="no table named 'nope'"):
        translate("add nope dst:1 fwd(port:1, tag:0)")


def test_missing_bmv2_binaries_are_one_line():
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))
    run = subprocess.run([sys.executable, "-m", "testbed.cli", "stf", "--target", "both",
                          str(ROOT / "p4src/basic.p4"), str(ROOT / "p4src/tests/basic_forwarding.stf")],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "testbed: the bmv2 target needs p4c-bm2-ss, simple_switch, simple_switch_CLI on PATH; "
        "not found: p4c-bm2-ss, simple_switch, simple_switch_CLI"]
