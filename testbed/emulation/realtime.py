"""Real-time scheduling for switch processes, with a guard.

On a 2-core machine with twenty switches and sixteen host agents, a switch
at nice -10 still waits a scheduler slice for a core, and its departures
run late by tens of milliseconds. Under SCHED_FIFO a switch runs as soon
as a packet or a departure is due. Only the thread that runs the packet
loop is raised (for the builtin target the process's main thread, after
its pipeline is configured, so compiling and P4Runtime threads stay
ordinary; on the native packet path the engine's thread, named ENGINE_THREAD;
bmv2's every thread, as it has no single loop thread).

The guard: RLIMIT_RTTIME bounds the CPU time a real-time thread may use
without blocking (SIGXCPU at the soft limit, SIGKILL at the hard one), so a
runaway switch cannot hang the machine; the kernel's own throttle
(sched_rt_runtime_us) keeps the rest of the machine alive in any case.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

SWITCH_RT_PRIORITY = 50
AGENT_RT_PRIORITY = 40  # below the switches: a host waits for the fabric, not the reverse
# A switch's loop blocks in epoll between packets: 0.2 s of CPU without
# blocking once is a runaway; 1 s kills it.
RTTIME_SOFT_US, RTTIME_HARD_US = 200_000, 1_000_000


ENGINE_THREAD = "tb-engine"  # the native engine's packet thread names itself so (engine.c)


def make_realtime(pid: int, all_threads: bool = False, priority: int = SWITCH_RT_PRIORITY,
                  thread: str | None = None) -> str | None:
    """Raise `pid` (its main thread, every thread, or its threads named `thread`: the main thread
    when none is) to SCHED_FIFO; None when done, else the reason it could not be (not root, no
    such process)."""
    try:
        resource.prlimit(pid, resource.RLIMIT_RTTIME, (RTTIME_SOFT_US, RTTIME_HARD_US))
        threads = _threads(pid) if all_threads else [pid]
        if thread is not None:
            threads = [t for t in _threads(pid) if _comm(pid, t) == thread] or [pid]
        for tid in threads:
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
    except PermissionError:
        return "not permitted (real-time scheduling needs root or CAP_SYS_NICE)"
    except ProcessLookupError:
        return f"process {pid} is gone"
    except OSError as error:
        return error.strerror or str(error)
    return None


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(Path("/proc") / str(pid) / "task")]
    except OSError:
        return [pid]


def _comm(pid: int, tid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "task" / str(tid) / "comm").read_text().strip()
    except OSError:
        return ""


def scheduling_of(pid: int) -> str:
    """'fifo 50' or 'other': what a switch actually ran with, for the run's notes."""
    try:
        policy = os.sched_getscheduler(pid)
        if policy == os.SCHED_FIFO:
            return f"fifo {os.sched_getparam(pid).sched_priority}"
    except OSError:
        return "unknown"
    return "other"


def main(argv: list[str] | None = None) -> int:
    """`python -m testbed.emulation.realtime PID [--all-threads] [--thread NAME]`: make_realtime on
    this machine (how a run raises a switch process on another server); prints why not, if not."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m testbed.emulation.realtime")
    parser.add_argument("pid", type=int)
    parser.add_argument("--all-threads", action="store_true")
    parser.add_argument("--thread")
    args = parser.parse_args(argv)
    reason = make_realtime(args.pid, all_threads=args.all_threads, thread=args.thread)
    if reason is not None:
        print(reason)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
