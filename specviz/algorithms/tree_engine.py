"""One tree-speculation step, shared by ``mcsd``, ``specinfer`` and ``sequoia``.

1. **Draft level by level** (MCSD spec §3.5; Sequoia spec §3.3): the root's children are drawn from
   the draft's warped q after the committed context (one ``extend`` call), then every new node that
   has children in the template is fed to the draft in **one** tree-attention call per level and its
   children are drawn from its own q. Siblings are i.i.d. (``replacement=True``) or drawn without
   replacement, always kept in draw order. Leaves are never fed to the draft. Nodes that can never be
   accepted get no subtree: a duplicate sibling under replacement (its residual mass is exactly 0,
   MCSD §3.2) and an EOS token (decoding stops there). Neither changes the output law.
2. **Verify in one target call**: context + all nodes (BFS order), 4D ancestor mask, position =
   prefix length + depth (``CachedLM.extend``); row 0 is p after the context, row 1 + i after node i.
3. **Walk** from the root: the current node's children are tested in draw order by the multi-candidate
   rule (``core.acceptance``); an accepted child becomes the current node with its own untouched p;
   when all are rejected the output is drawn from the final residual (``resampled``), at a node
   without children from its p (``bonus``). Temperature 0 uses the exact-match rule.
4. **Commit** the accepted path in both caches; the new token is fed next step.

Trace: node ids are BFS indices (= target pending indices); ``depth`` is 0 for the root's children
(as in ``sd``); ``q`` is the draft probability at draw time (renormalised without earlier siblings
when drawn without replacement; at temperature 0, where the warped q is one-hot, the draft's plain
softmax for display); ``p`` the target probability at the parent; ``accept_prob`` the rule's
acceptance probability given all earlier siblings were rejected (residual over renormalised q);
``draw`` the uniform compared with it (None when the outcome was certain, 0 or 1).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import torch

from specviz.algorithms.decoder import Decoder
from specviz.core.acceptance import (draw_candidates, draw_probs, first_accepted, greedy_candidates,
                                     greedy_schedule, sibling_schedule)
from specviz.core.sampling import tv_distance
from specviz.core.trees import ROOT, TreeShape
from specviz.trace import StepRecord, TreeNode


@dataclass
class DraftedTree:
    """The realised tree of one step (a sub-tree of the template, BFS order, siblings in draw order)."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    template: list[int] = field(default_factory=list)       # template node each node realises
    q_draw: list[float] = field(default_factory=list)
    duplicate: list[bool] = field(default_factory=list)
    children: dict[int, list[int]] = field(default_factory=lambda: {ROOT: []})
    parent_q: dict[int, torch.Tensor] = field(default_factory=dict)  # warped q the children were drawn from
    draft_index: dict[int, int] = field(default_factory=dict)        # node -> draft pending index

    def add(self, token: int, parent: int, template: int, q: float, duplicate: bool) -> int:
        i = len(self.tokens)
        self.tokens.append(token)
        self.parents.append(parent)
        self.template.append(template)
        self.q_draw.append(q)
        self.duplicate.append(duplicate)
        self.children[i] = []
        self.children[parent].append(i)
        return i

    def rank(self, node: int) -> int:
        """1-based draw order of ``node`` among its siblings."""
        return self.children[self.parents[node]].index(node) + 1

    def level(self, node: int) -> int:
        lv = 0
        while node != ROOT:
            node, lv = self.parents[node], lv + 1
        return lv


@dataclass
class TreeStep:
    """What one step did: its record, the realised tree, the accepted path and the template used."""

    step: StepRecord
    tree: DraftedTree
    path: list[int]
    shape: TreeShape
    produced: int


