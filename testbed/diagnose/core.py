"""A finished run against its healthy twin, per link, host and switch over time.

Model: the run's own scenario (the variant's resolved copy, so a run slowed by
--fit is replayed at the rate it ran) with its `faults` removed is simulated
as the twin; nothing reads `faults` or faults.jsonl. Both are cut into bins
of BIN_S on the run's clock and compared series by series; every time the
diagnosis gives (a culprit's start_s and end_s in diagnosis.json, .md and the
printed verdict, the heatmap's axis) is on the scenario's clock, the run's
over its time_stretch (telemetry.clock; diagnosis.json's run_time_stretch):

* host: bytes delivered to the host and bytes it had acknowledged per bin,
  from records/<host>.jsonl (both drivers write them);
* link: bytes each direction carried per bin, from the run's link telemetry
  when the run has it (an emulated run's switch counters in telemetry.jsonl:
  tx bytes per switch port between samples), against the twin's port counters
  sampled every bin.

A series departs from the twin in a bin when the run's cumulative amount
falls behind the twin's by more than LAG_SHARE of the twin's total for that
series (rule: a healthy replay of the same workload differs by timing noise
that stays well below that share; see docs/diagnose.md). A departure that
lasts at least MIN_BINS bins is a symptom window. Localisation: a link
departs when both its directions fall behind while the other links of its
endpoints keep pace; a host departs when every series of that host falls
behind while its ToR's other hosts keep pace. Score: the largest lag share
in the window, capped at 1.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time
from pathlib import Path

from testbed.diagnose.culprit import BIN_S, MIN_BINS, QUEUE_EXCESS, TOGETHER_S, Culprit
from testbed.diagnose.job import job_lines
from testbed.errors import TestbedError
from testbed.telemetry.rundir import TelemetryCover, load_json, load_jsonl, load_yaml, telemetry_cover

LAG_SHARE = 0.15  # a series this far behind its twin (share of the twin's total) departs
ONSET_SHARE = 0.02  # where a departing lag began: above noise, below anything that departs
BUSY_BYTES = 65536  # a direction that carried less in the twin has no share to lose (acks, credits only)
SHARE_DROP = 0.3  # a fabric direction whose share of its sender's bytes fell this far (relative) is slow
NOISE_SEEDS = 2  # the twin run again with this many other seeds: how far the healthy scenario spreads


class DiagnoseError(TestbedError):
    """A directory diagnose cannot read as a finished run."""


def variant_dirs(run_dir: Path) -> list[Path]:
    """The variant directories of a run (each has result.json), or the one variant dir given."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise DiagnoseError(f"{run_dir}: not a directory")
    if (run_dir / "result.json").exists():
        return [run_dir]
    found = sorted(p.parent for p in run_dir.glob("*/result.json"))
    killed = sorted(p.parent.name for p in run_dir.glob("*/scenario.resolved.yaml")
                    if not (p.parent / "result.json").exists())
    if (run_dir / "scenario.resolved.yaml").exists() and not found:
        killed = [run_dir.name]
    if killed:
        raise DiagnoseError(f"{run_dir}: the run was killed before it finished: {', '.join(killed)} has no "
                            "result.json")
    if not found:
        raise DiagnoseError(f"{run_dir}: not a run directory (no result.json in it or in a variant subdirectory)")
    return found


def twin_scenario(variant_dir: Path):
    """(the variant's scenario as it ran, with its faults removed; its time stretch).

    Read from the run's own copy of the scenario file (scenario.yaml beside the variants), its
    `faults` section dropped before it is parsed, the variant picked by the name result.json gives;
    a run slowed by --fit (scenario.resolved.yaml's time_stretch) is replayed slowed the same way."""
    import dataclasses as dc
    import tempfile

    import yaml

    from testbed.scenario import expand_variants, load_scenario
    from testbed.scenario.timescale import slowed
    from testbed.telemetry.rundir import SCENARIO_COPY

    result = load_json(variant_dir / "result.json")
    resolved = variant_dir / "scenario.resolved.yaml"
    if not resolved.exists():
        raise DiagnoseError(f"{resolved}: missing; the run was killed before it wrote its scenario")
    stretch = float(load_yaml(resolved).get("time_stretch") or 1.0)
    copy = next((d / SCENARIO_COPY for d in (variant_dir, variant_dir.parent) if (d / SCENARIO_COPY).is_file()),
                None)
    if copy is None:
        raise DiagnoseError(f"{variant_dir}: the run kept no copy of its scenario ({SCENARIO_COPY}); "
                            "no twin can be replayed")
    data = load_yaml(copy)
    data.pop("faults", None)  # the answer: never read, never replayed
    with tempfile.TemporaryDirectory() as tmp:
        stripped = Path(tmp) / copy.name
        stripped.write_text(yaml.safe_dump(data, sort_keys=False))
        try:
            base = load_scenario(str(stripped))
            variants = expand_variants(base)
        except TestbedError as error:
            raise DiagnoseError(f"{copy}: cannot be replayed as the twin ({error})") from None
    name = result.get("variant")
    chosen = next((v for v in variants if v.name == name), None)
    if chosen is None:
        raise DiagnoseError(f"{variant_dir}/result.json: variant {name!r} is not one of {copy}'s "
                            f"({', '.join(v.name for v in variants)})")
    scenario = chosen.scenario
    if stretch != 1.0:
        scenario = slowed(scenario, 1 / stretch)
    return dc.replace(scenario, faults=()), stretch


def _bins(duration_s: float) -> int:
    return max(1, int(duration_s / BIN_S + 0.999))


def sample_bin(t_s: float, nbins: int) -> int:
    """The bin a sample taken at `t_s` closes: what it counts since the previous sample happened in
    (t_s - BIN_S, t_s], bin `ceil(t_s / BIN_S) - 1` (the twin's bin b ends at (b + 1) x BIN_S)."""
    return min(nbins - 1, max(0, math.ceil(t_s / BIN_S - 1e-6) - 1))


def host_series(rows_by_host: dict[str, list[dict]], nbins: int) -> dict[str, list[float]]:
    """`host:rx` bytes delivered to, `host:tx` bytes acknowledged for, each host per bin."""
    out: dict[str, list[float]] = {}
    for host, rows in rows_by_host.items():
        rx, tx = [0.0] * nbins, [0.0] * nbins
        for r in rows:
            if r.get("kind") == "message_delivered" and r.get("delivered_us") is not None:
                b = min(nbins - 1, int(r["delivered_us"] / 1e6 / BIN_S))
                out.setdefault(f"{r['dst']}:rx", [0.0] * nbins)[b] += r.get("bytes", 0)
            elif r.get("kind") == "message_sent" and r.get("acked_us") is not None:
                b = min(nbins - 1, int(r["acked_us"] / 1e6 / BIN_S))
                out.setdefault(f"{r['src']}:tx", [0.0] * nbins)[b] += r.get("bytes", 0)
        out.setdefault(f"{host}:rx", rx)
        out.setdefault(f"{host}:tx", tx)
    return out


def read_run_records(variant_dir: Path) -> dict[str, list[dict]]:
    records = variant_dir / "records"
    files = sorted(records.glob("*.jsonl")) if records.is_dir() else []
    if not files:
        raise DiagnoseError(f"{variant_dir}: no telemetry to diagnose (records/<host>.jsonl missing)")
    out = {}
    for f in files:
        rows, _ = load_jsonl(f)
        out[f.stem] = rows
    return out


