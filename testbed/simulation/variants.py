"""`testbed sim`'s variants as a sweep (testbed.simulation.sweep): each variant is one unit.

A unit simulates its variant into `root/<directory>` (run.run_variant) and summarizes that
directory (telemetry.collectives.summarize_simulated); it returns result.json's content and the
summary, plain data. The parent keeps them in the variants' order, so summary.json and the report
are those of a serial run, whichever variant finished first. In parallel, once fewer variants are
left than workers, a core is idle: the parent loads the report's modules then, not after the last.
"""

from __future__ import annotations

from pathlib import Path

from testbed.simulation import sweep
from testbed.simulation.run import run_variant
from testbed.telemetry.collectives import summarize_simulated


def directory_name(variant) -> str:
    """A variant's run directory under the run's: its name with '=' and ',' made safe."""
    return variant.name.replace("=", "-").replace(",", "_")


def simulate_variant(root: Path, variant, directory: str, switches: str) -> dict:
    """One unit: the variant simulated into root/directory; its result and summary."""
    result = run_variant(variant, root / directory, switches)
    return {"result": result, "summary": summarize_simulated(root / directory, variant.scenario.topo)}


def _prepare_report() -> None:
    """Import what writing the report needs (write_sim_report's own imports)."""
    import testbed.telemetry.export  # noqa: F401
    import testbed.telemetry.inband  # noqa: F401
    import testbed.telemetry.report  # noqa: F401
    import testbed.telemetry.verdict_table  # noqa: F401


def run_all(variants: list, out_dir: Path, switches: str, shown=None, jobs: int = 1,
            cluster: str | None = None, pool=None) -> tuple[dict, dict, list]:
    """Every variant simulated (in `jobs` processes, `pool`'s if given, or on `cluster`): their run
    directories and summaries by name, in the variants' order, and the names of those that did not
    finish. `shown`, the command's progress display, advances as each variant ends."""
    finished_count = 0
    workers = 1 if cluster is None and jobs <= 1 else len(variants) if cluster else min(jobs, len(variants))

    def done(index: int, value: dict) -> None:
        nonlocal finished_count
        finished_count += 1
        if workers > 1 and len(variants) - finished_count == workers - 1:
            _prepare_report()  # a core has no variant left: the report's modules load while the rest run
        variant, result = variants[index], value["result"]
        stretch = variant.scenario.time_stretch  # the virtual time on the scenario's clock (telemetry.clock)
        print(f"[{finished_count}/{len(variants)} {variant.name}] {result['virtual_end_s'] / stretch:.3f} s of "
              f"the scenario simulated{f' (x{stretch:.3g} slower)' if abs(stretch - 1) > 1e-9 else ''} in "
              f"{result['wall_s']:.1f} s, {'finished' if result['finished'] else 'NOT finished'}", flush=True)
        if result.get("native_refused"):
            print(f"[{finished_count}/{len(variants)} {variant.name}] its switches ran the program on the Python "
                  f"target, much slower: {result['native_refused']}", flush=True)
        if shown is not None:
            shown.advance(variant.name)

    units = [sweep.Unit(simulate_variant, (v, directory_name(v), switches)) for v in variants]
    values = sweep.run(units, jobs, cluster, out_dir, done, pool)
    run_dirs = {v.name: out_dir / directory_name(v) for v in variants}
    summaries = {v.name: value["summary"] for v, value in zip(variants, values)}
    unfinished = [v.name for v, value in zip(variants, values) if not value["result"]["finished"]]
    return run_dirs, summaries, unfinished
