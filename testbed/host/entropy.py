"""How a sender picks a cell's entropy, and how an echo retraces a path.

`spray_rr_entropy` senders cycle through the entropy values, one per cell;
`spray_random_entropy` senders draw one uniformly per cell.  Both run
through `EntropySource` so the host agent, the TiTa credit scheduler and
the simulator choose alike.  A credit's DATA cell and a DATA cell's ACK
carry the mirrored value (`testbed.topo.entropy.EntropyLayout.mirror`) so
they take the reverse of the path that brought the cell they answer.
"""

from __future__ import annotations

import random

from testbed.topo.entropy import EntropyLayout

CHOICES = ("rr", "random")


class EntropySource:
    """Entropy values for one flow: round robin from `start`, or seeded uniform draws."""

    __slots__ = ("values", "_next", "_rng")

    def __init__(self, values: int, choice: str, start: int, seed: int) -> None:
        if choice not in CHOICES:
            raise ValueError(f"entropy choice {choice!r} is not one of {', '.join(CHOICES)}")
        self.values = values
        self._next = start
        self._rng = random.Random(seed) if choice == "random" else None

    def next(self) -> int:
        if self._rng is not None:
            return self._rng.randrange(self.values)
        value = self._next % self.values
        self._next += 1
        return value


def flow_start(flow_id: int) -> int:
    """Where a credit flow's round robin starts: its flow id through MurmurHash3's 32-bit
    finalizer, so flows that start together take different paths (a flow id's low bits are its
    number at the sender, the same for every sender's first flow, so they cannot be used as they
    are). From 0 for every flow, the first credit of each of a receiver's 15 all-to-all flows, and
    of every other receiver's, took the same path up a 3-tier fat-tree: 250 credits dropped at the
    edge and aggregation uplinks, the lone first credits of their flows waited out the credit
    timeout, and the feedback drove the flows' rates down (simulator, all-to-all: 0.47 of the
    payload rate over seeds 1-4; from spread starts 0.62-0.75, no credit dropped)."""
    h = flow_id & 0xFFFFFFFF
    h = ((h ^ h >> 16) * 0x85EBCA6B) & 0xFFFFFFFF
    h = ((h ^ h >> 13) * 0xC2B2AE35) & 0xFFFFFFFF
    return h ^ h >> 16


def tor_group(address: str) -> str:
    """The ToR group of a host address: its /24 (testbed/topo/addressing.py)."""
    return address.rsplit(".", 1)[0]


def echo(layout: EntropyLayout, entropy: int, here: str, peer: str) -> int:
    """The entropy of a cell that answers, from `here`, a cell `peer` sent with `entropy`."""
    return layout.mirror(entropy, same_tor_group=tor_group(here) == tor_group(peer))