def switch_samples(variant_dir: Path, topo, cover: TelemetryCover | None = None
                   ) -> tuple[Path, list[dict], dict[tuple, tuple[str, str, str]]] | None:
    """(telemetry.jsonl's path, its samples in time order, (switch, port) -> (cable, this end, far
    end)), None when the run has no switch counters (rundir.telemetry_cover: the file missing,
    empty, or no switch sampled twice). `cover`: the run's, when already read."""
    cover = cover if cover is not None else telemetry_cover(variant_dir)
    if not cover.links:
        return None
    return variant_dir / "telemetry.jsonl", cover.rows, port_ends(topo)


def port_ends(topo) -> dict[tuple, tuple[str, str, str]]:
    """(node, port) -> (cable, this end, far end) for every cable of `topo`."""
    ends = {}
    for link in topo.links:
        ends[(link.a, link.a_port)] = (link.name, link.a, link.b)
        ends[(link.b, link.b_port)] = (link.name, link.b, link.a)
    return ends


def run_link_series(variant_dir: Path, topo, nbins: int, cover: TelemetryCover | None = None
                    ) -> dict[str, list[float]] | None:
    """`name:a>b` bytes per bin from telemetry.jsonl, None without it: a switch port's tx counter is the
    direction leaving the switch; its rx counter on a host's port the direction host -> switch (a
    switch-switch direction is counted once, at its sender). A sample's bytes since the previous one
    go to the bin of the sample's time (`t_s`, seconds from the run's start on the run's clock)."""
    telemetry = switch_samples(variant_dir, topo, cover)
    if telemetry is None:
        return None
    path, rows, ends = telemetry
    return link_series(rows, ends, set(topo.hosts), nbins, path)


def link_series(rows: list[dict], ends: dict[tuple, tuple[str, str, str]], hosts: set[str], nbins: int,
                path: Path | str) -> dict[str, list[float]]:
    """`name:a>b` bytes per bin, and `name:a>b:queue` peaks, from switch samples in time order
    (run_link_series' rule); one reader for a run's telemetry and the program twin's samples."""
    last: dict[tuple, int] = {}
    out: dict[str, list[float]] = {}
    for r in rows:
        try:
            b = sample_bin(float(r["t_s"]), nbins)
            switch = r["switch"]
            counters = [("tx", p, c) for p, c in (r.get("tx") or {}).items()]
            counters += [("rx", p, c) for p, c in (r.get("rx") or {}).items()]
            for port, peak in (r.get("max_qdepth_packets") or {}).items():
                end = ends.get((switch, int(port)))
                if end is not None:
                    queue = out.setdefault(f"{end[0]}:{end[1]}>{end[2]}:queue", [0.0] * nbins)
                    queue[b] = max(queue[b], float(peak))
            for way, port, c in counters:
                end = ends.get((switch, int(port)))
                if end is None or (way == "rx" and end[2] not in hosts):
                    continue
                name, here, there = end
                key = f"{name}:{here}>{there}" if way == "tx" else f"{name}:{there}>{here}"
                value = int(c["bytes"])
                if (key, way) in last:
                    out.setdefault(key, [0.0] * nbins)[b] += value - last[(key, way)]
                else:
                    out.setdefault(key, [0.0] * nbins)
                last[(key, way)] = value
        except (KeyError, TypeError, ValueError) as error:
            raise DiagnoseError(f"{path}: a sample without switch, t_s or port byte counters "
                                f"({type(error).__name__}: {error})") from None
    return out


WIRE_LOSS_BYTES = 2048  # a bin in which a cable lost at least two cells' worth between its ends
CUT_BINS = 2
OTHERS_SHARE = 0.3  # a silent switch is stopped only while the rest of the fabric still forwards this share
IN_FLIGHT_BYTES = 8192  # more than a cable holds on its wire at a bin's edge (a few cells at 5 Mbit/s)  # a cable that delivered nothing for this many bins (its twin busy) was cut


def run_wire(variant_dir: Path, topo, nbins: int, cover: TelemetryCover | None = None, frame: int = 0
             ) -> tuple[dict, dict, dict[str, int]] | None:
    """(`name:a>b` bytes sent into the cable per bin, the bytes that arrived at its far end per bin,
    switch -> the first bin its counters counted from zero again), None without telemetry.

    Sent: a switch port's tx counter, a host's NIC tx bytes (records/<host>.stats.json series),
    plus the frames the port's lossy cable lost (`port_lost_packets`, each counted as a data
    frame of `frame` bytes): a switch's traffic manager draws a lossy cable's loss as it queues a
    frame, before the program's tx counter sees it. Arrived: a switch port's rx counter, a host's
    NIC rx bytes. A healthy cable delivers what it is sent (within a bin, the cells on the wire at
    its edge); what goes missing was lost on it."""
    telemetry = switch_samples(variant_dir, topo, cover)
    if telemetry is None:
        return None
    path, rows, ends = telemetry
    sent: dict[str, list[float]] = {}
    arrived: dict[str, list[float]] = {}
    lost_on_wire: dict[str, list[float]] = {}
    resets: dict[str, int] = {}
    last: dict[tuple, int] = {}

    def add(out, key, b, value, who):
        prev = last.get((key, id(out)))
        if prev is not None:
            if value < prev:  # the counter started from zero again: its switch restarted
                resets.setdefault(who, b)
                prev = 0
            out.setdefault(key, [0.0] * nbins)[b] += value - prev
        last[(key, id(out))] = value

    sampled: dict[str, set[int]] = {}
    for r in rows:
        try:
            b = sample_bin(float(r["t_s"]), nbins)
            switch = r["switch"]
            sampled.setdefault(switch, set()).add(b)
            for way, counters in (("tx", r.get("tx") or {}), ("rx", r.get("rx") or {})):
                for port, c in counters.items():
                    end = ends.get((switch, int(port)))
                    if end is None:
                        continue
                    name, here, there = end
                    if way == "tx":
                        add(sent, f"{name}:{here}>{there}", b, int(c["bytes"]), switch)
                        lost_now = int((r.get("port_lost_packets") or {}).get(port, 0)) * frame
                        add(lost_on_wire, f"{name}:{here}>{there}", b, lost_now, switch)
                    else:
                        add(arrived, f"{name}:{there}>{here}", b, int(c["bytes"]), switch)
        except (KeyError, TypeError, ValueError) as error:
            raise DiagnoseError(f"{path}: a sample without switch, t_s or port byte counters "
                                f"({type(error).__name__}: {error})") from None
    for key, lost in lost_on_wire.items():
        if key in sent:
            sent[key] = [s + x for s, x in zip(sent[key], lost)]
    # a switch polled every few seconds (bmv2's P4Runtime reads) puts its bytes in one bin of many:
    # no bin-by-bin rule can read it; its cables and its silence are left to the amounts
    coarse = {sw for sw, bins in sampled.items() if len(bins) < 0.9 * (max(bins) + 1)}
    for key in [k for k in sent if coarse & set(k.split(":")[1].split(">"))]:
        sent.pop(key)
    for key in [k for k in arrived if coarse & set(k.split(":")[1].split(">"))]:
        arrived.pop(key)
    for sw in coarse:
        resets.pop(sw, None)
    for host in topo.hosts:
        stats = variant_dir / "records" / f"{host}.stats.json"
        if not stats.exists():
            continue
        series = load_json(stats).get("series") or {}
        links = [l for l in topo.links if host in (l.a, l.b)]
        if len(links) != 1 or not series.get("t_s"):
            continue  # a dual-homed host's NIC bytes are not split per cable
        link = links[0]
        tor = link.b if link.a == host else link.a
        if tor in coarse:
            continue
        for t, tx, rx in zip(series["t_s"], series.get("tx_bytes", ()), series.get("rx_bytes", ())):
            b = sample_bin(float(t), nbins)
            add(sent, f"{link.name}:{host}>{tor}", b, int(tx), host)
            add(arrived, f"{link.name}:{tor}>{host}", b, int(rx), host)
    return sent, arrived, resets


