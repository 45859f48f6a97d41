"""Multi-candidate verification: drawing a sibling group and testing it against the target.

One rule, two sampling modes, shared by every tree algorithm:

* **with replacement** (i.i.d. siblings): MCSD Algorithm 1 (multi-candidate speculative sampling,
  MCSS) = SpecInfer's verification (Sequoia paper App. B.2, Algorithm 3). The draft q is never
  changed; after each rejection the target becomes the residual ``norm(max(p_hat - q, 0))``
  (MCSD Eq. 3), and candidate n is accepted with ``min(1, p_hat_{n-1}(x) / q(x))`` (Eq. 4).
* **without replacement** (siblings drawn sequentially without replacement, MCSD Eq. 1): MCSD
  Algorithm 2 = Sequoia Algorithm 1. After a rejection of x, **first** the residual is taken with the
  draft distribution x was drawn from (MCSD Eq. 10; Sequoia Alg. 1 line 9), **then** x is removed from
  the draft and it is renormalised (Sequoia lines 10-16). If the draft has no mass left, it becomes
  uniform over the tokens not rejected yet (Sequoia line 12); MCSD instead never draws past q's
  support (``draw_candidates(..., fallback=False)``), so it never needs that branch.

``sibling_schedule`` computes, for candidates in draw order, the acceptance probability each one gets
if every earlier one was rejected, and the residual left after all are rejected. The draws are then
``first_accepted``: the first i with ``u_i < a_i``. Everything is float32 on the CPU (the warped
distributions of ``Decoder.probs``). If all siblings are rejected the output is drawn from the final
residual; these laws are exact (MCSD App. A-B; Sequoia App. C.1): the output is distributed as p.

A **deterministic proposal** (siblings chosen, not drawn: EAGLE-2's top-k expansion, arXiv 2406.16858;
SpecExec's search, arXiv 2406.02532) has a point mass as each sibling's proposal law; the same rule
with ``D_i = onehot(c_i)`` is ``point_mass_schedule``: c_i is accepted with ``p_i(c_i)``, p_i the target
without the earlier siblings, renormalised; all rejected, a draw from p without all of them (SpecExec's
verification: draw x from p; descend into x if it is a child, else emit it).

Temperature 0 is a separate mode (MCSD §4.1, argmax sampling; Sequoia's temperature-0 trees): siblings
are the draft's top-k tokens (or its argmax repeated, with replacement) and a sibling is accepted iff it
equals the target's argmax; ``greedy_schedule``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from specviz.core.sampling import draws, residual, sample


@dataclass
class SiblingSchedule:
    """Acceptance probabilities of a sibling group, in draw order, and the all-rejected residual.

    ``accept_probs[i]`` is P(accept candidate i | candidates 0..i-1 rejected); ``draft_probs[i]`` the
    draft probability the candidate had when drawn (renormalised without earlier siblings in the
    without-replacement mode); ``rejection_mass[i]`` = sum(max(0, R - D)) at candidate i = P(reject |
    reached) (Sequoia Lemma C.1); ``duplicate[i]``: the token equals an earlier sibling (only with
    replacement, where its residual mass is 0 and it is never accepted, MCSD §3.2).
    """

    accept_probs: list[float]
    draft_probs: list[float | None]
    rejection_mass: list[float | None]
    duplicate: list[bool]
    final_residual: torch.Tensor
    residuals: list[torch.Tensor] = field(default_factory=list, repr=False)


def reject_with_replacement(
    res: torch.Tensor, d: torch.Tensor, x: int, rejected: set[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """MCSD Algorithm 1 after rejecting x: residual against the unchanged q (Eq. 3); q stays."""
    return residual(res, d), d


def reject_without_replacement(
    res: torch.Tensor, d: torch.Tensor, x: int, rejected: set[int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """MCSD Algorithm 2 / Sequoia Algorithm 1 after rejecting x (``rejected`` already holds x).

    (a) residual with the D that x was drawn from (MCSD Eq. 10; Sequoia line 9), *before*
    (b) removing x from D and renormalising (Sequoia lines 10-16), with the uniform fallback over
    never-rejected tokens when D has no mass left (line 12). Swapping (a) and (b) is biased even for
    a single candidate (checked by enumeration in the tests).
    """
    res = residual(res, d)
    d = d.clone()
    d[x] = 0.0
    if float(d.sum()) <= 0.0:
        d = torch.ones_like(d)
        d[list(rejected)] = 0.0
    return res, d / d.sum()


def sibling_schedule(p: torch.Tensor, q: torch.Tensor, candidates: list[int], replacement: bool) -> SiblingSchedule:
    """Run the rule over all ``candidates`` (draw order) assuming each is rejected in turn.

    ``p``: the target's warped distribution at the parent; ``q``: the draft's at the parent (the one
    the group was drawn from). The residual is updated per node only: children of an accepted
    sibling start again from their own untouched p (MCSD Algorithm 2 runs once per tree node).
    """
    reject = reject_with_replacement if replacement else reject_without_replacement
    res, d = p, q
    rejected: set[int] = set()
    out = SiblingSchedule([], [], [], [], p)
    for x in candidates:
        dup = x in rejected
        dx = float(d[x])
        if dup or dx <= 0.0:
            a = 0.0  # a rejected token has residual mass exactly 0 (MCSD §3.2)
        else:
            a = min(1.0, float(res[x]) / dx)
        out.accept_probs.append(a)
        out.draft_probs.append(dx)
        out.duplicate.append(dup)
        out.rejection_mass.append(float(torch.clamp(res - d, min=0.0).sum()))
        out.residuals.append(res)
        rejected.add(x)
        res, d = reject(res, d, x, rejected)
    out.final_residual = res
    return out


def point_mass_schedule(p: torch.Tensor, candidates: list[int]) -> SiblingSchedule:
    """Siblings proposed deterministically: the multi-candidate rule with each candidate's proposal law
    the point mass on it, ``D_i = onehot(c_i)`` (MCSD Eqs. 3-4 with that D; SpecExec, arXiv 2406.02532).

    Candidate i is accepted with ``min(1, R_i(c_i) / D_i(c_i)) = R_i(c_i)``, where ``R_1 = p`` and
    ``R_{i+1} = norm(max(0, R_i - onehot(c_i)))``: R_i without c_i, renormalised. So
    ``P(output c_i) = p(c_i)`` (the product of the earlier rejections telescopes to
    ``1 - sum_{j<i} p(c_j)``) and the final residual is p without every candidate, renormalised: the
    output is distributed as p whatever the candidates and their order. ``draft_probs`` are 1 (the
    point mass); a repeated candidate has ``R(c) = 0``, so it is never accepted. ``q`` is not read.
    """
    res = p
    out = SiblingSchedule([], [], [], [], p)
    seen: set[int] = set()
    for x in candidates:
        a = min(1.0, max(0.0, float(res[x])))
        out.accept_probs.append(a)
        out.draft_probs.append(1.0)
        out.duplicate.append(x in seen)
        out.rejection_mass.append(1.0 - a)
        out.residuals.append(res)
        seen.add(x)
        point = torch.zeros_like(res)
        point[x] = 1.0
        res = residual(res, point)
    out.final_residual = res
    return out


def greedy_schedule(p: torch.Tensor, candidates: list[int]) -> SiblingSchedule:
    """Temperature 0: accept the first sibling equal to argmax p; if none, the output is argmax p."""
    top = int(p.argmax())
    hit = next((i for i, x in enumerate(candidates) if x == top), None)
    probs = [1.0 if i == hit else 0.0 for i in range(len(candidates))]
    seen: set[int] = set()
    dup = []
    for x in candidates:
        dup.append(x in seen)
        seen.add(x)
    onehot = torch.zeros_like(p)
    onehot[top] = 1.0
    none: list[float | None] = [None] * len(candidates)
    return SiblingSchedule(probs, list(none), list(none), dup, onehot)


def first_accepted(accept_probs: list[float], draw: Callable[[], float]) -> tuple[int | None, list[float | None]]:
    """Visit candidates in order with a fresh U(0, 1) each (``draw()``); return the first index with
    ``u < a`` (or None) and the draws (None where a is 0 or 1 and the outcome is certain, so greedy
    schedules use no randomness)."""
    draws: list[float | None] = []
    for i, a in enumerate(accept_probs):
        if a in (0.0, 1.0):
            draws.append(None)
            if a == 1.0:
                return i, draws
            continue
        u = draw()
        draws.append(u)
        if u < a:
            return i, draws
    return None, draws


def draw_candidates(
    q: torch.Tensor, k: int, replacement: bool, generator: torch.Generator, fallback: bool = False
) -> list[int]:
    """Draw up to ``k`` siblings from ``q`` in order.

    With replacement: k i.i.d. draws (MCSD Alg. 1; SpecInfer). Without: sequential draws without
    replacement (MCSD Eq. 1, one renormalised draw after another); when
    q's support is used up, ``fallback=True`` continues with a uniformly random order of the
    remaining tokens (Sequoia Alg. 1 line 12) and ``fallback=False`` stops early (MCSD Eq. 1 is
    undefined past q's support, so k is capped at the support size).
    """
    if replacement:
        return draws(q, k, generator)
    support = int((q > 0).sum())
    m = min(k, support)
    left, out = q.clone(), []
    for _ in range(m):  # MCSD Eq. 1: each draw from q renormalised over the tokens not drawn yet
        out.append(sample(left, generator))
        left[out[-1]] = 0.0
    if fallback and k > m:
        rest = torch.nonzero(q <= 0).flatten()
        perm = torch.randperm(len(rest), generator=generator)[: k - m]
        out += [int(rest[i]) for i in perm]
    return out


def greedy_candidates(logits: torch.Tensor, k: int, replacement: bool) -> list:
    """Temperature 0 siblings: the argmax repeated k times with replacement (MCSD Alg. 1 degenerates
    to SD), else the top-k tokens by logit in descending order (MCSD §4.1 argmax setting; Sequoia's
    temperature-0 trees). ``logits`` ``[V]`` gives one list; ``[rows, V]`` one list per row."""
    if replacement:
        top = logits.argmax(-1, keepdim=True)
        return top.expand(*top.shape[:-1], k).tolist()
    return torch.topk(logits, min(k, logits.shape[-1])).indices.tolist()


def draw_probs(q: torch.Tensor, candidates: list[int], replacement: bool) -> list[float]:
    """The draft probability each sibling had when it was drawn: q(x) with replacement; without,
    q(x) renormalised over the tokens not drawn before it (uniform over them once q is used up)."""
    if replacement:
        return [float(q[x]) for x in candidates]
    out, left, drawn = [], 1.0, 0
    vocab = q.shape[-1]
    for x in candidates:
        qx = float(q[x])
        if qx > 0:
            out.append(qx / max(left, qx))
            left -= qx
        else:
            out.append(1.0 / max(vocab - drawn, 1))
        drawn += 1
    return out
