"""`make p4info` (regen tool) and `testbed p4info` behaviour, with the front
end replaced by a fixed P4Info so only these commands are under test."""

import argparse
import io

from p4.config.v1 import p4info_pb2

from testbed.p4model import p4info
from testbed.p4model.errors import P4Error
from testbed.p4model.tools import regen_p4info

PROGRAM = "#include <v1model.p4>\nV1Switch(P(), V(), I(), E(), C(), D()) main;\n"
INCLUDE = "// helpers only\nheader h_t { bit<8> x; }\n"


def _fixed_info(name="MyIngress.t"):
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    t = info.tables.add()
    t.preamble.name = name
    return info


def _fake_generate(monkeypatch, name="MyIngress.t"):
    calls = []

    def fake(path, include_dirs=(), defines=None):
        calls.append(str(path))
        return _fixed_info(name)

    monkeypatch.setattr(p4info, "generate_file", fake)
    return calls


def test_only_top_level_programs(tmp_path):
    (tmp_path / "prog.p4").write_text(PROGRAM)
    (tmp_path / "lib.p4").write_text(INCLUDE)
    (tmp_path / "commented.p4").write_text("// V1Switch(a) main;\n")
    assert regen_p4info.programs(tmp_path) == [tmp_path / "prog.p4"]


def test_regenerate_then_check(tmp_path, monkeypatch):
    calls = _fake_generate(monkeypatch)
    (tmp_path / "prog.p4").write_text(PROGRAM)
    out, err = io.StringIO(), io.StringIO()
    assert regen_p4info.run(tmp_path, check=True, out=out, err=err) == 1
    assert "prog.p4info.txtpb" in err.getvalue()
    assert not (tmp_path / "prog.p4info.txtpb").exists()
    assert regen_p4info.run(tmp_path, check=False, out=out, err=err) == 0
    written = (tmp_path / "prog.p4info.txtpb").read_bytes()
    assert p4info.parse(written) == _fixed_info()
    assert regen_p4info.run(tmp_path, check=True, out=out, err=io.StringIO()) == 0
    assert calls and calls[0].endswith("prog.p4")


def test_check_names_stale_file(tmp_path, monkeypatch):
    (tmp_path / "prog.p4").write_text(PROGRAM)
    _fake_generate(monkeypatch, "MyIngress.old")
    regen_p4info.run(tmp_path, check=False, out=io.StringIO(), err=io.StringIO())
    _fake_generate(monkeypatch, "MyIngress.new")
    err = io.StringIO()
    assert regen_p4info.run(tmp_path, check=True, out=io.StringIO(), err=err) == 1
    assert str(tmp_path / "prog.p4info.txtpb") in err.getvalue()


def test_program_errors_are_reported_not_raised(tmp_path, monkeypatch):
    (tmp_path / "prog.p4").write_text(PROGRAM)

    def broken(path, include_dirs=(), defines=None):
        raise P4Error("prog.p4:3:1", "syntax error")

    monkeypatch.setattr(p4info, "generate_file", broken)
    err = io.StringIO()
    assert regen_p4info.run(tmp_path, check=True, out=io.StringIO(), err=err) == 1
    assert "prog.p4:3:1: syntax error" in err.getvalue()


def _args(program, output=None):
    return argparse.Namespace(program=str(program), output=output, include=[], define=["X=1"])


def test_cli_formats(tmp_path, monkeypatch, capsysbinary):
    _fake_generate(monkeypatch)
    assert p4info.main(_args("x.p4")) == 0
    assert p4info.parse(capsysbinary.readouterr().out) == _fixed_info()
    for suffix, fmt in ((".txtpb", "text"), (".txt", "text"), (".json", "json"), (".bin", "binary")):
        target = tmp_path / f"out{suffix}"
        assert p4info.main(_args("x.p4", str(target))) == 0
        assert p4info.parse(target.read_bytes(), fmt) == _fixed_info()


def test_cli_error_is_one_line(monkeypatch, capsys):
    def broken(path, include_dirs=(), defines=None):
        raise P4Error("x.p4:1:2", "unsupported: varbit")

    monkeypatch.setattr(p4info, "generate_file", broken)
    assert p4info.main(_args("x.p4")) == 1
    assert capsys.readouterr().err == "x.p4:1:2: unsupported: varbit\n"


def test_cli_missing_output_dir(tmp_path, monkeypatch, capsys):
    _fake_generate(monkeypatch)
    assert p4info.main(_args("x.p4", str(tmp_path / "no" / "such" / "dir.txtpb"))) == 1
    assert capsys.readouterr().err.count("\n") == 1