def _runs(flags: list[bool]) -> list[tuple[int, int]]:
    """(first, last) of each run of True."""
    out, i = [], 0
    while i < len(flags):
        if flags[i]:
            j = i
            while j + 1 < len(flags) and flags[j + 1]:
                j += 1
            out.append((i, j))
            i = j + 1
        else:
            i += 1
    return out


HOLD_MARGIN_FRAMES = 0.5  # above what a cable's wire holds: acks and credits between the frames, never a frame


def wire_holds(scenario, frame: int) -> dict[str, float]:
    """tier -> the most bytes one direction of a healthy cable holds at an instant: a frame counts
    as sent when its first bit leaves and as arrived when its last does, so the frames that started
    within one serialisation plus the propagation delay, ceil((delay + serialisation) /
    serialisation) of them, plus HOLD_MARGIN_FRAMES. `host_up`, a host's cable toward its ToR: a
    host's NIC counts a frame when its agent hands it to the kernel, and the host's own egress
    queue (the emulation's pacer, tbf at the link rate: its limit is its latency's worth of bytes
    and its burst, `emulation.network.Pacing`) lies between that and the wire: that many more
    whole frames, and the one it is dequeuing."""
    from testbed.emulation.network import Pacing

    out = {}
    for tier in ("host", "fabric"):
        params = scenario.links.for_tier(tier)
        serialise = frame * 8 / (params.rate_mbps * 1e6)
        out[tier] = (math.ceil((params.delay_us / 1e6 + serialise) / serialise) + HOLD_MARGIN_FRAMES) * frame
    pacer = Pacing(scenario.links.host.rate_mbps)
    queued = pacer.rate_mbps * 1e6 / 8 * pacer.latency_ms / 1e3 + pacer.burst_bytes  # tbf's limit
    out["host_up"] = out["host"] + (math.ceil(queued / frame) + 1) * frame  # whole frames, one dequeued
    return out


def held_late(sent: dict, arrived: dict, keys: list[str], hold: dict[str, float]) -> tuple[int, int, str, float] | None:
    """(first bin, last bin, direction, most held) when a direction of a cable held more than its
    `hold` bytes on its wire at MIN_BINS bin edges or more and all it held arrived by the end: a delay
    longer than its nominal one. The first bin is the foot of the stretch of bins, ending at the
    first edge above `hold`, in which it held something: the delay began there."""
    found = []
    for key in keys:
        held, cum = [], 0.0
        for s, a in zip(sent[key], arrived[key]):
            cum += s - a
            held.append(cum)
        over = [b for b, h in enumerate(held) if h > hold[key]]
        if len(over) >= MIN_BINS and held[-1] <= hold[key]:
            i = over[0]
            while i > 0 and held[i - 1] > 0:
                i -= 1
            found.append((i, over[-1], key, max(held)))
    return min(found, default=None)


def _host_stopped(late: tuple, link, topo, sent: dict, twin: dict) -> bool:
    """`late` (held_late's) held bytes toward a host whose own NIC sent nothing for STALL_BINS bins
    running in that stretch while its twin's sent: the host was not reading (its agent stopped; an
    agent counts what it reads), which host_culprits names; a delayed cable leaves the host sending."""
    i, j, key, _ = late
    host = next((e for e in (link.a, link.b) if e in topo.hosts), None)
    if host is None or not key.endswith(f">{host}"):
        return False
    tor = link.b if link.a == host else link.a
    out = f"{link.name}:{host}>{tor}"
    if out not in sent or out not in twin:
        return False
    silent = [sent[out][b] == 0 and twin[out][b] > 0 for b in range(i, j + 1)]
    return any(last - first + 1 >= STALL_BINS for first, last in _runs(silent))


