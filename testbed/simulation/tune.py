"""`testbed tune`: pick a collective's algorithm x channels x chunk size x load balancing per size.

Every candidate is measured on the simulator (`simulation.run.simulate_on`: the
scenario's P4 program on the native engine by default, `--switches model` the
hand-written model) as one
collective alone on the scenario's topology and transport, over the ranks of
the scenario's first `collective` phase; its figure is busbw (Mbit/s, the
report's definition).  The transport knob is the fabric's load balancing
(`--load-balancing`; by default the scenario's own and the other of flow-hash
ECMP and spraying): under ECMP each channel is its own flow and hashes onto
its own path, under spraying every cell does.  For each size:

* the tuner's choice: coordinate descent in the spirit of AutoCCL — start at
  (ring, 1 channel, chunk 0, the scenario's load balancing), then try every
  algorithm holding the rest, keep the best, then every channel count, then
  every chunk size, then every load balancing mode;
* the exhaustive best: every valid candidate measured;
* regret = 1 - busbw(choice) / busbw(best).

The best single fixed setting is the candidate, valid at every size, with the
highest geometric mean of busbw / best busbw over the sizes; the table says how
the per-size choices compare with it.  Results: `tuning.json` (every
measurement, the choices, the table a scenario could use) and `tuning.md`.
Load balancing is the fabric's, one mode per run: a scenario that uses the
table (`algorithm: auto`) takes its algorithm, channels and chunk size, and
runs its own fabric's mode (tune with `--load-balancing` set to it for a
table made under that mode only).

`--confirm` (`confirm_on_fabric`) then runs, on the emulated fabric, the
choice and the best fixed setting at the sizes whose simulated times fit a
budget once slowed by `--fit`, back to back in one scenario per load
balancing mode, and the same scenarios on the simulator at the rate the
emulated run used; `confirm.md` sets the two side by side.
"""

from __future__ import annotations

import copy
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from testbed.errors import TestbedError
from testbed.host import collectives
from testbed.progress import current as current_display
from testbed.progress import display
from testbed.simulation import sweep
from testbed.simulation.run import simulate_on
from testbed.telemetry.collectives import collective_rows

DEFAULT_CHANNELS = (1, 2, 4)
DEFAULT_CHUNKS = (0, 4096, 16384, 65536)
BALANCINGS = ("ecmp", "spray")  # the transport knob's default pair (the scenario's own first)


class TuneError(TestbedError):
    """A scenario or search space the tuner cannot use."""


@dataclass(frozen=True)
class Candidate:
    algorithm: str
    channels: int
    chunk_bytes: int
    load_balancing: str

    def label(self) -> str:
        return (f"{self.algorithm}/{self.channels}ch/{self.chunk_bytes // 1024 if self.chunk_bytes else 0}KiB"
                f"/{self.load_balancing}")


