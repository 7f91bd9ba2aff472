"""simple_switch_CLI's text answers turned into values and one-line errors (a fake CLI stands in)."""

import os
import stat

import pytest

from testbed import bmv2_cli

# Prints what simple_switch_CLI prints: a banner, then a prompt before each line it reads.
FAKE_CLI = r'''#!/bin/sh
echo "Obtaining JSON from switch..."
echo "Done"
echo "Control utility for runtime P4 table manipulation"
printf 'RuntimeCmd: '
while read -r line; do
  case "$line" in
    "register_read FabricEgress.max_qdepth")
      echo "register index omitted, reading entire array"
      echo "FabricEgress.max_qdepth= 0, 7, 0, 12" ;;
    register_read*) echo "Error: Invalid register name (${line#register_read })" ;;
    *) ;;
  esac
  printf 'RuntimeCmd: '
done
echo
'''


@pytest.fixture
def fake_cli(tmp_path, monkeypatch):
    path = tmp_path / "simple_switch_CLI"
    path.write_text(FAKE_CLI)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")


def test_answers_come_back_one_per_line(fake_cli):
    answers = bmv2_cli.run_lines("leaf1", 9090, ["set_queue_rate 68 1", "register_read FabricEgress.max_qdepth"])
    assert answers[0] == ""
    assert bmv2_cli.parse_register("FabricEgress.max_qdepth", answers[1]) == {0: 0, 1: 7, 2: 0, 3: 12}


def test_read_and_reset_keeps_the_cells_that_are_not_zero(fake_cli):
    assert bmv2_cli.read_and_reset_register("leaf1", 9090, "FabricEgress.max_qdepth") == {1: 7, 3: 12}


def test_a_refused_line_is_named_in_one_line(fake_cli):
    with pytest.raises(bmv2_cli.Bmv2CliError) as error:
        bmv2_cli.run_lines("spine2", 9091, ["set_queue_rate 68 1", "register_read nosuch"])
    message = str(error.value)
    assert message == ("spine2: simple_switch_CLI refused 'register_read nosuch': "
                       "Error: Invalid register name (nosuch)")


def test_a_cli_that_cannot_run_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(bmv2_cli.Bmv2CliError, match="^leaf1: simple_switch_CLI --thrift-port 9090 did not run"):
        bmv2_cli.run_lines("leaf1", 9090, ["register_reset FabricEgress.max_qdepth"])