def draft_tree(dec: Decoder, shape: TreeShape, replacement: bool, fallback: bool) -> DraftedTree:
    """Draft ``shape`` level by level (one draft call per level with children); see module docstring."""
    tree = DraftedTree()
    if not len(shape):
        return tree
    greedy = dec.sampling.greedy
    frontier: list[tuple[int, int]] = [(ROOT, ROOT)]  # (template node, realised node) to expand
    logits = {ROOT: dec.draft.extend(dec.context(dec.draft))[0]}
    while frontier:
        rows = torch.stack([logits[r] for _, r in frontier])
        qs = dec.probs(rows)
        fed: list[tuple[int, int]] = []
        for (t, r), q, lg in zip(frontier, qs, rows):
            slots = shape.children[t]
            tree.parent_q[r] = q
            if greedy:
                cands = greedy_candidates(lg, len(slots), replacement)
                shown = [float(x) for x in torch.softmax(lg.float().cpu(), -1)[cands]]
            else:
                cands = draw_candidates(q, len(slots), replacement, dec.generator, fallback)
                shown = draw_probs(q, cands, replacement)
            seen: set[int] = set()
            for slot, tok, qd in zip(slots, cands, shown):
                dup = tok in seen
                seen.add(tok)
                i = tree.add(tok, r, slot, qd, dup)
                if shape.children[slot] and not dup and not dec.is_eos(tok):
                    fed.append((slot, i))
        if not fed:
            break
        out = dec.draft.forward([tree.tokens[i] for _, i in fed],
                                [tree.draft_index.get(tree.parents[i], ROOT) for _, i in fed])
        base = len(dec.draft.tree) - len(fed)
        for j, (_, i) in enumerate(fed):
            tree.draft_index[i] = base + j
            logits[i] = out[j]
        frontier = fed
    return tree


def verify_tree(dec: Decoder, step: StepRecord, tree: DraftedTree, ps: torch.Tensor,
                replacement: bool) -> tuple[list[tuple[int, str, int | None]], list[int]]:
    """Walk the tree with the multi-candidate rule; fill ``step.forest``/``step.tv``; return the
    produced ``(token, kind, node_id)`` list and the accepted path (node ids)."""

    def row(node: int) -> torch.Tensor:
        return ps[0 if node == ROOT else node + 1]

    step.forest = [TreeNode(i, None if par == ROOT else par, tree.level(i) - 1, tok, dec.text(tok),
                            q=tree.q_draw[i], p=float(row(par)[tok]))
                   for i, (tok, par) in enumerate(zip(tree.tokens, tree.parents))]
    step.tv = []
    node, path = ROOT, []
    while True:
        p = row(node)
        kids = tree.children.get(node, [])
        if not kids:
            extra, kind = dec.sample(p), "bonus"
            break
        q = tree.parent_q[node]
        step.tv.append(tv_distance(p, q))
        cands = [tree.tokens[c] for c in kids]
        sched = greedy_schedule(p, cands) if dec.sampling.greedy else sibling_schedule(p, q, cands, replacement)
        hit, draws = first_accepted(sched.accept_probs, dec.uniform)
        for j, u in enumerate(draws):
            n = step.forest[kids[j]]
            n.accept_prob, n.draw, n.status = sched.accept_probs[j], u, "rejected"
        if hit is None:
            extra, kind = dec.sample(sched.final_residual), "resampled"
            break
        node = kids[hit]
        step.forest[node].status = "accepted"
        path.append(node)
    extra_id = len(step.forest)
    step.forest.append(TreeNode(extra_id, None if node == ROOT else node, len(path), extra, dec.text(extra),
                                p=float(p[extra]), status=kind))
    produced = [(tree.tokens[v], "draft", v) for v in path] + [(extra, kind, extra_id)]
    return produced, path


def tree_step(dec: Decoder, index: int, shape: TreeShape, replacement: bool, fallback: bool) -> TreeStep:
    """One draft + verify + commit step on ``shape`` cut to the tokens still allowed."""
    step = dec.new_step(index)
    shape = shape.truncate(max(dec.remaining - 1, 0))
    tree = DraftedTree()
    if len(shape):
        calls = dec.draft.calls
        with dec.timed("draft_ms"):
            tree = draft_tree(dec, shape, replacement, fallback)
        step.draft_calls = dec.draft.calls - calls
    with dec.timed("verify_ms"):
        ps = dec.probs(dec.target.extend(dec.context(dec.target), tree.tokens, tree.parents))
    produced, path = verify_tree(dec, step, tree, ps, replacement)
    dec.target.commit(path)
    if dec.draft is not None:
        dec.draft.commit([tree.draft_index[v] for v in path if v in tree.draft_index])
    dec.emit(step, produced)
    step.timings = dec.timings
    return TreeStep(step, tree, path, shape, len(produced))


def run_tree(dec: Decoder, shape_for: Callable[[Decoder], TreeShape], replacement: bool, fallback: bool,
             annotate: Callable[[TreeStep], None] | None = None) -> Iterator[StepRecord]:
    """Yield one ``StepRecord`` per target call until the decoder finishes; ``shape_for(dec)`` gives
    each step's template and ``annotate`` may add controller state before the step is yielded."""
    index = 0
    while not dec.finished:
        ts = tree_step(dec, index, shape_for(dec), replacement, fallback)
        if annotate is not None:
            annotate(ts)
        yield ts.step
        index += 1
