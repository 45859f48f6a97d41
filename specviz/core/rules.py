"""Acceptance rules as objects: how a sibling group drafted at one position is tested against the target.

A rule turns the target's warped distribution ``p`` at a position, the draft's ``q`` there and the
candidates in draw order into a ``SiblingSchedule`` (``core.acceptance``): the probability each
candidate is accepted given all earlier ones were rejected, the residual each was tested against, and
the final residual drawn from when all are rejected. ``lossless`` says whether the output law is
exactly p; ``replacement`` how the drafter must draw the siblings for the rule to hold.

* ``MultiCandidate``: the exact multi-candidate rule. With replacement: MCSD Algorithm 1 (Yang et al.
  2024, arXiv:2401.06706) = SpecInfer's verification (Sequoia, arXiv:2402.12374, App. B.2 Algorithm 3);
  without: MCSD Algorithm 2 = Sequoia Algorithm 1. One candidate is chain SD (Leviathan et al. 2023,
  Algorithm 1; Chen et al. 2023; "A Theoretical Perspective for Speculative Decoding", Algorithm 1).
* ``PointMass``: the multi-candidate rule for a **deterministic** proposal (siblings chosen, not drawn:
  ``dyntree``'s EAGLE-2 tree, arXiv 2406.16858), each sibling's proposal law the point mass on it:
  accept c_i with p_i(c_i), p_i the target without the earlier siblings, renormalised; all rejected, a
  draw from p without them (SpecExec's verification, arXiv 2406.02532). Exact for any candidates.
* ``ExactMatch``: temperature 0; a candidate is accepted iff it is the target's argmax.
* ``OverAcceptance``: the theory paper's relaxed rule (Section 4, Theorems 4-5), written in this
  project's convention (p = target, q = draft; the paper swaps the letters): accept x with
  ``b(x) = min(1, (p(x) + eps) / q(x))``; on rejection draw from ``norm(max(0, p - q))``
  (``residual="opt"``, Decoding-OPT, Theorem 4: the bias-minimal residual for any over-accepting b)
  or from p itself (``residual="target"``, Decoding-UNO). Not lossless for eps > 0 (UNO not even at
  eps = 0). Its one-token output law is ``b * q + Z * R`` with ``Z = sum_x (1 - b(x)) q(x)``.

``record()`` is what a step's trace keeps of the rule (``StepRecord.rule``: its name and parameters);
``words()`` states its formula and residuals from that record (``core.rule_words``), so the views
describe each decision by the rule that made it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import torch

from specviz.core import rule_words
from specviz.core.acceptance import SiblingSchedule, greedy_schedule, point_mass_schedule, sibling_schedule
from specviz.core.sampling import residual
from specviz.errors import InvalidParameterError


class AcceptanceRule(Protocol):
    """What the engine asks of a rule (see module docstring)."""

    name: str
    lossless: bool
    replacement: bool  # siblings must be drawn i.i.d. (True) or without replacement (False)

    def schedule(self, p: torch.Tensor, q: torch.Tensor, candidates: list[int]) -> SiblingSchedule: ...

    def record(self) -> dict[str, Any]: ...  # StepRecord.rule: {"name": ..., parameters} (core.rule_words)


class _Described:
    """``words()``: the rule's formula and residuals as the views state them, from its ``record()``."""

    def words(self) -> rule_words.RuleWords:
        return rule_words.words(self.record())  # type: ignore[attr-defined]


@dataclass(frozen=True)
class MultiCandidate(_Described):
    """Exact multi-candidate speculative sampling (MCSD Algorithms 1-2; Sequoia Algorithm 1); k = 1 is SD."""

    replacement: bool = True
    name: str = "multi_candidate"
    lossless: bool = True

    def schedule(self, p: torch.Tensor, q: torch.Tensor, candidates: list[int]) -> SiblingSchedule:
        return sibling_schedule(p, q, candidates, self.replacement)

    def record(self) -> dict[str, Any]:
        return {"name": "multi_candidate", "replacement": self.replacement}