def wire_culprits(wire, twin: dict, topo, holds: dict[str, float], to_the_end: bool = True) -> list[Culprit]:
    """Culprits the counters show directly, before any comparison of amounts (docs/diagnose.md):

    * a switch whose counters started from zero again: `restarted`, from the first bin in which all
      its ports fell silent before the reset;
    * a cable that lost bytes between its ends (sent minus arrived, WIRE_LOSS_BYTES a bin): `down`
      when it then delivered nothing for CUT_BINS bins or more while its twin carried bytes, once;
      `flapping` when it did so twice or more, resuming between; `lossy` when it kept delivering;
    * a cable that lost nothing but held more on its wire than its nominal delay lets it
      (`held_late`, `wire_holds`): `delayed`;
    * a switch that stopped and was not seen back: `down`, unless exactly one of its cables lost
      bytes as it fell silent (then the cable was cut and the routes left the switch idle).
    A host's only cable cut to the end of the run is the host `down` (the two look the same from the
    fabric; a cable that mends was not the host). `to_the_end`: the bins reach the run's end; when
    they stop before it (a partial diagnosis) a cable cut to their end is the cable: whether it
    mended is not known."""
    sent, arrived, resets = wire
    out = []
    for switch, reset_bin in resets.items():
        if switch not in topo.switches:
            continue
        keys = [k for k in sent if k.split(":")[1].split(">")[0] == switch]
        quiet = [all(sent[k][b] == 0 for k in keys) for b in range(len(next(iter(sent.values()))))]
        start = reset_bin
        while start > 0 and quiet[start - 1]:
            start -= 1
        out.append(Culprit("switch", switch, "restarted", start * BIN_S, reset_bin * BIN_S, 1.0,
                           f"every port silent from {start * BIN_S:.1f} s, counters from zero at "
                           f"{reset_bin * BIN_S:.1f} s", crossed=start * BIN_S))
    n = len(next(iter(sent.values()), []))
    for switch in topo.switches:  # stopped and not seen back before the run ended
        if switch in resets:
            continue
        keys = [k for k in sent if k.split(":")[1].split(">")[0] == switch]
        if not keys:
            continue
        quiet = [all(sent[k][b] == 0 for k in keys) and sum(twin.get(k, [0.0] * n)[b] for k in keys) > 0
                 for b in range(n)]
        others = [k for k in sent if k not in keys and k in twin]
        spans = [(i, j) for i, j in _runs(quiet) if j - i + 1 >= STALL_BINS
                 and sum(sent[k][b] for k in others for b in range(i, i + STALL_BINS))
                 >= OTHERS_SHARE * sum(twin[k][b] for k in others for b in range(i, i + STALL_BINS))]
        if spans:
            i, j = spans[0]
            out.append(Culprit("switch", switch, "down", i * BIN_S, (j + 1) * BIN_S, 1.0,
                               f"every port silent from {i * BIN_S:.1f} s to {(j + 1) * BIN_S:.1f} s while the "
                               "twin's forwarded", crossed=i * BIN_S))
    restarted = set(resets)
    cables = {}  # id(culprit) -> the cable it was read from
    for link in topo.links:
        if link.a in restarted or link.b in restarted:
            continue
        keys = [f"{link.name}:{link.a}>{link.b}", f"{link.name}:{link.b}>{link.a}"]
        if not all(k in sent and k in arrived for k in keys):
            continue
        n = len(sent[keys[0]])
        host = next((e for e in (link.a, link.b) if e in topo.hosts), None)
        # sent and not (yet) arrived: the cells on the wire, and the lost; a host's uplink less its
        # own egress queue (wire_holds' host_up), which its NIC counter counts as sent
        queue = {k: holds["host_up"] - holds["host"] if host is not None and k.split(":")[1].startswith(f"{host}>")
                 else 0.0 for k in keys}
        missing, cum = [], {k: 0.0 for k in keys}
        for b in range(n):
            for k in keys:
                cum[k] += sent[k][b] - arrived[k][b]
            missing.append(sum(max(0.0, cum[k] - queue[k]) if queue[k] else cum[k] for k in keys))
        lost = [max(0.0, missing[b] - max(missing[:b], default=0.0)) if missing[b] > IN_FLIGHT_BYTES else 0.0
                for b in range(n)]
        lossy = [b for b in range(n) if lost[b] >= WIRE_LOSS_BYTES]
        if not lossy:
            hold = {k: holds["host_up" if queue[k] else link.tier] for k in keys}
            late = held_late(sent, arrived, keys, hold)
            if late is not None and _host_stopped(late, link, topo, sent, twin):
                late = None  # held toward a host that sent nothing meanwhile: it read nothing (stalled)
            if late is not None:
                i, j, key, most = late
                out.append(Culprit("link", link.name, "delayed", i * BIN_S, (j + 1) * BIN_S, 0.5,
                                   f"{key.split(':')[1]} held up to {most / 1e3:.1f} kB on its wire from "
                                   f"{i * BIN_S:.1f} s to {(j + 1) * BIN_S:.1f} s, more than its nominal delay "
                                   f"lets it hold ({hold[key] / 1e3:.1f} kB); all of it arrived",
                                   crossed=i * BIN_S))
                cables[id(out[-1])] = link
            continue
        first, last_loss = lossy[0], lossy[-1]
        twin_busy = [sum(twin.get(k, [0.0] * n)[b] for k in keys) > 0 for b in range(n)]
        delivered = [sum(arrived[k][b] for k in keys) for b in range(n)]
        tried = [twin_busy[b] or any(sent[k][b] > 0 for k in keys) for b in range(n)]
        # a cut: bins delivering nothing, CUT_BINS of them with traffic tried or due; only a bin that
        # delivers again ends it (an idle gap is no sign of the cable coming back)
        cuts = [(i, j) for i, j in _runs([b >= first and delivered[b] == 0 for b in range(n)])
                if sum(tried[i:j + 1]) >= CUT_BINS and i <= last_loss + 1]
        host = next((e for e in (link.a, link.b) if e in topo.hosts), None)
        if cuts and host is not None and missing[-1] <= IN_FLIGHT_BYTES:
            # nothing delivered for a while, then everything: the host read nothing (its agent
            # stopped; an agent counts what it reads), which host_culprits names; a cut loses
            continue
        if cuts and to_the_end and host is not None and cuts[-1][1] == n - 1 and not any(
                l.name != link.name and host in (l.a, l.b) for l in topo.links):
            kind, target, symptom = "host", host, "down"
        elif len(cuts) >= 2:
            kind, target, symptom = "link", link.name, "flapping"
        elif cuts:
            kind, target, symptom = "link", link.name, "down"
        elif missing[-1] <= IN_FLIGHT_BYTES:  # what went missing arrived in the end: late, not lost
            kind, target, symptom = "link", link.name, "delayed"
        else:
            kind, target, symptom = "link", link.name, "lossy"
        end = max([last_loss] + [j for _, j in cuts])
        share = sum(lost) / max(1.0, sum(sum(sent[k]) for k in keys))
        out.append(Culprit(kind, target, symptom, first * BIN_S, (end + 1) * BIN_S, round(min(1.0, 0.5 + share), 2),
                           f"lost {sum(lost) / 1e3:.0f} kB between its ends ({share:.0%} of what was sent) in "
                           f"{len(lossy)} bins" + (f"; delivered nothing in {len(cuts)} stretch(es) of "
                                                   f"{', '.join(f'{(j - i + 1) * BIN_S:.1f} s' for i, j in cuts)}" if cuts else ""),
                           crossed=first * BIN_S))
        cables[id(out[-1])] = link
    # a stopped switch loses what its cables carry toward it, on every busy one at once; a switch
    # that falls silent when a single cable of it was cut is idle because the routes left it
    for c in [c for c in out if c.kind == "switch" and c.symptom == "down"]:
        own = [d for d in out if id(d) in cables and c.target in (cables[id(d)].a, cables[id(d)].b)]
        near = [d for d in own if abs(d.start_s - c.start_s) <= TOGETHER_S]
        drop = [c] if len(near) == 1 else own
        out = [d for d in out if all(d is not x for x in drop)]
    out.sort(key=lambda c: (c.start_s, -c.score))
    return out


STALL_BINS = 3  # a host whose NIC sent nothing this many bins running while its twin's sent
CEILING_BINS = 5  # a NIC flat at a ceiling this many bins running ...
CEILING_FRAMES = 2  # ... every bin within this many data frames of its largest (a paced wire: +-1) ...
CEILING_SHARE = 0.7  # ... at most this share of the twin's peak in them: its rate was cut
SLOW_SHARE = 0.35  # ... or sent at most this share of its twin's bytes, but not nothing


def frame_bytes(scenario) -> int:
    """A data cell's frame on the wire (Ethernet, IP, UDP, cell header, body)."""
    from testbed.cells.wire import FRAME_OVERHEAD, HEADER_LEN

    return FRAME_OVERHEAD + HEADER_LEN + scenario.fabric.cell_size


def host_culprits(wire, run: dict, twin: dict, topo, frame: int) -> list[Culprit]:
    """A host's NIC against its twin's (the bytes it sent into its cable per bin), from the first bin
    of the earliest of: `stalled`, it sent nothing for STALL_BINS bins running while the twin's sent;
    `slow`, it sent at most SLOW_SHARE of the twin's bytes (but something) for STALL_BINS bins
    running; `slow` (pinned), it sent flat at a ceiling (`ceiling`). A stalled agent stops at once;
    the hosts it holds up stop after their windows drain, so the earliest onset ranks first. A slow
    span in which the ToR's port to the host holds a standing queue is its cable's, not its NIC's
    (a NIC whose rate was cut builds no queue toward itself)."""
    sent = wire[0]
    out = []
    for link in topo.links:
        host = next((e for e in (link.a, link.b) if e in topo.hosts), None)
        if host is None:
            continue
        tor = link.b if link.a == host else link.a
        key = f"{link.name}:{host}>{tor}"
        if key not in sent or key not in twin:
            continue
        mine, tw = sent[key], twin[key]
        found = []  # (first bin, last bin, symptom, pinned ceiling or None)
        stalled = [tw[b] > 0 and mine[b] == 0 for b in range(len(tw))]
        slow = [tw[b] > 0 and 0 < mine[b] <= SLOW_SHARE * tw[b] for b in range(len(tw))]
        for symptom, flags in (("stalled", stalled), ("slow", slow)):
            spans = [(i, j) for i, j in _runs(flags) if j - i + 1 >= STALL_BINS]
            if spans:
                found.append((*spans[0], symptom, None))
        capped = ceiling(mine, tw, frame)
        if capped is not None:
            found.append((capped[0], capped[0] + CEILING_BINS - 1, "slow", capped))
        for i, j, symptom, capped in sorted(found, key=lambda f: f[0]):  # stable: stalled, slow, pinned
            share = sum(mine[i:j + 1]) / max(1.0, sum(tw[i:j + 1]))
            held = Culprit("link", link.name, "slow", i * BIN_S, (j + 1) * BIN_S, round(1 - share, 2), "")
            if symptom == "slow" and queue_excess(run, twin, topo, held) >= QUEUE_EXCESS:
                break  # the ToR's port to it holds a standing queue: its cable is slow, not its NIC
            if capped is None:
                out.append(Culprit("host", host, symptom, i * BIN_S, (j + 1) * BIN_S, round(1 - share, 2),
                                   f"its NIC sent {share:.0%} of its twin's bytes from {i * BIN_S:.1f} s to "
                                   f"{(j + 1) * BIN_S:.1f} s", crossed=i * BIN_S))
            else:
                _, top, twin_top = capped
                out.append(Culprit("host", host, "slow", i * BIN_S, (i + CEILING_BINS) * BIN_S,
                                   round(1 - top / twin_top, 2),
                                   f"its NIC sent flat at {top * 8 / BIN_S / 1e6:.2f} Mbit/s from {i * BIN_S:.1f} s "
                                   f"where its twin's reached {twin_top * 8 / BIN_S / 1e6:.2f} Mbit/s", crossed=i * BIN_S,
                                   pinned=True))
            break
    out.sort(key=lambda c: (c.start_s, -c.score))
    return out


