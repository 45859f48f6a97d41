"""``DraftedTree``: what a drafter proposed in one step, as the verifier walks it.

Nodes are numbered in proposal order, which is breadth first (the target's pending indices);
``children`` lists each node's children in **draw order** (the order the rule must test them; MCSD,
arXiv:2401.06706, §3; Sequoia, arXiv:2402.12374, Algorithm 1). ``parent_q[v]`` is the draft
distribution the children of ``v`` were drawn from (a one-hot for a deterministic drafter such as
prompt lookup), ``q_draw[i]`` the probability node i had when drawn (shown in the trace), ``root[i]``
the tree / beam the node belongs to in a forest (0 for a single tree).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specviz.core.trees import ROOT


@dataclass
class DraftedTree:
    """The realised tree of one step (BFS order, siblings in draw order; see module docstring)."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    template: list[int] = field(default_factory=list)       # template node each node realises
    q_draw: list[float] = field(default_factory=list)
    duplicate: list[bool] = field(default_factory=list)
    root: list[int] = field(default_factory=list)
    children: dict[int, list[int]] = field(default_factory=lambda: {ROOT: []})
    parent_q: dict[int, torch.Tensor] = field(default_factory=dict)
    draft_index: dict[int, int] = field(default_factory=dict)        # node -> draft pending index

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, token: int, parent: int, template: int, q: float, duplicate: bool = False, root: int = 0) -> int:
        i = len(self.tokens)
        self.tokens.append(token)
        self.parents.append(parent)
        self.template.append(template)
        self.q_draw.append(q)
        self.duplicate.append(duplicate)
        self.root.append(root)
        self.children[i] = []
        self.children[parent].append(i)
        return i

    def rank(self, node: int) -> int:
        """1-based draw order of ``node`` among its siblings."""
        return self.children[self.parents[node]].index(node) + 1

    def level(self, node: int) -> int:
        """Edges from the root (1 for the root's children)."""
        lv = 0
        while node != ROOT:
            node, lv = self.parents[node], lv + 1
        return lv
