"""``eesd``: early-exiting speculative decoding with Thompson-sampling draft-length control.

Liu et al. 2024, "Speculative Decoding via Early-exiting for Faster LLM Inference with Thompson
Sampling Control Mechanism" (arXiv 2406.03853), Algorithms 1-3. Per round the early-exit draft (the
target's first N layers plus a trained exit layer, norm and LM head; ``early_exit_drafter``) drafts a
chain token by token; after every token the controller (``length_controllers``: ``beta_ts``, ``cali_ts``
or ``fixed``; or transformers' ``heuristic`` / ``confidence`` / ``adaptive``)
decides whether to draft on; the target verifies the chain in one call with the standard
rule (exact match at temperature 0, speculative sampling otherwise: Leviathan et al. 2023,
Algorithm 1), so the output law is exactly the target's. Needs the pair's early-exit head
(``load_pair(..., early_exit=DIR or N)``).
"""

from __future__ import annotations

from typing import Any, Iterator

from specviz.algorithms.cost import chain_cost
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.early_exit_drafter import CalibratedTheta, EarlyExitDrafter
from specviz.algorithms.length_controllers import make_controller
from specviz.algorithms.length_params import LENGTH_CONTROLLERS, controller_params
from specviz.algorithms.registry import register
from specviz.algorithms.tree_engine import run_engine
from specviz.core.rules import MultiCandidate
from specviz.trace import StepRecord


@register(
    "eesd",
    description="Early-exit self-drafting: the target's first layers plus an exit head draft a chain "
    "whose length Thompson sampling decides after every token; verified in one target call.",
    paper="Liu et al. 2024, arXiv 2406.03853, Algorithms 1-3",
    params=controller_params("beta_ts", LENGTH_CONTROLLERS),
    controller="thompson",
    drafter="early_exit",
    cost=chain_cost,
    color="#d97706",
    page_rank=6,
)
def run_eesd(dec: Decoder, **params: Any) -> Iterator[StepRecord]:
    heads = dec.pair.heads  # present: ``decoding.LiveRun`` refuses a pair without an early-exit head
    drafter = EarlyExitDrafter(heads.early_exit, dec)
    model = None
    if params["controller"] == "cali_ts" and heads.calibration is not None:
        model = CalibratedTheta(heads.calibration, drafter, dec.pair.target)
    controller = make_controller(dec, params, model, heads.calibration_sigma_m if model else None)
    try:
        yield from run_engine(dec, drafter, controller, MultiCandidate(replacement=True))
    finally:
        if model is not None:
            model.close()