def ceiling(mine: list[float], twin: list[float], frame: int, where: list[bool] | None = None
            ) -> tuple[int, float, float] | None:
    """(first bin, the run's ceiling, the twin's peak) of the first CEILING_BINS bins (all of them
    `where`, when given) in which a sender sent flat at a ceiling, every bin at least CEILING_FRAMES
    frames and within CEILING_FRAMES frames of its largest, at most CEILING_SHARE of what its twin's
    reached in them and more than CEILING_FRAMES frames below it. A wire or pacer whose rate was cut
    sends its new rate every bin, give or take the one frame a bin's edge cuts; a sender held back
    by its window sends in bursts, several frames apart from bin to bin; a trickle (acks, a tail) is
    flat within two frames whatever holds it, so a ceiling is read only above that granularity."""
    for i in range(len(twin) - CEILING_BINS + 1):
        if where is not None and not all(where[i:i + CEILING_BINS]):
            continue
        run_w, twin_w = mine[i:i + CEILING_BINS], twin[i:i + CEILING_BINS]
        top, twin_top = max(run_w), max(twin_w)
        tolerance = CEILING_FRAMES * frame
        if (top <= CEILING_SHARE * twin_top and top - tolerance <= min(run_w)
                and min(run_w) >= tolerance and twin_top - top > tolerance):
            return i, top, twin_top
    return None


def twin_switches(result: dict) -> str:
    """What the twin's switches run: the scenario's P4 program on the native engine ("program"),
    as an emulated run's switches and a simulated run on the program network did; the hand-written
    model ("model") for a simulated run on the model (result.json's "switches", absent before the
    program network existed)."""
    if result.get("driver") == "simulator" and result.get("switches", "model") == "model":
        return "model"
    return "program"


def simulate_twin(scenario, nbins: int, links: bool, switches: str = "model",
                  records: dict | None = None) -> tuple[dict, dict]:
    """(host series, link series) of the healthy twin, its ports sampled every bin, on `switches`
    (twin_switches); `records`, when given, gets each host's records (a job's iterations, job.py)."""
    if switches == "program":
        return simulate_program_twin(scenario, nbins, links, records=records)
    from testbed.scenario.workload import scenario_messages
    from testbed.simulation.run import build_network

    messages = scenario_messages(scenario)
    net = build_network(scenario)
    net.load(messages, scenario.seed)
    names = {}
    for link in scenario.topo.links:
        names[f"{link.a}->{link.b}"] = f"{link.name}:{link.a}>{link.b}"
        names[f"{link.b}->{link.a}"] = f"{link.name}:{link.b}>{link.a}"
    series: dict[str, list[float]] = {}
    prev = {p.name: 0 for p in net.ports}
    for b in range(nbins):
        net.sim.run((b + 1) * BIN_S)
        if links:
            for p in net.ports:
                key = names.get(p.name)
                if key is not None:
                    series.setdefault(key, [0.0] * nbins)[b] = p.stats.tx_bytes - prev[p.name]
                    prev[p.name] = p.stats.tx_bytes
                    if p.switch_port:
                        series.setdefault(f"{key}:queue", [0.0] * nbins)[b] = p.stats.max_queue_packets
                        p.stats.max_queue_packets = len(p.data_q)
    rows = {name: (h.runner.records if h.runner is not None else []) for name, h in net.hosts.items()}
    if records is not None:
        records.update(rows)
    return host_series(rows, nbins), series


def simulate_program_twin(scenario, nbins: int, links: bool, switch_seed: int | None = None,
                          records: dict | None = None) -> tuple[dict, dict]:
    """The healthy twin on the program network (simulation/program_net.py): the engine stops and
    the telemetry samples every BIN_S, and its samples are read by the reader of a run's own
    telemetry (link_series), so both sides count the same counters the same way; `switch_seed`:
    the switches' own random draws (default the scenario's seed)."""
    from testbed.scenario.workload import scenario_messages
    from testbed.simulation.program_telemetry import ProgramSampler
    from testbed.simulation.run import build_program_network

    messages = scenario_messages(scenario)
    net = build_program_network(scenario, grid_s=BIN_S, switch_seed=switch_seed)
    net.load(messages, scenario.seed)
    sampler = ProgramSampler(net, BIN_S).start() if links else None
    net.run(nbins * BIN_S)
    series: dict[str, list[float]] = {}
    if sampler is not None:
        sampler.finish()
        series = link_series(sorted(sampler.samples, key=lambda r: r["t_s"]), port_ends(scenario.topo),
                             set(scenario.topo.hosts), nbins, "the program twin's telemetry")
    rows = {name: (h.runner.records if h.runner is not None else []) for name, h in net.hosts.items()}
    if records is not None:
        records.update(rows)
    return host_series(rows, nbins), series


def twin_spread(scenario, nbins: int, links: bool, switches: str, twin: dict) -> dict[str, float]:
    """How far the healthy scenario departs from itself: the program twin run again with
    NOISE_SEEDS other seeds of the switches' own random draws (RED's marks, random spraying; the
    flows, so their ECMP paths, and the payloads stay the run's), and the largest lag share
    (departures, either way) between one of them and the twin, among the hosts' message series
    (`host`) and among the cables' (`link`). A transport whose dynamics turn on such draws (DCQCN,
    NSCC) spreads; an exact one (tita, spraying in turn) does not. The model twin has no such seed:
    no spread."""
    spread = {"host": 0.0, "link": 0.0}
    if switches != "program":
        return spread
    for offset in range(1, NOISE_SEEDS + 1):
        hosts, cables = simulate_program_twin(scenario, nbins, links, switch_seed=scenario.seed + offset)
        other = {k: v[:nbins] for k, v in {**hosts, **cables}.items()}
        for key, series in twin.items():
            if key.endswith(":queue") or key not in other:
                continue
            kind = "host" if key.endswith(":rx") or key.endswith(":tx") else "link"
            for a, b in ((other[key], series), (series, other[key])):
                for window in departures(a, b):
                    spread[kind] = max(spread[kind], window[2])
    return spread


def departures(run: list[float], twin: list[float]) -> list[tuple[int, int, float, int]]:
    """Windows (first bin, last bin, largest lag share, bin where the lag crossed LAG_SHARE) where the run's cumulative amount lags the
    twin's by more than LAG_SHARE of the twin's total for at least MIN_BINS bins. A window runs from
    the onset (the foot of the rise that took the lag above ONSET_SHARE and then LAG_SHARE) to the
    last bin in which the lag still grew: the fault's own time, not the time the lag takes to build."""
    total = sum(twin)
    if total <= 0:
        return []
    lags, cr, ct = [], 0.0, 0.0
    for r, t in zip(run, twin):
        cr += r
        ct += t
        lags.append((ct - cr) / total)
    windows, i, n = [], 0, len(lags)
    while i < n:
        if lags[i] <= LAG_SHARE:
            i += 1
            continue
        j = i
        while j < n and lags[j] > LAG_SHARE:
            j += 1
        if j - i >= MIN_BINS:
            onset = i
            while onset > 0 and lags[onset - 1] > ONSET_SHARE:
                onset -= 1
            while onset > 0 and 0 < lags[onset - 1] < lags[onset]:  # down the rising slope to its foot
                onset -= 1
            peak_at = max(range(onset, j), key=lambda k: lags[k])
            windows.append((onset, peak_at, lags[peak_at], i))
        i = j
    return windows


