"""`make bench`: run every benchmark module (or those named on the command line)."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import traceback

import benchmarks
from testbed import progress


def discover() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.endswith("_bench"))


def main(argv: list[str]) -> int:
    names = argv or discover()
    failed = []
    with progress.display(len(names), "benchmarks") as shown:  # emulated runs inside show their own tasks
        for name in names:
            print(f"== {name}", flush=True)
            started = time.perf_counter()
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
            shown.advance(name)
    if failed:
        print(f"benchmarks that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
