"""``Plan``: what a controller asks the drafter to draft in one step, handed over frozen.

The drafter never sees the controller: it gets the template ``shape`` (cut to the token budget by the
step loop) and the expansion decisions, as two functions it calls while drafting:

* ``go_on(tree, node)`` after **every** drafted token: whether to draft on beneath it (EESD's
  stop-after-each-token rule, Liu et al. 2024, arXiv 2406.03853, Algorithm 1);
* ``keep(tree, level, nodes)`` after each drafted level: which of its nodes are expanded further.

For a beam forest (``dsbd``) the plan also carries ``width``, the beams drafted per layer (W_S) and
kept per step, and ``layer_width``, the per-layer width rule W_L^(l) of "Dynamic-Width Speculative
Beam Decoding" (arXiv 2409.16560, Eqs 2-7) that the layer verifier applies before each layer.

The decisions only choose what is *expanded*: every drafted node stays in the tree, so each sibling
group is still drawn as the acceptance rule assumes and losslessness is untouched.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import torch

from specviz.algorithms.drafted_tree import DraftedTree
from specviz.core import beams as B
from specviz.core.trees import TreeShape


def draft_on(tree: DraftedTree, node: int) -> bool:
    """The neutral per-token decision: always draft on."""
    return True


def keep_all(tree: DraftedTree, level: int, nodes: list[int]) -> list[int]:
    """The neutral per-level decision: expand every node."""
    return nodes


@dataclass(frozen=True)
class LayerWidth:
    """DSBD's width rule (Eqs 2-7, ``core.beams.width_rule``): W_L^(l) from (p_beam, q_beam) of a layer
    with ``drafts`` (W_S) drafts, the threshold t and the floor W_min; fixed at W_min unless ``dynamic``."""

    drafts: int
    min_width: int
    threshold: float
    dynamic: bool

    def choose(self, p_beam: torch.Tensor, q_beam: torch.Tensor) -> B.WidthChoice:
        return B.width_rule(p_beam, q_beam, self.drafts, self.threshold, self.min_width, self.dynamic)


@dataclass(frozen=True)
class Plan:
    """One step's drafting plan (see module docstring)."""

    shape: TreeShape
    go_on: Callable[[DraftedTree, int], bool] = draft_on
    keep: Callable[[DraftedTree, int, list[int]], list[int]] = keep_all
    width: int = 1
    layer_width: LayerWidth | None = None

    def cut(self, levels: int) -> "Plan":
        """The plan with its template cut to ``levels`` levels (the draft tokens still allowed)."""
        return replace(self, shape=self.shape.truncate(max(levels, 0)))