def shares(series: dict[str, list[float]], keys: list[str]) -> dict[str, float]:
    """Each direction's share of the bytes its sender put on `keys` (the sender's fabric links) over
    the run."""
    totals = {k: sum(series.get(k, ())) for k in keys}
    whole = sum(totals.values())
    return {k: (v / whole if whole else 0.0) for k, v in totals.items()}


def share_drops(run: dict, twin: dict, topo) -> dict[str, float]:
    """Per fabric direction `name:a>b`, how far its share of its sender's fabric bytes fell below the
    twin's, relative to the twin's share (0: same share; 1: carried nothing where the twin carried
    its share). Spraying gives every equal-cost link the same share on a healthy fabric; a slow or
    lossy link takes a smaller one while its siblings take more."""
    by_sender: dict[str, list[str]] = {}
    for link in topo.links:
        if link.tier == "host":
            continue
        for a, b in ((link.a, link.b), (link.b, link.a)):
            by_sender.setdefault(a, []).append(f"{link.name}:{a}>{b}")
    drops = {}
    for sender, keys in by_sender.items():
        if len(keys) < 2:
            continue
        r, t = shares(run, keys), shares(twin, keys)
        for k in keys:
            if t[k] > 0:
                drops[k] = max(0.0, (t[k] - r[k]) / t[k])
    return drops


def quiet_stretches(run: dict, twin: dict, keys: list[str]) -> list[tuple[int, int]]:
    """(first bin, last bin) of each stretch of CUT_BINS bins or more in which the cable (its
    direction series `keys`) carried nothing either way while its twin's carried something."""
    n = len(twin[keys[0]])
    quiet = [all(run.get(k, [0.0] * n)[b] == 0 for k in keys) and sum(twin[k][b] for k in keys) > 0
             for b in range(n)]
    return [(i, j) for i, j in _runs(quiet) if j - i + 1 >= CUT_BINS]


def localise(run: dict, twin: dict, topo, nic: list[Culprit] = (), frame: int = 1090,
             spread: dict[str, float] | None = None) -> list[Culprit]:
    """Culprits from the departing series, the likeliest first (rules in docs/diagnose.md):

    1. a fabric link both of whose directions lost SHARE_DROP of their share of their senders'
       fabric bytes (their siblings took it): that link, scored by the smaller of the two drops;
    2. every other departure (a link with both directions behind the twin, a host whose bytes fell
       behind) ranked by its onset, the earliest first (a fault comes before what it holds up),
       then by its score; one no larger than the healthy scenario's own `spread` (twin_spread) is
       noise, not a culprit."""
    spread = spread or {}
    dep = {k: departures(run.get(k, [0.0] * len(v)), v) for k, v in twin.items() if not k.endswith(":queue")}
    dep = {k: w for k, w in dep.items() if w}
    drops = share_drops(run, twin, topo)
    first, rest = [], []
    for link in topo.links:
        keys = [f"{link.name}:{link.a}>{link.b}", f"{link.name}:{link.b}>{link.a}"]
        windows = [dep[k][0] for k in keys if k in dep]
        busy = [k for k in keys if sum(twin.get(k, ())) >= BUSY_BYTES]
        if link.tier != "host" and busy and all(drops.get(k, 0.0) >= SHARE_DROP for k in busy):
            score = min(drops[k] for k in busy)
            start = min((w[0] for w in windows), default=0) * BIN_S
            end = (max((w[1] for w in windows), default=len(twin[keys[0]]) - 1) + 1) * BIN_S
            # a slow cable still carries its rate; one that carried nothing either way while its
            # twin's carried was down (the routes moved around it, so it lost too little to see)
            cuts = quiet_stretches(run, twin, keys)
            symptom = "flapping" if len(cuts) >= 2 else "down" if cuts else "slow"
            first.append(Culprit("link", link.name, symptom, start, end, round(min(1.0, score), 2),
                                 "share of its senders' fabric bytes below the twin's by "
                                 + ", ".join(f"{k.split(':')[1]} {drops[k]:.0%}" for k in busy)
                                 + (f"; carried nothing either way in {len(cuts)} stretch(es) of "
                                    + ", ".join(f"{(j - i + 1) * BIN_S:.1f} s" for i, j in cuts) if cuts else "")))
        elif len(windows) == 2:
            start, end = min(w[0] for w in windows), max(w[1] for w in windows)
            score = min(1.0, min(w[2] for w in windows))
            if score <= spread.get("link", 0.0):
                continue  # within what the healthy scenario spreads over seeds
            # a dual-homed host's cut cable: its traffic moved to the host's other cable, so the
            # cable carried nothing either way where its twin's carried (as rule 1's down cable)
            cuts = quiet_stretches(run, twin, keys)
            symptom = "flapping" if len(cuts) >= 2 else "down" if cuts else "slow"
            rest.append(Culprit("link", link.name, symptom, start * BIN_S, (end + 1) * BIN_S, round(score, 2),
                                crossed=max(w[3] for w in windows) * BIN_S, evidence="bytes carried both ways fell behind the twin by up to "
                                f"{score:.0%} of the twin's total"
                                + (f"; carried nothing either way in {len(cuts)} stretch(es) of "
                                   + ", ".join(f"{(j - i + 1) * BIN_S:.1f} s" for i, j in cuts) if cuts else "")))
        elif link.tier != "host":  # a standing queue the twin does not hold, its bytes below the twin's
            held = standing_queue(run, twin, keys)
            if held is not None:
                i, j, key = held
                rest.append(Culprit("link", link.name, "slow", i * BIN_S, (j + 1) * BIN_S, 0.5, crossed=i * BIN_S,
                                    evidence=f"{key.split(':')[1]} held a queue {QUEUE_EXCESS:.0f}+ cells above the "
                                    f"twin's from {i * BIN_S:.1f} s to {(j + 1) * BIN_S:.1f} s while carrying less"))
    hosts: dict[str, list] = {}
    for k, w in dep.items():
        if k.endswith(":rx") or k.endswith(":tx"):
            hosts.setdefault(k.rsplit(":", 1)[0], []).append((k, w[0]))
    cables = {h: [k for link in topo.links if h in (link.a, link.b)
                  for k in (f"{link.name}:{link.a}>{link.b}", f"{link.name}:{link.b}>{link.a}") if k in twin]
              for h in hosts}
    for host, items in hosts.items():
        if cables[host] and not any(k in dep for k in cables[host]):
            continue  # its cables carried what its twin's did: its messages ended late by the transport's timing
        start = min(w[0] for _, w in items)
        end = max(w[1] for _, w in items)
        score = min(1.0, max(w[2] for _, w in items))
        if score <= spread.get("host", 0.0):
            continue  # within what the healthy scenario spreads over seeds
        rest.append(Culprit("host", host, "slow", start * BIN_S, (end + 1) * BIN_S, round(score, 2),
                            crossed=min(w[3] for _, w in items) * BIN_S, evidence="; ".join(f"{k} fell behind the twin by up to {w[2]:.0%} of its total"
                                      for k, w in items)))
    nic_hosts = {c.target for c in nic}
    rest = [c for c in rest if not (c.kind == "host" and c.target in nic_hosts)]
    first.sort(key=lambda c: -c.score)
    rest.sort(key=lambda c: (c.start_s, -c.score, c.kind != "link"))
    # a host's NIC or a switch that fell silent or slow is exact to the bin; a lag's onset is where
    # it began to build: the NIC ranks first unless the lag began more than TOGETHER_S before it
    early = [c for c in nic if not rest or c.start_s <= rest[0].start_s + TOGETHER_S]
    late = sorted([c for c in nic if c not in early] + rest[1:], key=lambda c: c.start_s)
    ranked = early + rest[:1] + late if rest else list(early)
    if ranked:  # among departures that begin together, a cable holding a queue the twin does not is the slow one
        begun = min(c.start_s for c in ranked[:len(early) + 1])
        together = [c for c in rest if c.start_s <= begun + TOGETHER_S]
        queued = [c for c in together if c.kind == "link" and queue_excess(run, twin, topo, c) >= QUEUE_EXCESS]
        for c in queued:
            c.evidence += f"; its switch egress queue peaked {queue_excess(run, twin, topo, c):.0f} cells above the twin's"
        # a queue the port drains flat at a ceiling: the port's own rate was cut, the cause of what
        # else is flat or slow (a NIC held back by the cable sends in bursts, not at a ceiling)
        cut = []
        for c in queued:
            drained = cable_ceiling(run, twin, topo, c, frame)
            if drained is not None:
                c.evidence += (f"; {drained[0].split(':')[1]} drained it flat at "
                               f"{drained[1] * 8 / BIN_S / 1e6:.2f} Mbit/s where the twin's reached "
                               f"{drained[2] * 8 / BIN_S / 1e6:.2f} Mbit/s")
                cut.append(c)
        # a silent NIC causes the queue on its own cable (the ToR holds what it cannot deliver) and,
        # from the same bin, on the cables toward it
        silent = [c for c in early if c.pinned or c.symptom in ("stalled", "down")
                  and (not queued or c.start_s <= min(q.start_s for q in queued)
                       or any(c.target in (topo.link(q.target).a, topo.link(q.target).b) for q in queued))]
        ranked = cut + silent + [c for c in queued if c not in cut] + [
            c for c in ranked if c not in queued and c not in silent]
    stopped = {c.target for c in nic if c.kind == "switch"}  # its cables fell silent with it: the switch says it
    return [c for c in first + ranked
            if c.kind != "link" or not stopped & {topo.link(c.target).a, topo.link(c.target).b}]


