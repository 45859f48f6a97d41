"""``WidthController``: DSBD's controller ("Dynamic-Width Speculative Beam Decoding", arXiv
2409.16560). It plans each iteration: a forest ``gamma`` layers deep (a chain template, cut to the
budget by the step loop), ``width`` (W_S) draft beams per layer and the per-layer width rule
W_L^(l) (Eqs 2-7, ``step_types.LayerWidth``) the layer verifier applies; it learns nothing across steps.

Its state (``StepRecord.controller``, a ``step_state.DsbdState``): the settings, per walked layer the parents
still valid, the drafts, the chosen width and its unfloored value, the law P(m accepted) and its
survival function behind the choice with the threshold, accepted and kept counts and whether the
layer passed (the bonus layer: parents and kept); ``l_last`` (the layer where the iteration ended),
``kept`` (trace node ids of the output beams) and the beams (``state.beam_rows``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from specviz.algorithms.step_types import Controller, LayerWidth, Plan, StepResult
from specviz.core.trees import TreeShape, chain_shape
from specviz.step_state import BonusLayer, DsbdState, VerifiedLayer

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder

DIGITS = 6


def _rounded(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(float(f"{v:.{DIGITS}g}") for v in values)


class WidthController(Controller):
    """See module docstring."""

    kind = "dsbd"

    def __init__(
        self, width: int, min_width: int, threshold: float, gamma: int, dynamic: bool, single_beam: bool = False
    ):
        self.width, self.min_width, self.threshold = width, min_width, threshold
        self.gamma, self.dynamic, self.single_beam = gamma, dynamic, single_beam
        self.rule = LayerWidth(width, min_width, threshold, dynamic)

    def plan(self, dec: "Decoder") -> TreeShape:
        return chain_shape(self.gamma)

    def step_plan(self, dec: "Decoder") -> Plan:
        return Plan(self.plan(dec), width=self.width, layer_width=self.rule)

    def levels(self, result: StepResult) -> tuple[BonusLayer | VerifiedLayer, ...]:
        """Per walked layer, what the width rule chose and what the layer did (module docstring)."""
        out: list[BonusLayer | VerifiedLayer] = []
        for ls in result.outcome.walk.layers:
            if ls.verdict is None:
                out.append(BonusLayer(ls.layer, True, ls.parents, len(ls.picks or [])))
                continue
            c, v = ls.choice, ls.verdict
            out.append(
                VerifiedLayer(
                    ls.layer,
                    ls.parents,
                    len(ls.nodes),
                    c.width,
                    c.unfloored,
                    _rounded(c.law),
                    _rounded(c.survival),
                    self.threshold,
                    self.min_width,
                    v.n_accepted,
                    len(v.kept),
                    v.passed,
                )
            )
        return tuple(out)

    def state(self, result: StepResult) -> DsbdState:
        out = result.outcome
        return DsbdState(
            gamma=len(result.proposal.layers),
            drafts=self.width,
            min_width=self.min_width,
            threshold=self.threshold,
            dynamic=self.dynamic,
            single_beam=self.single_beam,
            l_last=len(out.walk.layers),
            levels=self.levels(result),
            kept=tuple(out.kept),
            beam_list=out.rows,
        )
