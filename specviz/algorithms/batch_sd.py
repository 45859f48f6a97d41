"""``batch_sd``: batch speculative sampling ("A Theoretical Perspective for Speculative Decoding
Algorithm", Yin et al. 2024, arXiv:2411.00841, Algorithm 4; unbiasedness Thm 9, rejections Thm 3).

M draft continuations of ``gamma`` tokens are drawn i.i.d. from the draft, all from the committed
prefix, and scored in one target call. The M root tokens are tried in draw order against the
successively residualised target ``p^1 = p, p^{m+1} = norm(max(0, p^m - q))`` (the paper's
``q^{m+1} = [q^m - p]_+`` with its letters swapped: specviz's p is the target); once a root is
accepted only its branch is verified, token by token against the unmodified target; when every root
is rejected the output is drawn from ``p^{M+1}``.

This is the engine's multi-candidate rule **with replacement** on the ``M x 1 x ... x 1`` tree (the
path ``specinfer`` takes with ``k_config = Mx1x..x1``), so it reuses ``run_engine`` unchanged. Two
printed errors of Algorithm 4 are corrected, as the proof of Thm 9 requires: the all-rejected
fallback sits after the loop over roots, and it samples the already-updated ``p^{M+1}``, not one
residual further. The literal forms are biased (``core.theory.batch_root_law`` computes both; see
``tests/test_theory.py``); they are not offered as a switch here. Where Algorithm 4 drafts the whole
horizon we draft ``gamma`` tokens and take a bonus token after an accepted leaf (as ``sd``); a
duplicate root is never accepted (its residual mass is 0), so it gets no continuation. ``M = 1`` is
``sd`` draw for draw.

Per step, ``StepRecord.controller`` (``kind = "theory"``) holds, per tested position in walk order,
``tv`` (TV(p, q), full vocabulary), ``reject`` (P(the position ends in a rejection), the product of
``r_m = TV(p^m, q)`` over the M roots at a root position, Thm 3) and ``roots`` (M there, else 1).
"""

from __future__ import annotations

from typing import Any, Iterator

import torch

from specviz.algorithms.cost import Cost, int_param, per_step
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.registry import Param, register
from specviz.algorithms.sd import GAMMA
from specviz.algorithms.theory_probe import ProbeController, ProbedRule, reject_all
from specviz.algorithms.tree_engine import run_engine
from specviz.core.acceptance import SiblingSchedule
from specviz.core.rules import AcceptanceRule, MultiCandidate
from specviz.core.sampling import tv_distance
from specviz.core.trees import TreeShape, k_config_shape
from specviz.trace import StepRecord

NUM_DRAFTS = Param("num_drafts", 4, "int", 1, 16, help="M: draft sequences per step, all from the same prefix")


def batch_shape(num_drafts: int, gamma: int) -> TreeShape:
    """M branches of ``gamma`` tokens: the ``M x 1 x ... x 1`` tree (``gamma`` levels)."""
    return k_config_shape((num_drafts,) + (1,) * (gamma - 1))


def measure_rejection(
    rule: AcceptanceRule, p: torch.Tensor, q: torch.Tensor, sched: SiblingSchedule
) -> dict[str, float]:
    """TV(p, q) and P(reject) at one position (Thm 3's ``prod_m r_m`` where several roots are tried)."""
    return {"tv": tv_distance(p, q), "reject": reject_all(sched), "roots": float(len(sched.accept_probs))}


def cost(params: dict[str, Any], steps: int) -> Cost:
    """``num_drafts`` chains of ``gamma`` tokens and their roots' context, in each model."""
    drafts, gamma = max(1, int_param(params, "num_drafts")), max(1, int_param(params, "gamma"))
    return per_step(drafts * (gamma + 1), "num_drafts x gamma", steps)


@register(
    "batch_sd",
    description="Batch SD: M draft sequences from one prefix; roots tried against "
    "successive residuals, then only the accepted branch (drawn as M branches).",
    paper="Yin et al. 2024, A Theoretical Perspective for Speculative Decoding, Algorithm 4, Thm 3",
    params=(NUM_DRAFTS, GAMMA),
    controller="theory",
    cost=cost,
    color="#0f766e",
)
def run_batch_sd(dec: Decoder, num_drafts: int, gamma: int) -> Iterator[StepRecord]:
    probe = ProbedRule(MultiCandidate(replacement=True), measure_rejection)
    yield from run_engine(dec, ModelDrafter(dec.draft), ProbeController(batch_shape(num_drafts, gamma), probe), probe)