def standing_queue(run: dict, twin: dict, keys: list[str]) -> tuple[int, int, str] | None:
    """(first bin, last bin, direction) of the first stretch of MIN_BINS bins or more in which a
    direction's switch egress queue peaked QUEUE_EXCESS cells above the twin's in every bin while it
    carried fewer bytes than the twin over the stretch: it drains slower than it is fed."""
    for key in keys:
        q, tq = run.get(f"{key}:queue"), twin.get(f"{key}:queue")
        if q is None or tq is None or key not in run or key not in twin:
            continue
        for i, j in _runs([a - b >= QUEUE_EXCESS for a, b in zip(q, tq)]):
            if j - i + 1 >= MIN_BINS and sum(run[key][i:j + 1]) < sum(twin[key][i:j + 1]):
                return i, j, key
    return None


def cable_ceiling(run: dict, twin: dict, topo, culprit: Culprit, frame: int) -> tuple[str, float, float] | None:
    """(direction, its ceiling, the twin's peak) when a switch egress of the culprit's cable, within
    the culprit's window, held a queue QUEUE_EXCESS cells above the twin's while it sent flat at a
    ceiling (`ceiling`) for CEILING_BINS bins: a port with cells waiting sends at its rate, so a flat
    rate well below the twin's is the port's rate cut."""
    link = topo.link(culprit.target)
    lo, hi = int(culprit.start_s / BIN_S + 1e-6), int(culprit.end_s / BIN_S + 1e-6) + 1
    for a, b in ((link.a, link.b), (link.b, link.a)):
        key = f"{link.name}:{a}>{b}"
        q, tq = run.get(f"{key}:queue"), twin.get(f"{key}:queue")
        if q is None or tq is None or key not in run or key not in twin:
            continue
        where = [x - y >= QUEUE_EXCESS for x, y in zip(q[lo:hi], tq[lo:hi])]
        capped = ceiling(run[key][lo:hi], twin[key][lo:hi], frame, where)
        if capped is not None:
            return key, capped[1], capped[2]
    return None


def queue_excess(run: dict, twin: dict, topo, culprit: Culprit) -> float:
    """The largest amount (cells) by which a switch egress queue of the culprit's cable peaked above the
    twin's in one bin of the culprit's window."""
    link = next(l for l in topo.links if l.name == culprit.target)
    lo, hi = int(culprit.start_s / BIN_S), int(culprit.end_s / BIN_S) + 1
    best = 0.0
    for a, b in ((link.a, link.b), (link.b, link.a)):
        key = f"{link.name}:{a}>{b}:queue"
        if key in run and key in twin:
            best = max([best] + [r - t for r, t in zip(run[key][lo:hi], twin[key][lo:hi])])
    return best


def diagnose_variant(variant_dir: Path) -> dict:
    started = time.monotonic()
    result = load_json(variant_dir / "result.json")
    if result.get("failed"):
        raise DiagnoseError(f"{variant_dir}: the run failed ({result['failed']}); nothing to diagnose")
    scenario, stretch = twin_scenario(variant_dir)
    run_hosts = read_run_records(variant_dir)
    cover = telemetry_cover(variant_dir, scenario.topo.switches)
    nbins = _bins(scenario.duration_s)
    judged = judged_bins(cover, nbins)
    run = host_series(run_hosts, nbins)
    links = run_link_series(variant_dir, scenario.topo, nbins, cover)
    switches = twin_switches(result)
    twin_records: dict[str, list[dict]] = {}
    twin_hosts, twin_links = simulate_twin(scenario, nbins, links is not None, switches, twin_records)
    twin = dict(twin_hosts)
    if links is not None:
        run.update(links)
        twin.update(twin_links if not cover.gaps else {k: v for k, v in twin_links.items() if k in links})
    frame = frame_bytes(scenario)
    wire = run_wire(variant_dir, scenario.topo, nbins, cover, frame)
    run, twin, wire = cut_to(run, judged), cut_to(twin, judged), cut_wire(wire, judged)
    culprits = (wire_culprits(wire, twin, scenario.topo, wire_holds(scenario, frame), judged == nbins)
                if wire is not None else [])
    nic = host_culprits(wire, run, twin, scenario.topo, frame) if wire is not None else []
    nic += [c for c in culprits if c.kind == "switch" and c.symptom == "down"]  # silence only: onset-ranked
    culprits = [c for c in culprits if c not in nic]
    named = {(c.kind, c.target) for c in culprits}
    nic.sort(key=lambda c: (c.start_s, -c.score))
    spread = twin_spread(scenario, judged, links is not None, switches, twin)
    culprits += [c for c in localise(run, twin, scenario.topo, nic, frame, spread) if (c.kind, c.target) not in named]
    jobs, culprits = job_verdict(variant_dir, scenario, run_hosts, twin_records, culprits, nbins, stretch,
                                 (run, twin))
    for c in culprits:  # bins are on the run's clock; culprits on the scenario's
        c.start_s, c.end_s = round(c.start_s / stretch, 3), round(c.end_s / stretch, 3)
        c.evidence = on_scenario_clock(c.evidence, stretch)
    out = {"culprits": [{k: v for k, v in dataclasses.asdict(c).items() if k not in ("crossed", "pinned")} for c in culprits], "healthy": not culprits,
           "partial": partial_field(cover, judged, nbins, stretch), "twin_spread": spread,
           "run_time_stretch": stretch, "twin_switches": switches, "wall_s": round(time.monotonic() - started, 3)}
    if jobs:
        out["jobs"] = jobs
    (variant_dir / "diagnosis.json").write_text(json.dumps(out, indent=1))
    write_markdown(variant_dir, out, run, twin, culprits, stretch)
    return out


