"""``ForestDrafter``: the draft model beam-samples a multi-level draft forest, one tree per current
beam ("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560, Sec 3.1 and 3.3, Fig 2).

Layer d (1..gamma) has ``width`` (W_S) nodes. Its parents are the roots (the current beams) for
d = 1, else the W_S nodes of layer d - 1. Per parent j the draft's next-token log-probabilities
(unwarped) give the draft scores ``S[j, v] = s_j + log q(v | j)``, where the draft's cumulative
scores restart at 0 for the roots every iteration (the official code's choice; any proposal is exact
as long as verification uses the exact vector drawn from). ``q_beam = T(softmax(S))`` over
(parents x V) (``core.beams.beam_distribution``) and the W_S nodes are i.i.d. draws from it, kept in
draw order; at T = 0 they are the draft's W_S best distinct candidates (beam search). A node whose
token is EOS ends its draft beam: its row gets score -inf (no children), and drafting stops early
when every node of a layer is EOS. A layer costs one draft call: the roots' uncached suffixes
(d = 1) or the previous layer's nodes are fed under their parents in the draft's own cache (tree
attention). Layer gamma is never fed to the draft.

``ForestDrafter`` is a drafter of the step loop like any other: ``propose(dec, plan, rule)`` drafts
``len(plan.shape)`` layers (the plan's chain, cut to the budget) of ``plan.width`` beams over the
beams it holds in the draft's cache (``slots``); ``observe(dec, forest, outcome)`` keeps the carried
beams' paths there (``outcome.carried``, ``outcome.outputs``: ``layer_verifier.LayerOutcome``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from specviz.algorithms.beams.state import Slot, feed, keep_slots, logprobs_at
from specviz.algorithms.step_types import Plan
from specviz.core import beams as B
from specviz.models.tree_forward import CachedLM

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


@dataclass
class DraftForest:
    """The drafted forest in BFS order. Node i: ``tokens[i]``; ``parent[i]`` a node id or None (a
    root's child); ``row[i]`` its parent's row in its layer's candidate space; ``tree[i]`` the root
    beam; ``layer[i]`` (1-based). ``layers[d - 1]``: node ids of layer d in draw order;
    ``q_beam[d - 1]``: the exact flat vector layer d was drawn from (plain softmax at T = 0);
    ``candidate[i]`` the node's flat index in it; ``draft_index[i]``: pending index in the draft's
    cache (layers < gamma); ``root_index[b]``: pending index of root b's last token there."""

    tokens: list[int] = field(default_factory=list)
    parent: list[int | None] = field(default_factory=list)
    row: list[int] = field(default_factory=list)
    tree: list[int] = field(default_factory=list)
    layer: list[int] = field(default_factory=list)
    candidate: list[int] = field(default_factory=list)
    layers: list[list[int]] = field(default_factory=list)
    q_beam: list[torch.Tensor] = field(default_factory=list)
    draft_index: dict[int, int] = field(default_factory=dict)
    root_index: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tokens)

    def path(self, node: int | None) -> list[int]:
        """Node ids from layer 1 down to ``node`` (empty for None)."""
        out = []
        while node is not None:
            out.append(node)
            node = self.parent[node]
        return out[::-1]


class ForestDrafter:
    """Draft ``gamma`` layers of ``width`` beams over the beams in ``slots`` (see module docstring)."""

    def __init__(self, lm: CachedLM, slots: list[Slot]):
        self.lm, self.slots = lm, slots

    @property
    def fed(self) -> list[int]:
        return self.lm.fed

    def propose(self, dec: "Decoder", plan: Plan, rule: Any) -> DraftForest:
        gamma, width, slots = len(plan.shape), plan.width, self.slots
        forest = DraftForest()
        parents: list[int | None] = [None] * len(slots)  # layer-0 "nodes" are the roots
        trees = list(range(len(slots)))
        scores_prev = torch.zeros(len(slots), dtype=torch.float64)
        for d in range(1, gamma + 1):
            start = len(self.lm.tree)
            if d == 1:
                logits, last, _ = feed(self.lm, slots)
                forest.root_index = last
                rows = last
                alive = None
            else:
                prev = forest.layers[-1]
                alive = torch.tensor([not dec.is_eos(forest.tokens[i]) for i in prev], dtype=torch.bool)
                if not alive.any():
                    break
                logits, _, nodes = feed(
                    self.lm,
                    [],
                    [forest.tokens[i] for i in prev],
                    [("cached", self._cached_parent(forest, i)) for i in prev],
                )
                for i, n in zip(prev, nodes):
                    forest.draft_index[i] = n
                rows = nodes
            scores = B.candidate_scores(scores_prev, logprobs_at(logits, start, rows), alive)
            vocab = scores.shape[1]
            if dec.sampling.greedy:
                picks = B.beam_search_select(scores, width)
                q = torch.softmax(scores.reshape(-1), 0).float()
            else:
                q = B.beam_distribution(scores, dec.sampling)
                picks = B.sample_beams(q, width, dec.generator)
            flat = scores.reshape(-1)
            layer = []
            for c in picks:
                r, t = B.split_candidate(c, vocab)
                layer.append(len(forest.tokens))
                forest.tokens.append(t)
                forest.parent.append(parents[r])
                forest.row.append(r)
                forest.tree.append(trees[r])
                forest.layer.append(d)
                forest.candidate.append(c)
            forest.layers.append(layer)
            forest.q_beam.append(q)
            parents = list(layer)
            trees = [forest.tree[i] for i in layer]
            scores_prev = flat[torch.as_tensor(picks, dtype=torch.long)]
        return forest

    def observe(self, dec: "Decoder", forest: DraftForest, outcome: Any) -> None:
        """Keep the carried beams' paths in the draft's cache (their deepest fed node and the tokens after it)."""
        if outcome.carried:
            outs = [outcome.outputs[i] for i in outcome.carried]
            self.slots = keep_slots(
                self.lm, [draft_chain(forest, self.slots[o.root], o.root, list(o.path), o.token) for o in outs]
            )

    @staticmethod
    def _cached_parent(forest: DraftForest, node: int) -> int:
        """Pending index in the draft's cache of ``node``'s parent (a root's last token or a node)."""
        par = forest.parent[node]
        return forest.root_index[forest.row[node]] if par is None else forest.draft_index[par]


def draft_chain(forest: DraftForest, slot: Slot, root: int, path: list[int], token: int) -> tuple[int, list[int]]:
    """Where a new beam sits in the draft's cache: its deepest fed node and the tokens after it."""
    fed = [i for i, n in enumerate(path) if n in forest.draft_index]
    if fed:
        k = fed[-1]
        return forest.draft_index[path[k]], [forest.tokens[n] for n in path[k + 1 :]] + [token]
    tail = [forest.tokens[n] for n in path] + [token]
    if forest.root_index:
        return forest.root_index[root], tail
    return slot.anchor, slot.suffix + tail