def scenario_data(scenario) -> dict:
    """The scenario file's own YAML, without its variants (each candidate is one fabric)."""
    try:
        data = yaml.safe_load(Path(scenario.file).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise TuneError(f"{scenario.file}: cannot read the scenario again ({error})") from None
    data.pop("variants", None)
    return data


def with_balancing(scenario, load_balancing: str):
    """The scenario with its fabric's load balancing set (defaults that follow from it re-derived)."""
    from testbed.scenario import parse_scenario

    if scenario.fabric.load_balancing == load_balancing:
        return scenario
    data = scenario_data(scenario)
    data.setdefault("fabric", {})["load_balancing"] = load_balancing
    return parse_scenario(yaml.safe_dump(data, sort_keys=False), scenario.file)


def measure_candidate(scenario, phase, size: int, c: Candidate, switches: str = "program") -> dict:
    """One unit of the sweep: the collective of `phase`'s op over its ranks, `size` bytes, with
    candidate `c`, alone on `scenario` (its load balancing already `c`'s) without faults, its
    switches `switches` (simulate_on); the collective's row (busbw, verified, ...) and the
    machine's wall time it took."""
    params = collectives.Params(phase.op, c.algorithm, size, c.channels, c.chunk_bytes)
    servers = [list(s) for s in phase.servers] or None
    msgs = collectives.schedule(f"tune@{size}B", list(phase.hosts), params, 0.0, servers)
    started = time.monotonic()
    net, info = simulate_on(switches, scenario, msgs, label=f"{size} B {c.label()}", faults=False)
    row = collective_rows([m.to_json() for m in msgs], net.records(), scenario.to_dict(),
                          scenario.topo)[f"tune@{size}B"]
    row["wall_s"] = round(time.monotonic() - started, 2)
    return row


class Tuner:
    def __init__(self, scenario, phase, algorithms, channels, chunks, progress=print, balancings=None,
                 switches: str = "program") -> None:
        self.scenario = scenario
        self.switches = switches
        self.phase = phase
        self.algorithms = tuple(algorithms)
        self.channels = tuple(channels)
        self.chunks = tuple(chunks)
        self.balancings = tuple(balancings or (scenario.fabric.load_balancing,))
        self.progress = progress
        self.measured: dict[tuple[int, Candidate], dict] = {}
        self._scenarios = {lb: with_balancing(scenario, lb) for lb in self.balancings}

    def space(self) -> list[Candidate]:
        return [Candidate(a, ch, ck, lb) for a in self.algorithms for ch in self.channels for ck in self.chunks
                for lb in self.balancings]

    def piece_bytes(self, size: int, c: Candidate) -> int:
        """The largest piece the algorithm moves without chunking: a chunk only matters below it."""
        n = len(self.phase.hosts)
        per_channel = size // c.channels
        if c.algorithm == "tree":
            return per_channel // 2  # each of the two trees carries half
        if self.phase.op == "all_to_all":
            return per_channel // n
        return per_channel // n  # ring segments; hierarchical: a rail ring's segment of a GPU's part

    def valid(self, size: int, c: Candidate) -> bool:
        n = len(self.phase.hosts)
        if c.algorithm == "hierarchical" and not self.phase.servers:
            return False
        return size >= n * c.channels and (c.chunk_bytes == 0 or c.chunk_bytes < self.piece_bytes(size, c))

    def measure_all(self, sizes: list[int], jobs: int = 1, cluster: str | None = None) -> None:
        """Every valid candidate at every size measured, as a sweep (simulation/sweep.py: `jobs`
        processes, or a Dask `cluster`): the exhaustive search needs each of them, and the descent
        then reads its own from `measured`."""
        keys = [(size, c) for size in sizes for c in self.space()
                if self.valid(size, c) and (size, c) not in self.measured]
        units = [sweep.Unit(measure_candidate, (self._scenarios[c.load_balancing], self.phase, size, c, self.switches))
                 for size, c in keys]
        sweep.run(units, jobs, cluster, done=lambda index, row: self._measured(*keys[index], row))

    def measure(self, size: int, c: Candidate) -> float | None:
        """busbw (Mbit/s) of one collective of `size` with candidate `c`, None when it did not verify."""
        key = (size, c)
        if key not in self.measured:
            self._measured(size, c, measure_candidate(self._scenarios[c.load_balancing], self.phase, size, c,
                                                      self.switches))
        return self.measured[key].get("busbw_mbps") if self.measured[key]["verified"] else None

    def _measured(self, size: int, c: Candidate, row: dict) -> None:
        self.measured[(size, c)] = row
        shown = current_display()
        if shown is not None:
            shown.advance(f"{size} B {c.label()}")
        self.progress(f"  {size} B {c.label()}: busbw {row.get('busbw_mbps', float('nan')):.3f} Mbit/s"
                      f"{'' if row['verified'] else ' (NOT verified)'} [{row['wall_s']:.1f} s]")

    def _score(self, size: int, c: Candidate) -> float:
        if not self.valid(size, c):
            return -1.0
        value = self.measure(size, c)
        return -1.0 if value is None else value

    def coordinate_descent(self, size: int) -> tuple[Candidate, int]:
        """The tuner's choice and how many candidates it measured."""
        seen: set[Candidate] = set()
        best = Candidate(self.algorithms[0], self.channels[0], self.chunks[0], self.balancings[0])
        for axis, values in (("algorithm", self.algorithms), ("channels", self.channels),
                             ("chunk_bytes", self.chunks), ("load_balancing", self.balancings)):
            options = [Candidate(**{**asdict(best), axis: v}) for v in values]
            options = [o for o in options if self.valid(size, o)] or [best]
            seen.update(options)
            best = max(options, key=lambda o: self._score(size, o))
        return best, len(seen)

    def exhaustive(self, size: int) -> Candidate:
        return max((c for c in self.space() if self.valid(size, c)), key=lambda c: self._score(size, c))

    def run(self, sizes: list[int], jobs: int = 1, cluster: str | None = None) -> dict:
        self.progress(f"measuring every valid candidate at {len(sizes)} sizes"
                      + (f" on {cluster}" if cluster else f" in {jobs} processes" if jobs > 1 else ""))
        self.measure_all(sizes, jobs, cluster)
        rows = []
        for size in sizes:
            self.progress(f"size {size} B: coordinate descent")
            choice, cost = self.coordinate_descent(size)
            self.progress(f"size {size} B: exhaustive search")
            best = self.exhaustive(size)
            chosen, top = self._score(size, choice), self._score(size, best)
            rows.append({"size_bytes": size, "choice": asdict(choice), "choice_busbw_mbps": chosen,
                         "choice_measured_candidates": cost, "best": asdict(best), "best_busbw_mbps": top,
                         "regret": 1 - chosen / top if top > 0 else None})
        space = self.space()
        fixed_ok = [c for c in space if all(self.valid(s, c) and self._score(s, c) > 0 for s in sizes)]
        fixed = None
        if fixed_ok:
            best_by_size = {r["size_bytes"]: r["best_busbw_mbps"] for r in rows}

            def geomean(c: Candidate) -> float:
                return math.exp(sum(math.log(self._score(s, c) / best_by_size[s]) for s in sizes) / len(sizes))

            f = max(fixed_ok, key=geomean)
            fixed = {"setting": asdict(f), "geomean_of_busbw_over_best": geomean(f)}
            for r in rows:
                r["fixed_busbw_mbps"] = self._score(r["size_bytes"], f)
                r["choice_over_fixed"] = r["choice_busbw_mbps"] / r["fixed_busbw_mbps"]
        return {"op": self.phase.op, "ranks": len(self.phase.hosts), "hosts": list(self.phase.hosts),
                "switches": self.switches,
                "space": {"algorithms": list(self.algorithms), "channels": list(self.channels),
                          "chunk_bytes": list(self.chunks), "load_balancing": list(self.balancings)},
                "rows": rows, "best_fixed": fixed,
                "table": [{"size_bytes": r["size_bytes"], **r["choice"]} for r in rows],
                "measurements": [{"size_bytes": s, **asdict(c), **{k: v for k, v in m.items()
                                                                  if k not in ("op", "ranks")}}
                                 for (s, c), m in sorted(self.measured.items(),
                                                         key=lambda kv: (kv[0][0], kv[0][1].label()))]}


def markdown(scenario, result: dict) -> str:
    on = {"program": "the scenario's P4 program", "model": "the hand-written model"}[result.get("switches", "model")]
    lines = [f"# Tuning {result['op']} on {scenario.name} ({result['ranks']} ranks, simulator: switches run {on})",
             "",
             "busbw in Mbit/s (nccl-tests' definition, payload); regret = 1 - busbw(choice) / busbw(best); "
             "the choice is coordinate descent over algorithm, then channels, then chunk size "
             "(chunk 0 = one piece per segment), then the fabric's load balancing; the best is exhaustive "
             f"search over {len(result['space']['algorithms'])} x {len(result['space']['channels'])} x "
             f"{len(result['space']['chunk_bytes'])} x {len(result['space']['load_balancing'])} candidates. "
             "A setting reads algorithm/channels/chunk KiB/load balancing.", "",
             "| size (B) | choice | busbw (Mbit/s) | candidates measured | exhaustive best | busbw (Mbit/s) | "
             "regret (%) | best fixed setting busbw (Mbit/s) | choice / fixed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        c, b = Candidate(**r["choice"]), Candidate(**r["best"])
        fixed = r.get("fixed_busbw_mbps")
        lines.append(f"| {r['size_bytes']} | {c.label()} | {r['choice_busbw_mbps']:.3f} | "
                     f"{r['choice_measured_candidates']} | {b.label()} | {r['best_busbw_mbps']:.3f} | "
                     f"{100 * r['regret']:.1f} | {'-' if fixed is None else f'{fixed:.3f}'} | "
                     f"{'-' if fixed is None else format(r['choice_over_fixed'], '.3f')} |")
    if result["best_fixed"]:
        f = Candidate(**result["best_fixed"]["setting"])
        lines += ["", f"Best single fixed setting: {f.label()} (geometric mean of busbw / best over the sizes "
                      f"{result['best_fixed']['geomean_of_busbw_over_best']:.3f})."]
    worst = max(r["regret"] for r in result["rows"])
    lines += [f"Largest regret of the choice: {100 * worst:.1f}% (target: within 5%).", "",
              "A scenario uses the choices with `{kind: collective, op: " + result["op"] + ", algorithm: auto, "
              "tuning: <path of this directory's tuning.json>}`.", ""]
    return "\n".join(lines) + "\n"


def tune_scenario(scenario, sizes: list[int] | None, algorithms, channels, chunks, out_dir: Path,
                  progress=print, balancings=None, jobs: int = 1, cluster: str | None = None,
                  switches: str = "program") -> Path:
    """Tune (see the module), the candidates measured in `jobs` processes or on a Dask `cluster`
    (simulation/sweep.py) on `switches`; writes tuning.json and tuning.md in `out_dir`."""
    phases = [p for p in scenario.workload if p.kind == "collective"]
    if not phases:
        raise TuneError(f"{scenario.file}: no 'collective' phase to tune (its op and ranks are what is tuned)")
    phase = phases[0]
    from testbed.host.collectives import ALGORITHMS

    algorithms = [a for a in (algorithms or ALGORITHMS[phase.op])
                  if a in ALGORITHMS[phase.op] and (a != "hierarchical" or phase.servers)]
    if not algorithms:
        raise TuneError(f"no algorithm of {phase.op} to try on this topology")
    from testbed.scenario.schema import LOAD_BALANCING

    own = scenario.fabric.load_balancing
    if balancings is None:
        other = "spray" if own == "ecmp" else "ecmp"
        balancings = [own, other]
    unknown = [lb for lb in balancings if lb not in LOAD_BALANCING]
    if unknown:
        raise TuneError(f"--load-balancing: {', '.join(unknown)} is not a load balancing mode "
                        f"({', '.join(LOAD_BALANCING)})")
    balancings = list(dict.fromkeys(balancings))
    tuner = Tuner(scenario, phase, algorithms, channels or DEFAULT_CHANNELS, chunks or DEFAULT_CHUNKS, progress,
                  balancings, switches)
    sizes = list(sizes or phase.sizes_bytes)
    with display(sum(tuner.valid(s, c) for s in sizes for c in tuner.space()), "candidates measured"):
        result = tuner.run(sizes, jobs, cluster)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "tuning.json").write_text(json.dumps(result, indent=1))
    (out_dir / "tuning.md").write_text(markdown(scenario, result))
    return out_dir / "tuning.md"
