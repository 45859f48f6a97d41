"""Run-time measurements for the theory overlays ("A Theoretical Perspective for Speculative Decoding
Algorithm", Yin et al. 2024, arXiv:2411.00841), taken where the full p and q vectors exist.

A trace keeps only the top-k of p and q per position, and the overlays need whole-vocabulary sums
(Thm 3's ``prod_m TV(p^m, q)``, Thm 5's rejection probability and bias). ``ProbedRule`` wraps an
acceptance rule and, each time the engine asks it for a schedule (once per tested position, in walk
order), stores ``measure(rule, p, q, schedule)`` as its typed probe row (``step_state.read_probe``:
``RejectionProbe`` or ``TradeoffProbe``); ``ProbeController`` hands the step's measurements to the
trace as a ``step_state.TheoryState`` (JSON ``{"kind": "theory", "positions": [...]}``), one probe per
position record that has a ``q``, in the same order. Neither changes a draw, so exactness is untouched.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable

import torch

from specviz.algorithms.tree_engine import StaticShape
from specviz.core.acceptance import SiblingSchedule
from specviz.core.rules import AcceptanceRule
from specviz.core.trees import TreeShape
from specviz.step_state import RejectionProbe, TheoryState, TradeoffProbe, read_probe

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder
    from specviz.algorithms.step_types import StepResult

Measure = Callable[[AcceptanceRule, torch.Tensor, torch.Tensor, SiblingSchedule], dict[str, float]]
DIGITS = 7


def rounded(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def reject_all(sched: SiblingSchedule) -> float:
    """P(every candidate of the group is rejected | the position is reached) = ``prod rejection_mass``
    (each factor is P(reject candidate i | earlier ones rejected), marginal over its draw)."""
    return math.prod(m for m in sched.rejection_mass if m is not None)


class ProbedRule:
    """``rule`` unchanged, plus a record of ``measure`` per schedule it computes (see module doc)."""

    def __init__(self, rule: AcceptanceRule, measure: Measure):
        self.rule, self.measure = rule, measure
        self.name, self.lossless, self.replacement = rule.name, rule.lossless, rule.replacement
        self.records: list[RejectionProbe | TradeoffProbe] = []

    def schedule(self, p: torch.Tensor, q: torch.Tensor, candidates: list[int]) -> SiblingSchedule:
        sched = self.rule.schedule(p, q, candidates)
        self.records.append(read_probe({k: rounded(v) for k, v in self.measure(self.rule, p, q, sched).items()}))
        return sched

    def record(self) -> dict[str, Any]:
        return self.rule.record()


class ProbeController(StaticShape):
    """A static template whose per-step state is the probe's measurements (none at temperature 0,
    where the engine swaps the rule for exact match and the probe is never asked)."""

    kind = "theory"

    def __init__(self, shape: TreeShape, probe: ProbedRule):
        super().__init__(shape)
        self.probe = probe

    def plan(self, dec: "Decoder") -> TreeShape:
        self.probe.records = []
        return self.shape

    def state(self, result: "StepResult") -> TheoryState | None:
        if not self.probe.records:
            return None
        return TheoryState(positions=tuple(self.probe.records))
