"""Controllers: the policy that decides, step by step, what to draft.

A controller is one object per run with four hooks, called by the engine (``tree_engine``) and the
drafter (``drafters``) in this order:

1. ``plan(dec)`` before a step: the template ``TreeShape`` to draft (a chain of n nodes is a maximum
   draft length n; a drafter may realise less of it);
2. ``go_on(tree, node)`` after **every** drafted token: whether to draft on beneath it (EESD's
   stop-after-each-token rule, Liu et al. 2024, "Speculative Decoding via Early-exiting for Faster
   LLM Inference with Thompson Sampling Control Mechanism", Algorithm 1, is this hook);
3. ``keep(tree, level, nodes)`` after each drafted level: which of its nodes are expanded further
   (the per-level width of "Dynamic-Width Speculative Beam Decoding", arXiv:2409.16560, Eqs. 2-7);
4. ``update(dec, result)`` after verification (learn from what was accepted), then ``state(result)``:
   the plain-JSON dict stored as ``StepRecord.controller`` (the only way controller state reaches the
   trace).

``go_on`` and ``keep`` only decide what is *expanded*; every drafted node stays in the tree, so the
sibling groups the rule tests are still drawn exactly as it assumes and losslessness is untouched.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specviz.algorithms.drafted_tree import DraftedTree
from specviz.core.trees import TreeShape

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder
    from specviz.algorithms.tree_engine import TreeStep


class Controller:
    """Base controller: every hook is the neutral choice. ``kind`` names its ``StepRecord.controller``."""

    kind: str | None = None

    def plan(self, dec: "Decoder") -> TreeShape:
        raise NotImplementedError

    def go_on(self, tree: DraftedTree, node: int) -> bool:
        return True

    def keep(self, tree: DraftedTree, level: int, nodes: list[int]) -> list[int]:
        return nodes

    def update(self, dec: "Decoder", result: "TreeStep") -> None:
        return None

    def state(self, result: "TreeStep") -> dict[str, Any] | None:
        return None


class StaticShape(Controller):
    """The trivial controller: the same template every step (``sd``, ``mcsd``, ``specinfer``, ``pld``)."""

    def __init__(self, shape: TreeShape):
        self.shape = shape

    def plan(self, dec: "Decoder") -> TreeShape:
        return self.shape
