"""Drafters: what proposes the tokens the target verifies (in the spirit of transformers'
``CandidateGenerator``: ``propose`` candidates, then ``observe`` what verification kept).

A drafter (``step_types.Drafter``) implements

* ``propose(dec, plan, rule) -> DraftedTree``: draft at most the template ``plan.shape`` (cut to the
  budget by the step loop), drawing each sibling group as ``rule.replacement`` requires and asking
  the plan's ``go_on`` after every drafted token and ``keep`` after every level which nodes to expand
  further (``step_types.Plan``: the controller's decisions, not the controller); ``parent_q`` must hold
  the exact distribution each sibling group was drawn from (a one-hot for a deterministic proposal),
  which is what makes verification exact;
* ``observe(dec, proposal, outcome)``: what verification kept (a tree walk's ``outcome.path``, node
  ids), to keep its own state (caches) in step;
* ``fed``: the tokens each forward it has made so far fed (its length is its call count); the step
  loop records the step's share as ``StepRecord.draft_calls`` and ``draft_fed``, so a drafter that is
  part of the target (early exit) counts its partial forwards as draft calls, never as target calls.

``ModelDrafter`` is the draft-model drafter every tree algorithm used before (same draws in the same
order); ``DynamicTreeDrafter`` builds EAGLE-2's tree from the draft's cumulative probabilities, its
own shape each step (the template only bounds its depth); ``NoDrafter`` proposes nothing (``ar``);
``prompt_lookup.PromptLookupDrafter`` copies n-gram continuations from the text itself;
``beams.forest.ForestDrafter`` beam-samples ``dsbd``'s draft forest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from specviz.algorithms.step_types import DraftedTree, Plan
from specviz.core.acceptance import draw_candidates, draw_probs, greedy_candidates
from specviz.core.rules import AcceptanceRule
from specviz.core.trees import ROOT
from specviz.models.tree_forward import CachedLM

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


class NoDrafter:
    """Drafts nothing: every step is one plain target call (``ar``)."""

    fed: tuple[int, ...] = ()

    def propose(self, dec: "Decoder", plan: Plan, rule: Any) -> DraftedTree:
        return DraftedTree()

    def observe(self, dec: "Decoder", tree: DraftedTree, outcome: Any) -> None:
        return None


class ModelDrafter:
    """Draft a template level by level with a draft model (MCSD, arXiv:2401.06706, §3; Sequoia,
    arXiv:2402.12374, Algorithm 1 lines 1-5).

    The root's children are drawn from the draft's warped q after the committed context (one
    ``extend`` call); every new node that has children in the template is then fed to the draft in
    **one** tree-attention call per level and its children are drawn from its own q. Siblings are
    i.i.d. (``rule.replacement``) or drawn without replacement (``fallback``: Sequoia's uniform
    continuation past q's support, Algorithm 1 line 12; else stop at the support, as MCSD), always
    kept in draw order. Leaves are never fed. Nodes that can never be accepted get no subtree: a
    duplicate sibling under replacement (its residual mass is exactly 0) and an EOS token (decoding
    stops there). At temperature 0 siblings are the draft's top-k (or its argmax repeated, with
    replacement) and ``q_draw`` shows the draft's plain softmax.
    """

    def __init__(self, lm: CachedLM, fallback: bool = False):
        self.lm = lm
        self.fallback = fallback

    @property
    def fed(self) -> list[int]:
        return self.lm.fed

    def propose(self, dec: "Decoder", plan: Plan, rule: AcceptanceRule) -> DraftedTree:
        tree, shape = DraftedTree(), plan.shape
        if not len(shape) or not self.lm.can_draft(dec.context(self.lm)):
            return tree
        greedy, replacement = dec.sampling.greedy, rule.replacement
        frontier: list[tuple[int, int]] = [(ROOT, ROOT)]  # (template node, realised node) to expand
        logits = {ROOT: self.lm.extend(dec.context(self.lm))[0]}
        level = 0
        while frontier:
            level += 1
            rows = torch.stack([logits[r] for _, r in frontier])
            qs = dec.probs(rows)
            if greedy:  # the level's candidates and their softmax in one transfer, not one per node
                picks = greedy_candidates(rows, max(len(shape.children[t]) for t, _ in frontier), replacement)
                soft = torch.softmax(rows.float(), -1).gather(-1, torch.tensor(picks, device=rows.device)).tolist()
            fed: list[tuple[int, int]] = []
            for j, ((t, r), q) in enumerate(zip(frontier, qs)):
                slots = shape.children[t]
                tree.parent_q[r] = q
                if greedy:
                    cands, shown = picks[j][: len(slots)], soft[j][: len(slots)]
                else:
                    cands = draw_candidates(q, len(slots), replacement, dec.generator, self.fallback)
                    shown = draw_probs(q, cands, replacement)
                seen: set[int] = set()
                for slot, tok, qd in zip(slots, cands, shown):
                    dup = tok in seen
                    seen.add(tok)
                    i = tree.add(tok, r, slot, qd, dup)
                    if plan.go_on(tree, i) and shape.children[slot] and not dup and not dec.is_eos(tok):
                        fed.append((slot, i))
            kept = set(plan.keep(tree, level, [i for _, i in fed]))
            fed = [(t, i) for t, i in fed if i in kept]
            if not fed:
                break
            out = self.lm.forward(
                [tree.tokens[i] for _, i in fed], [tree.draft_index.get(tree.parents[i], ROOT) for _, i in fed]
            )
            base = len(self.lm.tree) - len(fed)
            for j, (_, i) in enumerate(fed):
                tree.draft_index[i] = base + j
                logits[i] = out[j]
            frontier = fed
        return tree

    def observe(self, dec: "Decoder", tree: DraftedTree, outcome: Any) -> None:
        """Keep the accepted path in the draft cache, drop the rest."""
        self.lm.commit([tree.draft_index[v] for v in outcome.path if v in tree.draft_index])


class DynamicTreeDrafter:
    """EAGLE-2's dynamic draft tree (Li et al. 2024, arXiv 2406.16858, §4.1-4.2: expand, then rerank)
    from a draft model, rebuilt every step; it makes its own shape, at most ``shape.depth`` levels deep
    (the template is a chain: the depth bound, cut to the budget by the engine).

    A node's value is its cumulative draft probability ``c(v)``, the product of q along its path (q the
    draft's warped law; its plain softmax at temperature 0, where the warped law is one-hot).
    **Expand**: the root's children are the ``topk`` likeliest tokens of q after the context; at every
    next level the ``topk`` nodes of the level just drafted with the highest c (never an EOS) are fed
    to the draft in one tree-attention call and each gets its ``topk`` likeliest tokens (q > 0) as
    children. A node already outside the ``nodes`` best so far is not expanded: its children's c is
    at most its own, so none of them could be kept. **Rerank**: the ``nodes`` drafted nodes with the
    highest c (ties: the earlier drafted, so a parent always comes before its child and the kept set
    is a tree) are the step's tree, breadth first, siblings by descending q.

    Nothing is drawn: the tree is a function of the context, so each sibling's proposal law is a point
    mass and the tree is verified by ``core.rules.PointMass`` (``ExactMatch`` at temperature 0);
    ``parent_q`` holds the draft's q at each parent for the views only, ``q_draw`` each node's q (the
    factor c multiplies in). The plan's ``go_on`` and ``keep`` are not asked: the tree is EAGLE-2's
    own policy.
    """

    def __init__(self, lm: CachedLM, nodes: int, topk: int):
        self.lm, self.nodes, self.topk = lm, nodes, topk

    @property
    def fed(self) -> list[int]:
        return self.lm.fed

    def propose(self, dec: "Decoder", plan: Plan, rule: AcceptanceRule) -> DraftedTree:
        shape = plan.shape
        if not len(shape) or not self.lm.can_draft(dec.context(self.lm)):
            return DraftedTree()
        nodes: list[tuple[int, int, float, float, int]] = []  # drafted: (token, parent, q, c, level)
        laws: dict[int, torch.Tensor] = {}  # expanded node (ROOT included) -> the draft's warped q there
        pending: dict[int, int] = {}  # fed node -> its draft pending index
        by_value = lambda i: (-nodes[i][3], i)  # noqa: E731 - highest c first, earlier drafted on ties
        frontier = [ROOT]
        rows = self.lm.extend(dec.context(self.lm))[:1]
        for level in range(1, shape.depth + 1):
            qs = dec.probs(rows)
            rank = torch.softmax(rows.float(), -1).cpu() if dec.sampling.greedy else qs
            values, ids = torch.topk(rank, min(self.topk, rank.shape[-1]), dim=-1)
            new: list[int] = []
            for j, v in enumerate(frontier):  # expand: the topk likeliest children of each frontier node
                laws[v] = qs[j]
                base = 1.0 if v == ROOT else nodes[v][3]
                for qx, t in zip(values[j].tolist(), ids[j].tolist()):
                    if qx > 0.0:
                        new.append(len(nodes))
                        nodes.append((t, v, qx, base * qx, level))
            if level == shape.depth:
                break
            best = set(sorted(range(len(nodes)), key=by_value)[: self.nodes])
            grow = (i for i in new if i in best and not dec.is_eos(nodes[i][0]))
            frontier = sorted(grow, key=by_value)[: self.topk]
            if not frontier:
                break
            rows = self.lm.forward([nodes[i][0] for i in frontier], [pending.get(nodes[i][1], ROOT) for i in frontier])
            first = len(self.lm.tree) - len(frontier)
            pending.update((i, first + j) for j, i in enumerate(frontier))
        kept = sorted(range(len(nodes)), key=by_value)[: self.nodes]  # rerank: a tree (parents rank first)
        tree, new_id = DraftedTree(), {ROOT: ROOT}
        for level in sorted({nodes[i][4] for i in kept}):  # breadth first, siblings in drafted (descending q) order
            for i in sorted((i for i in kept if nodes[i][4] == level), key=lambda i: (new_id[nodes[i][1]], i)):
                token, parent, qx = nodes[i][:3]
                new_id[i] = tree.add(token, new_id[parent], i, qx)
                tree.parent_q.setdefault(new_id[parent], laws[parent])
                if i in pending:
                    tree.draft_index[new_id[i]] = pending[i]
        return tree

    def observe(self, dec: "Decoder", tree: DraftedTree, outcome: Any) -> None:
        """Keep the accepted path in the draft cache (its fed prefix), drop the rest."""
        self.lm.commit([tree.draft_index[v] for v in outcome.path if v in tree.draft_index])
