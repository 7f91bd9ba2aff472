"""One host agent's options, and the Agent they describe.

`testbed host` (commands.py) parses them from its command line; `testbed hosts`
(group.py) parses each member's from the group file with member_parser(),
which raises MemberArgumentError instead of exiting.  wait_for_epoch is the
start both share: say the sockets are bound, then wait for the run's epoch.
This module imports neither of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from testbed.cells.wire import CELL_UDP_PORT
from testbed.host.config import CC_NAMES, TransportConfig


class MemberArgumentError(Exception):
    """A member's option list the host parser refuses (the parser's message)."""


class _MemberParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise MemberArgumentError(message)


def member_parser() -> argparse.ArgumentParser:
    """The parser of `testbed host`'s options that raises instead of exiting (a group's members)."""
    p = _MemberParser(prog="testbed host", add_help=False)
    add_host_options(p)
    return p


def add_host_options(p: argparse.ArgumentParser) -> None:
    """The options of one host agent: `testbed host`'s, and each member's of `testbed hosts`."""
    p.add_argument("--name", required=True, help="this host's name in the peers and workload files")
    p.add_argument("--addr", required=True, help=f"IPv4 address to bind (port {CELL_UDP_PORT})")
    p.add_argument("--port", type=int, default=CELL_UDP_PORT, help=f"UDP port of every agent (default {CELL_UDP_PORT})")
    p.add_argument("--peers-file", required=True, type=Path, help="JSON: host name -> address")
    p.add_argument("--workload-file", required=True, type=Path,
                   help='JSON: {"seed": N, "messages": [...]}, shared by all hosts')
    p.add_argument("--cc", choices=CC_NAMES, default="tita")
    p.add_argument("--cell-size", type=int, default=1024, help="DATA body bytes (what switches check)")
    p.add_argument("--link-rate-mbps", type=float, default=20.0, help="host link rate; NIC pacing cap")
    p.add_argument("--bdp-cells", type=int, default=16)
    p.add_argument("--base-rtt-us", type=float, default=None,
                   help="base RTT; default: BDP cells at the link rate")
    p.add_argument("--reorder-window-cells", type=int, default=None, help="default 2 BDP")
    p.add_argument("--entropy-values", type=int, default=32)
    p.add_argument("--realtime-priority", type=int, default=0,
                   help="run the packet loop under SCHED_FIFO at this priority (0: normal scheduling)")
    p.add_argument("--link-delay-us", type=float, default=0.0,
                   help="propagation delay of the host->ToR direction, applied by the agent")
    p.add_argument("--entropy-choice", choices=("rr", "random"), default="rr",
                   help="cycle through the entropy values (rr) or draw one per cell (random)")
    p.add_argument("--entropy-layout", type=_layout, default=(1, 1, 1, 1, 1),
                   help="nic,dtor,parallel,tier1,tier2 radices of the fabric's entropy digits "
                        "(testbed/topo/entropy.py); echoed cells mirror their entropy with it")
    p.add_argument("--ack-every", type=int, default=4,
                   help="acknowledge every N-th in-order DATA cell (1 = every cell; default 4)")
    p.add_argument("--nic-catchup-cells", type=float, default=1.0,
                   help="cell times the NIC pacer may make up after a late wake-up (0 = strict)")
    p.add_argument("--nic-interfaces", type=_names, default=None,
                   help="the NIC's port interfaces, comma-separated (two on a dual-homed host: both are "
                        "used at once, each at --link-rate-mbps, and a port without carrier is left)")
    p.add_argument("--nic-choice", choices=("entropy", "flow"), default="flow",
                   help="how a cell picks its NIC port: the entropy's nic digit (entropy spraying) or "
                        "one port per flow (ECMP, switch spraying)")
    p.add_argument("--credit-meter-share", type=_share, default=None,
                   help="the share of a link's bytes the switches' credit meters give credits "
                        "(caps one flow's credit rate; default: no meters)")
    p.add_argument("--pfc", action="store_true",
                   help="obey the ToR's PFC pause frames on every NIC port")
    p.add_argument("--transport-file", type=Path, default=None,
                   help="JSON: the scenario's resolved transport section (RTOs, tita and dcqcn parameters)")
    p.add_argument("--records", required=True, type=Path, help="run directory for records")
    p.add_argument("--seed", type=int, default=None, help="default: the workload file's seed")
    p.add_argument("--epoch", type=float, default=None,
                   help="UNIX time of t=0 shared by all agents of a run (default: now)")
    p.add_argument("--epoch-file", type=Path, default=None,
                   help="wait, with the socket bound, for this file to hold the epoch (after printing "
                        "'agent ready'): a run starts the clock once every agent listens")
    p.add_argument("--progress-file", type=Path, default=None,
                   help="keep 'messages-delivered in-order-cells' in this file, rewritten in place about "
                        "every second (a run's progress display reads it)")
    p.add_argument("--command-file", type=Path, default=None,
                   help="host_slow commands: on SIGUSR1 the agent reads this JSON file "
                        "({\"delay_ms\": D, \"rate_mbps\": R or null}) and applies it (testbed.host.slow)")
    p.add_argument("--grace-s", type=float, default=1.0)
    p.add_argument("--timeout-s", type=float, default=600.0)


def wait_for_epoch(path: Path, timeout_s: float, stopped=lambda: False, ready: str = "agent ready") -> float | None:
    """Say `ready` (the sockets are bound) and wait for the run to write the shared epoch;
    None when `stopped()` (SIGTERM) comes first."""
    import time

    from testbed.host.agent import AgentError

    print(ready, flush=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if stopped():
            return None
        try:
            return float(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.01)
    raise AgentError(f"no epoch in {path} within {timeout_s:g} s")


def _layout(text: str) -> tuple[int, ...]:
    try:
        radices = tuple(int(v) for v in text.split(","))
    except ValueError:
        radices = ()
    if len(radices) != 5 or min(radices) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not five comma-separated radices of at least 1")
    return radices


def _share(text: str) -> float:
    try:
        share = float(text)
    except ValueError:
        share = -1.0
    if not 0 < share < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share between 0 and 1")
    return share


def _names(text: str) -> list[str]:
    names = [n for n in text.split(",") if n]
    if not names or any(len(n) > 15 for n in names):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of interface names")
    return names


def build_agent(args: argparse.Namespace, netns=None):
    """The Agent `args` (the host options) describe, its sockets opened in `netns` (None: here)."""
    from testbed.host.agent import Agent, load_local, load_peers, load_workload

    # A NIC of several ports sends on all of them: its rate and its BDP are theirs together.
    ports = len(args.nic_interfaces) if args.nic_interfaces else 1
    window = args.reorder_window_cells
    cfg = TransportConfig(
        cc=args.cc, cell_size=args.cell_size, link_rate_bps=ports * args.link_rate_mbps * 1e6,
        bdp_cells=ports * args.bdp_cells,
        base_rtt_s=None if args.base_rtt_us is None else args.base_rtt_us / 1e6,
        reorder_window_cells=None if window is None else ports * window, entropy_values=args.entropy_values,
        entropy_choice=args.entropy_choice, entropy_layout=args.entropy_layout,
        ack_every=args.ack_every, nic_catchup_cells=args.nic_catchup_cells,
        credit_meter_share=args.credit_meter_share,
    )
    if args.transport_file is not None:
        import json

        from testbed.host.agent import AgentError

        try:
            cfg = cfg.with_scenario(json.loads(args.transport_file.read_text()))
        except (OSError, ValueError, TypeError, AttributeError) as e:
            raise AgentError(f"transport file {args.transport_file} is not a transport section: {e}") from None
    seed, specs = load_workload(args.workload_file)
    return Agent(args.name, args.addr, load_peers(args.peers_file), specs, cfg, args.records,
                 args.seed if args.seed is not None else seed, port=args.port,
                 grace_s=args.grace_s, timeout_s=args.timeout_s, epoch=args.epoch,
                 link_delay_s=args.link_delay_us / 1e6, realtime_priority=args.realtime_priority,
                 local=load_local(args.peers_file, args.name),
                 nic_interfaces=args.nic_interfaces, nic_choice=args.nic_choice, pfc=args.pfc,
                 progress_file=args.progress_file, command_file=args.command_file, netns=netns)
