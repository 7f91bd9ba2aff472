"""`make bench`: run every benchmark module (or those named on the command line).

A benchmark that raises, or whose figure misses its stated target
(benchmarks/targets.py), makes the run exit 1 and is named at the end.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
import traceback

import benchmarks
from benchmarks import targets
from testbed import progress


def discover() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.endswith("_bench"))


def parse(argv: list[str]) -> list[str]:
    """The benchmarks to run; an unknown name is one line on stderr and exit 2."""
    known = discover()
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Run the benchmarks (all of them, or those named) and print their figures. Exits 1 when a "
                    "benchmark fails or a figure misses its stated target.",
        epilog="benchmarks: " + ", ".join(known))
    parser.add_argument("names", nargs="*", metavar="BENCHMARK", help="a benchmark module's name, e.g. tm_bench")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print(f"python -m benchmarks: no benchmark {', '.join(unknown)} (known: {', '.join(known)})",
              file=sys.stderr)
        raise SystemExit(2)
    return args.names or known


def main(argv: list[str]) -> int:
    names = parse(argv)
    failed = []
    with progress.display(len(names), "benchmarks") as shown:  # emulated runs inside show their own tasks
        for name in names:
            print(f"== {name}", flush=True)
            started = time.perf_counter()
            misses = len(targets.missed)
            try:
                lines = importlib.import_module(f"benchmarks.{name}").run()
            except Exception:  # a broken benchmark must not hide the others' figures
                traceback.print_exc()
                failed.append(name)
                shown.advance(f"{name} failed")
                continue
            for line in lines:
                print(f"   {line}")
            print(f"   ({time.perf_counter() - started:.1f} s)", flush=True)
            if len(targets.missed) > misses:
                failed.append(f"{name} (missed its target)")
            shown.advance(name)
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
