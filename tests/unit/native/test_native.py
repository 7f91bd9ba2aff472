"""The native back end against the Python pipeline (the reference): same
output packets and ports on random packets; one-line refusals and build
errors; the build cache; the STF runner's --backend choice."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.p4model.backend.native import NativeBuildError, NativeUnsupported, compiler
from testbed.p4model.clock import ManualClock
from testbed.p4model.pipeline import load

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler (cc/gcc) on this machine")

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
FORWARD = HERE / "forward.p4"


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="module")
def pair():
    return load(FORWARD, backend="python"), load(FORWARD, backend="native")


def _frame(draw_bytes: bytes, ipv4: bool) -> bytes:
    if ipv4 and len(draw_bytes) >= 14:
        return draw_bytes[:12] + b"\x08\x00" + draw_bytes[14:]
    return draw_bytes


@settings(max_examples=400, deadline=None)
@given(port=st.integers(0, 15), data=st.binary(max_size=64), ipv4=st.booleans())
def test_native_sends_what_python_sends(pair, port, data, ipv4):
    python, native = pair
    frame = _frame(data, ipv4)
    assert native.process(port, frame) == python.process(port, frame)


def test_native_is_really_native(pair):
    _python, native = pair
    assert native.backend == "native" and native.so_path.suffix == ".so"
    assert "tb_ingress" in native.source


ARRAY_PROGRAMS = ("fe_arrays.p4", "fe_arrays_wire.p4")


@pytest.fixture(scope="module")
def array_pairs():
    programs = ROOT / "tests" / "p4programs"
    return [(load(programs / p, backend="python"), load(programs / p, backend="native")) for p in ARRAY_PROGRAMS]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(min_size=6, max_size=20), small_index=st.integers(0, 5))
def test_bit_arrays_run_native_as_python_does(array_pairs, data, small_index):
    """Arrays of bit<W>/bool (nested too) stored as the bits of one scalar: constant and run-time
    indices, in and out of range (the index byte is first in fe_arrays.p4, at offset 10 in
    fe_arrays_wire.p4; small values make in-range indices common)."""
    for (python, native), at in zip(array_pairs, (0, 10)):
        assert native.backend == "native"
        frame = bytearray(data)
        if at < len(frame):
            frame[at] = small_index
        assert native.process(0, bytes(frame)) == python.process(0, bytes(frame))


def test_wide_and_signed_arrays_are_refused_in_one_line(tmp_path):
    with pytest.raises(NativeUnsupported) as info:
        load(ROOT / "tests" / "p4programs" / "fe_arrays_wide.p4", backend="native")
    assert str(info.value).endswith("fe_arrays_wide.p4:12:5: native back end does not support the array "
                                    "bit<8>[16] (128 bits, wider than 64 bits)")
    signed = tmp_path / "signed.p4"
    signed.write_text(FORWARD.read_text().replace("struct M {", "struct M {\n    int<4>[2] sa;"))
    with pytest.raises(NativeUnsupported, match=r"signed.p4:\d+:\d+: .*arrays of other than headers "
                                                r"\(int<4>\[2\]\)$"):
        load(signed, backend="native")


def test_second_load_uses_the_cache():
    load(FORWARD, backend="native")
    start = time.perf_counter()
    again = load(FORWARD, backend="native")
    assert again.so_path.exists()
    # the front end dominates a cached load; a compile would add ~0.3 s
    assert time.perf_counter() - start < 5


DIRECT_METER_P4 = FORWARD.read_text().replace(
    "control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {",
    "control E(inout H h, inout M m, inout standard_metadata_t sm) {\n"
    "  direct_meter<bit<8>>(MeterType.packets) dm;\n"
    "  action a() { dm.read(m.x); }\n"
    "  table t { key = { h.eth.type: exact; } actions = { a; } meters = dm; }\n"
    "  apply { t.apply();")
# a field wider than 128 bits that is not whole bytes (not lowered yet)
WIDE_P4 = FORWARD.read_text().replace(
    "struct H { eth_t eth; ip_t ip; }",
    "header w_t { bit<130> data; bit<6> pad; }\nstruct H { eth_t eth; ip_t ip; w_t w; }")


@pytest.mark.parametrize("program, construct", [("wide.p4", "wider than 128 bits"),
                                                ("direct_meter.p4", "direct_meter")])
def test_unsupported_construct_is_one_line(program, construct, tmp_path):
    path = tmp_path / program
    path.write_text(WIDE_P4 if program == "wide.p4" else DIRECT_METER_P4)
    with pytest.raises(NativeUnsupported) as info:
        load(path, backend="native")
    text = str(info.value)
    assert "\n" not in text and construct in text and ".p4:" in text


def test_auto_falls_back_to_python_with_one_log_line(caplog, tmp_path):
    path = tmp_path / "wide.p4"
    path.write_text(WIDE_P4)
    pipe = load(path, backend="auto")
    assert not hasattr(pipe, "so_path")
    lines = [r.getMessage() for r in caplog.records if "Python pipeline" in r.getMessage()]
    assert len(lines) == 1 and "wide.p4:" in lines[0] and "wider than 128 bits" in lines[0]


def test_fabric_p4_runs_native():
    pipe = load(ROOT / "p4src" / "fabric.p4", backend="auto")
    assert pipe.backend == "native"


def test_compile_failure_is_one_line():
    from testbed.p4model.backend.native.build import build

    with pytest.raises(NativeBuildError) as info:
        build("int f(void) { return undeclared_name; }\n", "broken.p4")
    text = str(info.value)
    assert "\n" not in text and "broken.p4" in text and "undeclared_name" in text


def test_stf_on_native_and_auto(tmp_path):
    from testbed.p4model.stf.runner import builtin_loader, run_file

    stf = tmp_path / "forward.stf"
    # an IPv4 frame to 0.0.0.3: TTL 64 -> 63, out port 3, source MAC + 1
    eth = "000000000001" + "00000000000a" + "0800"
    ip_in = "45000014000000004006" + "0000" + "0a000001" + "00000003"
    ip_out = "4500001400000000" + "3f06" + "0000" + "0a000001" + "00000003"
    stf.write_text(f"packet 1 {eth}{ip_in}\nexpect 3 000000000001 00000000000b 0803 {ip_out}\n")
    for backend in ("native", "auto", "python"):
        out = io.StringIO()
        result = run_file(builtin_loader(str(FORWARD), backend=backend), str(stf), out)
        assert result.passed, (backend, out.getvalue(), result.problems, result.error)


def test_p4src_basic_stf_passes_on_native():
    from testbed.p4model.stf.runner import builtin_loader, run_file

    out = io.StringIO()
    loader = builtin_loader(str(ROOT / "p4src" / "basic.p4"), backend="native")
    pipeline, _ = loader(ManualClock())
    assert pipeline.backend == "native"
    result = run_file(loader, str(ROOT / "p4src" / "tests" / "basic_forwarding.stf"), out)
    assert result.passed, (out.getvalue(), result.problems, result.error)


def test_loads_at_once_compile_once(monkeypatch):
    """The switches of a fabric process load one program at the same moment: one compile, the
    others wait for it and open the same .so."""
    import threading

    from testbed.p4model.backend.native import build as build_module

    calls = []
    real = build_module._compile

    def counting(*args):
        calls.append(1)
        real(*args)

    monkeypatch.setattr(build_module, "_compile", counting)
    source = f"int tb_probe(void) {{ return {time.time_ns()}; }}\n"
    paths = []
    threads = [threading.Thread(target=lambda: paths.append(build_module.build(source, "probe.p4")))
               for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(paths)) == 1 and paths[0].exists()
