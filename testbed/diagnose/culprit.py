"""A culprit as the diagnosis names it, and the bin and window constants every rule shares.

Model: run and twin are cut into bins of BIN_S on the run's clock; a symptom lasts at least
MIN_BINS bins; departures whose onsets lie within TOGETHER_S began together; a switch egress queue
QUEUE_EXCESS cells above the twin's is a standing queue (docs/diagnose.md). core.py's rules and
job.py's job view both name culprits in this form.
"""

from __future__ import annotations

import dataclasses

BIN_S = 0.1
TOGETHER_S = 0.5  # departures whose onsets are this close began together (5 bins)
QUEUE_EXCESS = 8.0  # cells above the twin's peak: a standing queue, not a burst (the BDP is ~16 cells)
MIN_BINS = 3  # ... for at least this many bins (300 ms): shorter gaps are scheduling noise


@dataclasses.dataclass
class Culprit:
    kind: str
    target: str
    symptom: str
    start_s: float
    end_s: float
    score: float
    evidence: str
    crossed: float = 0.0  # when the lag crossed LAG_SHARE (ranking only; not written)
    pinned: bool = False  # a NIC flat at a cut rate: a cause, never a queue's victim (ranking only)

    def line(self) -> str:
        return (f"culprit: {self.kind} {self.target} {self.symptom} from {self.start_s:.1f} s to "
                f"{self.end_s:.1f} s (score {self.score:.2f})")
