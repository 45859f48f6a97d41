"""``biased_sd``: chain speculative decoding with over-acceptance ("A Theoretical Perspective for
Speculative Decoding Algorithm", Yin et al. 2024, arXiv:2411.00841, Section 4, Thms 4-5).

The draft's token x is accepted with ``b(x) = min(1, (p(x) + eps) / q(x))`` (specviz's letters: p
the target, q the draft; the paper writes ``min(1, (q + eps) / p)`` with its letters swapped). On
rejection the output is drawn from ``norm(max(0, p - q))`` (``residual="opt"``, Decoding-OPT: for
every over-accepting b this residual is a minimiser of Thm 4's bias) or from p itself
(``residual="target"``, Decoding-UNO, the paper's baseline). The rule is ``core.rules.OverAcceptance``
on a chain of ``gamma`` drafts, otherwise exactly ``sd``: with ``eps = 0`` and ``opt`` the two runs
make the same draws and produce the same tokens for the same seed. ``lam`` moves b linearly towards
1 (``b + lam (1 - b)``): with ``eps = 0`` the run walks Theorem 5's line from SD (``lam = 0``) to
accepting every draft (``lam = 1``). For ``eps > 0`` (and for UNO at
any eps) the output is biased. The algorithm is declared lossy, so its ``RunTrace.lossless`` is False
even at temperature 0, where every rule is exact match and the output still equals ``ar``'s.

Per step, ``StepRecord.controller`` (``kind = "theory"``) holds, per tested position, the exact
whole-vocabulary quantities of that position: ``tv`` = TV(p, q), ``reject`` = P(rejection)
``sum (1 - b) q``, and the TV bias of the one-token output law ``b q + Z R`` from p for both rejection
laws, ``bias_opt`` and ``bias_uno`` (Thm 5: ``reject + bias_opt = tv``; UNO lies above that line).
"""

from __future__ import annotations

from typing import Iterator

import torch

from specviz.algorithms.cost import chain_cost
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.registry import Param, register
from specviz.algorithms.sd import GAMMA
from specviz.algorithms.theory_probe import ProbeController, ProbedRule, reject_all
from specviz.algorithms.tree_engine import run_engine
from specviz.core import theory
from specviz.core.acceptance import SiblingSchedule
from specviz.core.rules import OverAcceptance
from specviz.core.sampling import tv_distance
from specviz.core.trees import chain_shape
from specviz.trace import StepRecord

EPS = Param("eps", 0.01, "float", 0.0, 1.0, help="over-acceptance: accept with min(1, (p + eps) / q); 0 is sd")
LAM = Param(
    "lam",
    0.0,
    "float",
    0.0,
    1.0,
    help="linear knob: accept with b + lam (1 - b); with eps = 0 the rejection is (1 - lam) TV and the bias lam TV",
)
RESIDUAL = Param(
    "residual",
    "opt",
    "choice",
    choices=("opt", "target"),
    help="on rejection draw from the SD residual (opt, Decoding-OPT) or from the target (target, Decoding-UNO)",
)


def measure_tradeoff(
    rule: OverAcceptance, p: torch.Tensor, q: torch.Tensor, sched: SiblingSchedule
) -> dict[str, float]:
    """One position's point of Fig. 4: rejection probability and TV bias (OPT and UNO), exactly."""
    b = rule.accept_curve(p, q)
    reject, bias_opt = theory.tradeoff(b, p, q, "opt")
    bias_uno = theory.tradeoff(b, p, q, "target")[1]
    return {
        "tv": tv_distance(p, q),
        "reject": reject_all(sched),
        "reject_b": float(reject),
        "bias_opt": float(bias_opt),
        "bias_uno": float(bias_uno),
    }


@register(
    "biased_sd",
    description="Over-accepting SD: accept with min(1, (p + eps)/q), resample from the "
    "SD residual (OPT) or the target (UNO). Lossy for eps > 0.",
    paper="Yin et al. 2024, A Theoretical Perspective for Speculative Decoding, Section 4, Thms 4-5",
    params=(EPS, RESIDUAL, LAM, GAMMA),
    lossless=False,
    controller="theory",
    cost=chain_cost,
    color="#a16207",
)
def run_biased_sd(dec: Decoder, eps: float, residual: str, lam: float, gamma: int) -> Iterator[StepRecord]:
    probe = ProbedRule(OverAcceptance(eps, residual, lam=lam), measure_tradeoff)
    yield from run_engine(dec, ModelDrafter(dec.draft), ProbeController(chain_shape(gamma), probe), probe)
