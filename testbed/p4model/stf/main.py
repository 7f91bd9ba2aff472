"""`testbed stf [--target builtin|bmv2|both] PROGRAM TEST.stf...`.

Each file runs with the egress priority queues `--priority-queues` gives,
else those its `# priority-queues: N` line asks for, else one.
builtin (the default) and bmv2 print each file's verdict and end with
`N passed, N failed`.  both runs every file on the two targets, prints both
verdicts and the differences between what they sent (differential.py),
and ends with one summary line; the exit status is 0 only if every file
passed everywhere and the targets agreed.
"""

from __future__ import annotations

import sys

from testbed.p4model.stf.differential import differences
from testbed.p4model.stf.parser import file_priority_queues
from testbed.p4model.stf.result import print_verdict
from testbed.p4model.stf.runner import builtin_loader, run_file


def main(args, out=sys.stdout) -> int:
    from testbed.p4model.frontend.preprocess import parse_defines

    include = list(getattr(args, "include", []) or [])
    defines = parse_defines(getattr(args, "define", []) or [])
    target = getattr(args, "target", "builtin") or "builtin"
    given = getattr(args, "priority_queues", None)

    def queues(path) -> int:
        """The option when given, else the file's `# priority-queues: N`, else 1 (simple_switch's default)."""
        return given if given is not None else (file_priority_queues(path) or 1)
    verbose = bool(getattr(args, "verbose", False))
    tests = [str(t) for t in args.tests]
    runners = []
    if target in ("builtin", "both"):
        load_switch = builtin_loader(args.program, include, defines,
                                     getattr(args, "backend", "python") or "python")
        runners.append(("builtin", lambda path: run_file(load_switch, path, out, verbose, queues(path))))
    bmv2 = None
    if target in ("bmv2", "both"):
        from testbed.p4model.stf.bmv2 import Bmv2Runner

        bmv2 = Bmv2Runner(args.program, include, defines, 1, out, verbose)
        runners.append(("bmv2", lambda path: bmv2.run_file(path, queues(path))))
    try:
        return _run(runners, tests, out, target == "both")
    finally:
        if bmv2 is not None:
            bmv2.close()


def _run(runners: list, tests: list, out, differential: bool) -> int:
    counts = {name: [0, 0] for name, _ in runners}
    same = differ = 0
    for path in tests:
        results = []
        for name, run in runners:
            result = run(path)
            print_verdict(result, out, f" ({name})" if differential else "")
            counts[name][0 if result.passed else 1] += 1
            results.append(result)
        if differential:
            problems = differences(*results)
            if problems:
                differ += 1
                print(f"DIFF {path}: {len(problems)} difference(s) between builtin and bmv2",
                      file=out)
                for lines in problems:
                    for line in lines:
                        print(line, file=out)
            else:
                same += 1
                print(f"SAME {path}: builtin and bmv2 sent the same packets", file=out)
    if not differential:
        (name, (passed, failed)), = counts.items()
        print(f"{passed} passed, {failed} failed", file=out)
        return 1 if failed else 0
    print("; ".join(f"{name} {p} passed, {f} failed" for name, (p, f) in counts.items())
          + f"; {same} same, {differ} differ", file=out)
    return 1 if differ or any(f for _p, f in counts.values()) else 0
