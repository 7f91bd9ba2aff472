"""Front-end load time (preprocess + parse + lower to IR), per program.

Target: under 1 s for a 500-line program.  Reports the first load in a
fresh process (includes building or reading the cached LALR tables) and
the median of repeated loads.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "tests" / "p4programs"


def synthetic_program(n_blocks: int = 20) -> str:
    """A v1model program of roughly 25 * n_blocks lines: tables, actions,
    parser states and arithmetic, to measure scaling."""
    lines = ["#include <core.p4>", "#include <v1model.p4>",
             "header h_t { bit<8> a; bit<16> b; bit<32> c; }",
             "struct headers { " + " ".join(f"h_t h{i};" for i in range(n_blocks)) + " }",
             "struct metadata { bit<32> acc; bit<16> tmp; }",
             "parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {",
             "    state start { transition s0; }"]
    for i in range(n_blocks):
        nxt = f"s{i + 1}" if i + 1 < n_blocks else "accept"
        lines += [f"    state s{i} {{",
                  f"        pkt.extract(hdr.h{i});",
                  f"        transition select(hdr.h{i}.a, hdr.h{i}.b) {{",
                  f"            ({i}, 0x{i:04x} &&& 0xff00): {nxt};",
                  f"            (_, 100 .. 200): accept;",
                  "            default: accept;",
                  "        }", "    }"]
    lines += ["}", "control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {"]
    for i in range(n_blocks):
        lines += [f"    action set{i}(bit<32> v, bit<9> port) {{",
                  f"        meta.acc = meta.acc + v * {i + 1} + (bit<32>)hdr.h{i}.b;",
                  f"        hdr.h{i}.c = (hdr.h{i}.c >> 3) ^ meta.acc;",
                  "        sm.egress_spec = port;",
                  "    }",
                  f"    table t{i} {{",
                  f"        key = {{ hdr.h{i}.c: lpm; hdr.h{i}.a: ternary; }}",
                  f"        actions = {{ set{i}; NoAction; }}",
                  "        default_action = NoAction();",
                  "        size = 256;",
                  "    }"]
    lines.append("    apply {")
    for i in range(n_blocks):
        lines += [f"        if (hdr.h{i}.isValid() && hdr.h{i}.a != 0) {{",
                  f"            if (t{i}.apply().hit) {{ meta.tmp = meta.tmp |+| 16w1; }}",
                  "        }"]
    lines += ["    }", "}",
              "control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }",
              "control VC(inout headers hdr, inout metadata meta) { apply { } }",
              "control CC(inout headers hdr, inout metadata meta) { apply { } }",
              "control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }",
              "V1Switch(P(), VC(), I(), E(), CC(), D()) main;"]
    return "\n".join(lines) + "\n"


def _time_loads(path: Path, repeat: int) -> list[float]:
    from testbed.p4model.frontend import load_program

    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        load_program(path)
        times.append(time.perf_counter() - t)
    return times


def _first_load_in_fresh_process(path: Path) -> float:
    code = ("import time; t=time.perf_counter(); from testbed.p4model.frontend import load_program; "
            f"load_program({str(path)!r}); print(time.perf_counter()-t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(out.stdout.strip())


def run() -> list[str]:
    results = []
    with tempfile.TemporaryDirectory() as d:
        synth = Path(d) / "synthetic_500.p4"
        synth.write_text(synthetic_program(20))
        programs = [PROGRAMS / "basic_ipv4.p4", PROGRAMS / "fe_kitchen_sink.p4", synth]
        for path in programs:
            n_lines = len(path.read_text().splitlines())
            first = _first_load_in_fresh_process(path)
            times = _time_loads(path, 5)
            results.append(f"frontend load {path.name} ({n_lines} lines + includes): "
                           f"first in fresh process {first * 1000:.0f} ms, "
                           f"median of 5 {statistics.median(times) * 1000:.0f} ms")
    return results


if __name__ == "__main__":
    print("\n".join(run()))