def job_verdict(variant_dir: Path, scenario, run_hosts: dict, twin_records: dict, culprits: list[Culprit],
                nbins: int, stretch: float, series: tuple[dict, dict] | None = None
                ) -> tuple[list[dict], list[Culprit]]:
    """(the training jobs' iterations against the twin's, the culprits with the straggler GPUs
    placed among them: job.py), ([], culprits) for a run without a training job. The run's planned
    messages are its agents/workload.json, the twin's the scenario's own; the job is judged from the
    hosts' records over the whole run (`nbins`), even when the counters stop early (a partial
    diagnosis)."""
    from testbed.diagnose.job import job_view, rank_gpus
    from testbed.scenario.workload import scenario_messages

    path = variant_dir / "agents" / "workload.json"
    if not path.is_file():
        return [], culprits
    try:
        planned = json.loads(path.read_text())["messages"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DiagnoseError(f"{path}: not a workload file ({type(error).__name__}: {error})") from None
    if not any("compute_us" in m for m in planned):
        return [], culprits
    twin_planned = [m.to_json() for m in scenario_messages(scenario)]
    run_rows = [r for rows in run_hosts.values() for r in rows]
    twin_rows = [r for rows in twin_records.values() for r in rows]
    views, gpus, fabric = job_view((planned, run_rows), (twin_planned, twin_rows), culprits, nbins * BIN_S * 1e6,
                                   stretch, series)
    return views, rank_gpus(gpus, fabric)


_SECONDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) s\b")
_RATE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) Mbit/s")


def on_scenario_clock(evidence: str, stretch: float) -> str:
    """A culprit's evidence, written by the rules on the run's clock (bins of BIN_S), given on the
    scenario's: every `N s` in it (a time or a duration) over the stretch, every `N Mbit/s` times
    it, to two decimals; unchanged for an unslowed run."""
    if abs(stretch - 1.0) < 1e-9:
        return evidence
    evidence = _SECONDS.sub(lambda m: f"{float(m.group(1)) / stretch:.2f} s", evidence)
    return _RATE.sub(lambda m: f"{float(m.group(1)) * stretch:.2f} Mbit/s", evidence)


def judged_bins(cover: TelemetryCover, nbins: int) -> int:
    """How many bins, from the first, run and twin are held against each other: all of them when the
    telemetry is whole or holds no counter (then the hosts alone are judged, over the whole run);
    when it is partial, those its counters close (`cover.end_s`: every switch that ends with the
    file was sampled then), at least one."""
    if not cover.gaps or not cover.links:
        return nbins
    return min(nbins, max(1, math.ceil(cover.end_s / BIN_S - 1e-6)))


def cut_to(series: dict[str, list[float]], nbins: int) -> dict[str, list[float]]:
    """Every series' first `nbins` bins."""
    return {k: v[:nbins] for k, v in series.items()}


def cut_wire(wire, nbins: int):
    """run_wire's (sent, arrived, resets) over the first `nbins` bins (None stays None)."""
    if wire is None:
        return None
    sent, arrived, resets = wire
    return cut_to(sent, nbins), cut_to(arrived, nbins), {k: b for k, b in resets.items() if b < nbins}


def partial_field(cover: TelemetryCover, judged: int, nbins: int, stretch: float) -> dict | None:
    """diagnosis.json's `partial`: None when the telemetry is whole; else why (rundir.telemetry_cover's
    lines), which series were judged (`hosts and links`, or `hosts only` without link counters) and
    the span judged, from 0 to `judged_to_s` of the run's `run_to_s`, on the scenario's clock."""
    if not cover.gaps:
        return None
    return {"why": list(cover.gaps), "series": "hosts and links" if cover.links else "hosts only",
            "judged_from_s": 0.0, "judged_to_s": round(judged * BIN_S / stretch, 3),
            "run_to_s": round(nbins * BIN_S / stretch, 3)}


def partial_note(partial: dict) -> str:
    """One line: why a diagnosis is partial and what it judged."""
    scope = ("hosts only: no link telemetry, no link or switch verdict" if partial["series"] == "hosts only"
             else "hosts and links")
    return (f"{'; '.join(partial['why'])}; judged {scope}, from {partial['judged_from_s']:.1f} s to "
            f"{partial['judged_to_s']:.1f} s of {partial['run_to_s']:.1f} s")


def verdict_lines(diagnosis: dict) -> list[str]:
    """The printed verdict: a culprit a line, or that it is healthy; a partial diagnosis (`partial`)
    says so first, or in its healthy line."""
    partial = diagnosis.get("partial")  # absent from a diagnosis.json written before it existed
    if diagnosis["healthy"]:
        return ([f"healthy (partial: {partial_note(partial)}): no culprit" if partial else "healthy: no culprit"]
                + job_lines(diagnosis.get("jobs") or []))
    lines = [Culprit(**c).line() for c in diagnosis["culprits"]]
    return ([f"partial: {partial_note(partial)}"] if partial else []) + lines + job_lines(diagnosis.get("jobs") or [])


def write_markdown(variant_dir: Path, out: dict, run: dict, twin: dict, culprits: list[Culprit],
                   stretch: float = 1.0) -> None:
    """diagnosis.md with heatmap.png beside it: per series, run minus twin per bin (share of twin's peak bin),
    the bins (the run's clock) drawn on the scenario's, as the culprits' times are."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(k for k in twin if not k.endswith(":queue"))
    rows = []
    for k in keys:
        t = twin[k]
        r = run.get(k, [0.0] * len(t))
        peak = max(max(t), 1.0)
        rows.append([(a - b) / peak for a, b in zip(r, t)])
    fig, ax = plt.subplots(figsize=(10, max(3, 0.18 * len(keys))))
    if rows:
        im = ax.imshow(rows, aspect="auto", cmap="coolwarm_r", vmin=-1, vmax=1,
                       extent=(0, len(rows[0]) * BIN_S / stretch, len(keys), 0))
        fig.colorbar(im, ax=ax, label="(run - twin) / twin's peak bin")
        ax.set_yticks([i + 0.5 for i in range(len(keys))], keys, fontsize=6)
        for c in culprits:
            for i, k in enumerate(keys):
                if k.startswith(c.target + ":"):
                    ax.add_patch(plt.Rectangle((c.start_s, i), c.end_s - c.start_s, 1, fill=False, ec="k", lw=2))
    ax.set_xlabel("time on the scenario's clock (s)")
    ax.set_title("run against healthy twin (culprit boxed)")
    fig.tight_layout()
    fig.savefig(variant_dir / "diagnosis.png", dpi=80)
    plt.close(fig)
    lines = ["# Diagnosis", "", *verdict_lines(out), "", f"machine's wall time {out['wall_s']:.1f} s", "",
             *([f"Times on the scenario's clock: the run ran x{stretch:.3g} slower (its time_stretch)", ""]
               if abs(stretch - 1.0) > 1e-9 else []),
             "![run against twin](diagnosis.png)", ""]
    spread = out.get("twin_spread")
    if spread:
        lines += [f"The healthy scenario's own spread over {NOISE_SEEDS} other seeds (largest lag share, the "
                  f"noise a departure of rule 9 must exceed): hosts {spread['host']:.0%}, cables "
                  f"{spread['link']:.0%}", ""]
    for c in culprits:
        lines.append(f"- {c.kind} {c.target}: {c.evidence}")
    (variant_dir / "diagnosis.md").write_text("\n".join(lines) + "\n")


def diagnose_run(run_dir: Path) -> dict[str, dict]:
    return {str(v): diagnose_variant(v) for v in variant_dirs(Path(run_dir))}
