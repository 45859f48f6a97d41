"""The engine every speculative algorithm runs on: one drafter, one controller, one acceptance rule.

Per step (``engine_step``):

1. **Plan**: the controller's template (``Controller.plan``), cut to the tokens still allowed.
2. **Draft**: ``Drafter.propose`` realises (part of) it as a ``DraftedTree`` (BFS order, siblings in
   draw order, each group drawn as the rule requires, ``parent_q`` the law it was drawn from).
3. **Verify in one target call**: context + all nodes, 4D ancestor mask, position = prefix length +
   depth (``CachedLM.extend``); row 0 is p after the context, row 1 + i after node i.
4. **Walk** from the root: the current node's children are tested in draw order by the rule's
   ``schedule`` (``core.rules``); an accepted child becomes the current node with its own untouched p
   (MCSD, arXiv:2401.06706, Algorithm 2: the residual is per node); when all are rejected the output
   is drawn from the final residual (``resampled``), at a node without children from its p
   (``bonus``). Temperature 0 uses the exact-match rule.
5. **Commit** the accepted path in the target cache and tell the drafter (``Drafter.observe``); the
   controller learns from the step (``Controller.update``) and its ``state`` becomes
   ``StepRecord.controller``.

Counting is by construction: ``target_calls`` and ``draft_calls`` are the target cache's and the
drafter's forward calls over the step, read from their ``fed`` logs with the tokens each call fed
(``target_fed``, ``draft_fed``). The trace gets, per node, ``q`` (draft
probability at draw time; at temperature 0 the draft's plain softmax), ``p`` (target probability at the
parent), ``accept_prob`` (given all earlier siblings were rejected), ``p_residual`` (the residual
target probability that ``accept_prob`` was computed against), ``draw`` (the uniform, None when the
outcome was certain) and ``root`` (the beam); per verified position a ``PositionRecord``
(``positions.position_records``, top ``Decoder.record_top_k`` tokens; none when it is 0); per step
``rule``, the rule's ``record()`` (exact match at temperature 0), whose words the views state.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from specviz.algorithms.controllers import Controller, StaticShape
from specviz.algorithms.decoder import Decoder, VerifyRows
from specviz.algorithms.drafted_tree import DraftedTree
from specviz.algorithms.drafters import Drafter, ModelDrafter
from specviz.algorithms.positions import Site, position_records
from specviz.core.acceptance import first_accepted
from specviz.core.rules import AcceptanceRule, MultiCandidate, rule_for
from specviz.core.sampling import tv_distance
from specviz.core.trees import ROOT, TreeShape
from specviz.trace import StepRecord, TreeNode


@dataclass
class TreeStep:
    """What one step did: its record, the realised tree, the accepted path and the template used."""

    step: StepRecord
    tree: DraftedTree
    path: list[int]
    shape: TreeShape
    produced: int


def verify_tree(dec: Decoder, step: StepRecord, tree: DraftedTree, ps: VerifyRows,
                rule: AcceptanceRule) -> tuple[list[tuple[int, str, int | None]], list[int]]:
    """Walk the tree with ``rule``; fill ``step.forest``, ``step.tv`` and ``step.positions``; return
    the produced ``(token, kind, node_id)`` list and the accepted path (node ids)."""

    def row(node: int) -> torch.Tensor:
        return ps.row(0 if node == ROOT else node + 1)

    p_nodes = ps.at([0 if par == ROOT else par + 1 for par in tree.parents], tree.tokens)
    step.forest = [TreeNode(i, None if par == ROOT else par, tree.level(i) - 1, tok, dec.text(tok),
                            q=tree.q_draw[i], p=p_nodes[i], root=tree.root[i])
                   for i, (tok, par) in enumerate(zip(tree.tokens, tree.parents))]
    step.tv, sites = [], []
    k = dec.record_top_k
    node, path = ROOT, []
    while True:
        p = row(node)
        parent_id = None if node == ROOT else node
        beam = 0 if node == ROOT else tree.root[node]
        kids = tree.children.get(node, [])
        if not kids:
            extra, kind = dec.sample(p), "bonus"
            sites.append(Site(parent_id, p, None, [], extra, None, beam))
            break
        q = tree.parent_q[node]
        step.tv.append(tv_distance(p, q))
        cands = [tree.tokens[c] for c in kids]
        sched = rule.schedule(p, q, cands)
        hit, draws = first_accepted(sched.accept_probs, dec.uniform)
        for j, u in enumerate(draws):
            n = step.forest[kids[j]]
            n.accept_prob, n.draw, n.status = sched.accept_probs[j], u, "rejected"
            n.p_residual = float(sched.residuals[j][cands[j]]) if sched.residuals else n.p
        if hit is None:
            extra, kind = dec.sample(sched.final_residual), "resampled"
            sites.append(Site(parent_id, p, q, cands[: len(draws)], extra, sched.final_residual, beam, step.tv[-1]))
            break
        sites.append(Site(parent_id, p, q, cands[: len(draws)], cands[hit], None, beam, step.tv[-1]))
        node = kids[hit]
        step.forest[node].status = "accepted"
        path.append(node)
    step.positions = position_records(sites, k, dec.text) if k else []
    extra_id = len(step.forest)
    step.forest.append(TreeNode(extra_id, None if node == ROOT else node, len(path), extra, dec.text(extra),
                                p=float(p[extra]), status=kind, root=0 if node == ROOT else tree.root[node]))
    produced = [(tree.tokens[v], "draft", v) for v in path] + [(extra, kind, extra_id)]
    return produced, path


def engine_step(dec: Decoder, index: int, shape: TreeShape, drafter: Drafter, controller: Controller,
                rule: AcceptanceRule) -> TreeStep:
    """One plan-draft-verify-commit step (see module docstring); ``shape`` is cut to the budget."""
    step = dec.new_step(index)
    shape = shape.truncate(max(dec.remaining - 1, 0))
    rule = rule_for(rule, dec.sampling.greedy)
    target_before, draft_before = dec.target.calls, len(drafter.fed)
    tree = DraftedTree()
    if len(shape):
        with dec.timed("draft_ms"):
            tree = drafter.propose(dec, shape, rule, controller)
    with dec.timed("verify_ms"):
        ps = dec.verify_rows(dec.target.extend(dec.context(dec.target), tree.tokens, tree.parents))
    produced, path = verify_tree(dec, step, tree, ps, rule)
    step.rule = rule.record()
    dec.target.commit(path)
    drafter.observe(dec, tree, path)
    dec.record_calls(step, target_before, drafter.fed, draft_before)
    dec.emit(step, produced)
    step.timings = dec.timings
    return TreeStep(step, tree, path, shape, len(produced))


def run_engine(dec: Decoder, drafter: Drafter, controller: Controller, rule: AcceptanceRule) -> Iterator[StepRecord]:
    """Yield one ``StepRecord`` per step until the decoder finishes; the controller plans each step,
    learns from it and supplies its ``StepRecord.controller``."""
    dec.lossless = rule_for(rule, dec.sampling.greedy).lossless
    index = 0
    while not dec.finished:
        ts = engine_step(dec, index, controller.plan(dec), drafter, controller, rule)
        controller.update(dec, ts)
        ts.step.controller = controller.state(ts)
        yield ts.step
        index += 1


def run_tree(dec: Decoder, shape: TreeShape, replacement: bool, fallback: bool = False) -> Iterator[StepRecord]:
    """A static template drafted by the draft model and verified by the exact multi-candidate rule
    (``sd``, ``mcsd``, ``specinfer``)."""
    yield from run_engine(dec, ModelDrafter(dec.draft, fallback), StaticShape(shape), MultiCandidate(replacement))
