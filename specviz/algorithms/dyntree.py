"""``dyntree``: a dynamic draft tree from any draft model, rebuilt every step (EAGLE-2, Li et al. 2024,
arXiv 2406.16858, §4: expand the nodes with the highest cumulative draft probability, then rerank to a
node budget), verified losslessly at any temperature.

``drafters.DynamicTreeDrafter`` builds the tree: at most ``depth`` levels, ``topk`` children per
expanded node and ``topk`` nodes expanded per level, the ``nodes`` drafted nodes of highest cumulative
draft probability kept. The tree is chosen, not sampled, so each sibling's proposal law is a point
mass, and it is verified against that law (``core.rules.PointMass``, SpecExec's verification, arXiv
2406.02532): at each node child c_i is accepted with p_i(c_i), p_i the target without the earlier
rejected children, renormalised; if none is, the token is drawn from p without them all. Verifying the
children as draws from the draft's q (MCSD's rule) would be biased here. Temperature 0: exact match, so
the target's argmax is followed whenever it is a child, and the output is ``ar``'s.

``StepRecord.controller`` (``step_state.DynTreeState``, kind ``dyntree``): ``cum_q``, node i's cumulative
draft probability (the product of ``q`` along its path, the value the tree was ranked by); ``expected_accepted``, their
sum (the expected accepted drafts if the target were the draft: under this rule node v is accepted
with the product of the target's p along its path); ``accepted``, the drafts accepted; ``drafted``.
"""

from __future__ import annotations

from typing import Iterator

from specviz.algorithms.cost import int_param, per_step
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafter_choice import DRAFTER
from specviz.algorithms.drafters import DynamicTreeDrafter
from specviz.algorithms.registry import Param, register
from specviz.algorithms.step_types import Controller, StepResult
from specviz.algorithms.tree_engine import run_engine
from specviz.core.rules import PointMass
from specviz.core.trees import ROOT, TreeShape, chain_shape
from specviz.step_state import DynTreeState
from specviz.trace import StepRecord


class DynamicTreeController(Controller):
    """Plans a chain of ``depth`` (the drafter's depth bound) and records each node's cumulative draft
    probability."""

    kind = "dyntree"

    def __init__(self, depth: int):
        self.shape = chain_shape(depth)

    def plan(self, dec: Decoder) -> TreeShape:
        return self.shape

    def state(self, result: StepResult) -> DynTreeState:
        tree, cum = result.tree, []
        for q, par in zip(tree.q_draw, tree.parents):
            cum.append((1.0 if par == ROOT else cum[par]) * q)  # as the drafter ranked: parent's c times q
        return DynTreeState(drafted=len(tree), accepted=len(result.path), expected_accepted=sum(cum), cum_q=tuple(cum))


@register(
    "dyntree",
    description="Dynamic draft tree (EAGLE-2): the nodes of highest cumulative draft probability, "
    "rebuilt every step; verified exactly as a deterministic proposal (SpecExec).",
    paper="Li et al. 2024, EAGLE-2, arXiv 2406.16858, §4; verification: SpecExec, arXiv 2406.02532",
    params=(
        Param(
            "nodes",
            31,
            "int",
            1,
            512,
            help="draft tokens kept per step (the tree's node budget; "
            "31 = Sequoia's default size 32, which counts the root)",
        ),
        Param(
            "depth",
            7,
            "int",
            1,
            32,
            help="levels drafted at most, so at most depth + 1 tokens a step "
            "(7 = Sequoia's default depth 8, which counts the root)",
        ),
        Param(
            "topk",
            8,
            "int",
            1,
            64,
            help="children per expanded node and nodes expanded per level (EAGLE-2's top-k; not the sampling top_k)",
        ),
        DRAFTER,
    ),
    controller="dyntree",
    color="#e11d48",
    cost=lambda params, steps: per_step(1 + max(1, int_param(params, "nodes")), "nodes", steps),
)
def run_dyntree(dec: Decoder, nodes: int, depth: int, topk: int) -> Iterator[StepRecord]:
    yield from run_engine(dec, DynamicTreeDrafter(dec.draft, nodes, topk), DynamicTreeController(depth), PointMass())
