"""Regressions from the p4c sample sweep: each program in
tests/p4programs/conf_*.p4 is our own minimal case of one failure class
(generated code that was not Python, silently wrong output); each must
pass its STF file."""

import subprocess
import sys
from pathlib import Path

import pytest

from testbed.p4model.frontend import load_source
from testbed.p4model.pipeline import Pipeline

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "tests" / "p4programs"

CLASSES = {
    "conf_parser_locals": "parser locals of new struct types (IndentationError in generated code)",
    "conf_eval_order": "left-to-right operands, conditional ?: / && / || arms",
    "conf_exit_copy_out": "exit still copies out; inout composites seen by another path",
    "conf_header_struct_field": "a header field of struct type (was rejected as invalid P4)",
    "conf_lvalue_once": "the left-hand side (its index) is evaluated once, before the right",
    "conf_unused_lookahead": "a lookahead whose value is unused still checks the length",
    "conf_union_stack": "stacks of header unions (were refused): extract(s.next.member)",
    "conf_varbit_bytes": "a varbit length that is not whole bytes is ParserInvalidArgument",
    "conf_error_key": "a table keyed on an `error` matches its number (was refused)",
}


def run_stf(name):
    return subprocess.run([sys.executable, "-m", "testbed.cli", "stf",
                           str(PROGRAMS / f"{name}.p4"), str(PROGRAMS / f"{name}.stf")],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("name", sorted(CLASSES), ids=sorted(CLASSES))
def test_regression_program_passes(name):
    result = run_stf(name)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, CLASSES[name] + "\n" + result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "1 passed, 0 failed"


ERROR_KEY = """
#include <core.p4>
#include <v1model.p4>
struct H { }
struct M { error e; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    table t { key = { m.e : exact; } actions = { a; } }
    apply { t.apply(); }
}
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
"""


def test_a_table_keyed_on_error_loads_with_a_32_bit_key():
    pipeline = Pipeline(load_source(ERROR_KEY, "errkey.p4"))
    (table,) = pipeline.tables.values()
    assert [f.width for f in table.fields] == [32]
