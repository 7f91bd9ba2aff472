"""The same experiment at a slower clock: every rate times f, every time over f.

Emulated fabrics keep the dimensionless ratios of real ones, not their
microseconds, so a fabric that this
machine cannot hold at the asked rates can run slower without changing what
it measures: with link rates times f and propagation delays, the run's
duration, phase starts (stream intervals, poisson arrival spans) and fault
times over f, the BDP in cells, buffers and
ECN thresholds in cells, timers in RTTs, oversubscription and message sizes
all stay as they were; only the seconds stretch.
"""

from __future__ import annotations

import dataclasses

from testbed.scenario.model import LinkParams, Phase, Scenario


def slowed(scenario: Scenario, factor: float) -> Scenario:
    """`scenario` with rates times `factor` (0 < factor <= 1) and times over it."""
    if not 0 < factor <= 1:
        raise ValueError(f"a slow-down factor must be in (0, 1], not {factor}")
    stretch = 1 / factor

    def link(p: LinkParams) -> LinkParams:
        return dataclasses.replace(p, rate_mbps=round(p.rate_mbps * factor, 6),
                                   delay_us=round(p.delay_us * stretch, 3))

    return dataclasses.replace(
        scenario,
        duration_s=round(scenario.duration_s * stretch, 3),
        links=dataclasses.replace(scenario.links, host=link(scenario.links.host),
                                  fabric=link(scenario.links.fabric),
                                  local=scenario.links.local and link(scenario.links.local)),
        workload=tuple(_slowed_phase(p, factor) for p in scenario.workload),
        faults=tuple(dataclasses.replace(
            f, at_s=round(f.at_s * stretch, 3), period_s=round(f.period_s * stretch, 3),
            duration_s=None if f.duration_s is None else round(f.duration_s * stretch, 3),
            rate_mbps=None if f.rate_mbps is None else round(f.rate_mbps * factor, 6),
            extra_delay_us=round(f.extra_delay_us * stretch, 3),
            delay_ms=round(f.delay_ms * stretch, 6)) for f in scenario.faults),
        derived=dataclasses.replace(scenario.derived, base_rtt_us=round(scenario.derived.base_rtt_us * stretch, 3)),
        time_stretch=scenario.time_stretch * stretch,
    )


def _slowed_phase(phase: Phase, factor: float) -> Phase:
    """Its start, a stream's interval, poisson's arrival time and a training job's compute times
    over f, the link rate poisson offers its load of times f: the same messages, each starting at
    its time over f."""
    stretch = 1 / factor
    job = phase.job and dataclasses.replace(phase.job, forward_us=round(phase.job.forward_us * stretch, 3),
                                            backward_us=round(phase.job.backward_us * stretch, 3))
    return dataclasses.replace(
        phase, start_s=round(phase.start_s * stretch, 3), job=job,
        interval_s=None if phase.interval_s is None else round(phase.interval_s * stretch, 6),
        arrivals_s=None if phase.arrivals_s is None else round(phase.arrivals_s * stretch, 6),
        link_rate_bps=None if phase.link_rate_bps is None else round(phase.link_rate_bps * factor, 3))
