"""``ar``: plain autoregressive sampling (or greedy) with the target: the reference every lossless
algorithm must match (Yin et al. 2024, "A Theoretical Perspective for Speculative Decoding
Algorithm", Algorithm 3). It is the engine with a drafter that proposes nothing: one target call per
token, tau = 1 by definition."""

from __future__ import annotations

from typing import Iterator

from specviz.algorithms.cost import per_step
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafters import NoDrafter
from specviz.algorithms.registry import register
from specviz.algorithms.tree_engine import StaticShape, run_engine
from specviz.core.rules import MultiCandidate
from specviz.core.trees import TreeShape
from specviz.trace import StepRecord


@register(
    "ar",
    description="Autoregressive decoding with the target alone (the reference).",
    paper="A Theoretical Perspective for Speculative Decoding, Algorithm 3",
    drafter="none",
    cost=lambda params, steps: per_step(1, "max new tokens", steps, models=1),
    color="#374151",
    page_rank=1,
)
def run_ar(dec: Decoder) -> Iterator[StepRecord]:
    yield from run_engine(dec, NoDrafter(), StaticShape(TreeShape(())), MultiCandidate())