@dataclass(frozen=True)
class PointMass(_Described):
    """Exact verification of siblings proposed deterministically (``core.acceptance.point_mass_schedule``;
    SpecExec, arXiv 2406.02532): a = p_res(x), p_res the target without the earlier siblings."""

    replacement: bool = False  # siblings are distinct tokens, chosen (never drawn)
    name: str = "point_mass"
    lossless: bool = True

    def schedule(self, p: torch.Tensor, q: torch.Tensor, candidates: list[int]) -> SiblingSchedule:
        return point_mass_schedule(p, candidates)

    def record(self) -> dict[str, Any]:
        return {"name": "point_mass"}


@dataclass(frozen=True)
class ExactMatch(_Described):
    """Temperature 0: accept the first sibling equal to argmax p, else output argmax p."""

    replacement: bool = True
    name: str = "exact_match"
    lossless: bool = True

    def schedule(self, p: torch.Tensor, q: torch.Tensor, candidates: list[int]) -> SiblingSchedule:
        return greedy_schedule(p, candidates)

    def record(self) -> dict[str, Any]:
        return {"name": "exact_match"}


@dataclass(frozen=True)
class OverAcceptance(_Described):
    """Over-acceptance ``b = min(1, (p + eps) / q)`` with the OPT or UNO residual (theory paper §4).

    ``lam`` in [0, 1] moves b linearly towards 1: ``b_lam = b + lam (1 - b)``. With ``eps = 0`` this is
    the linear knob on Theorem 5's line: rejection ``(1 - lam) TV(p, q)`` and, with OPT, TV bias
    ``lam TV(p, q)`` exactly; ``lam = 0`` leaves the eps rule unchanged.

    Several i.i.d. candidates are tested in turn as in Algorithm 4 of the same paper: each later
    candidate is tested against the residual left by the earlier ones (``opt``), or against p
    again (``target``).
    """

    eps: float = 0.0
    residual: Literal["opt", "target"] = "opt"
    lam: float = 0.0
    replacement: bool = True
    name: str = "over_acceptance"
    lossless: bool = False

    def __post_init__(self) -> None:
        if not self.eps >= 0:
            raise InvalidParameterError(f"over-acceptance eps must be >= 0, got {self.eps!r}.")
        if self.residual not in ("opt", "target"):
            raise InvalidParameterError(f"residual must be 'opt' or 'target', got {self.residual!r}.")
        if not 0.0 <= self.lam <= 1.0:
            raise InvalidParameterError(f"over-acceptance lam must be in [0, 1], got {self.lam!r}.")

    def schedule(self, p: torch.Tensor, q: torch.Tensor, candidates: list[int]) -> SiblingSchedule:
        res = p
        out = SiblingSchedule([], [], [], [], p)
        seen: set[int] = set()
        for x in candidates:
            qx = float(q[x])
            b = self.accept_curve(res, q)
            out.accept_probs.append(float(b[x]))
            out.draft_probs.append(qx)
            out.duplicate.append(x in seen)
            out.rejection_mass.append(float(((1 - b) * q).sum()))
            out.residuals.append(res)
            seen.add(x)
            if self.residual == "opt":
                res = residual(res, q)
        out.final_residual = res
        return out

    def accept_curve(self, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
        """b(x) for every token (1 where q(x) = 0: such a token is never drafted)."""
        ratio = (p + self.eps) / q.clamp_min(1e-30)
        b = torch.where(q > 0, ratio.clamp(max=1.0), torch.ones_like(p))
        return b + self.lam * (1.0 - b) if self.lam else b

    def record(self) -> dict[str, Any]:
        return {"name": "over_acceptance", "eps": self.eps, "lam": self.lam, "residual": self.residual}


# rules whose siblings are chosen, not drawn: each proposal's law is the point mass on it (q = 1), whatever
# the draft's own probability of the token was (its softmax at temperature 0, where the warped q is one-hot)
CHOSEN: tuple[str, ...] = ("exact_match", "point_mass")


def rule_for(rule: AcceptanceRule, greedy: bool) -> AcceptanceRule:
    """The rule a step uses: at temperature 0 every rule becomes exact match (same sibling drawing)."""
    return ExactMatch(rule.replacement) if greedy else rule
