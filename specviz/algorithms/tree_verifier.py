"""``TreeVerifier``: a drafted tree verified in one target call and walked from the root.

The target scores context + all nodes in one call (4D ancestor mask, position = prefix length +
depth; ``CachedLM.extend``): row 0 is p after the context, row 1 + i p after node i.

**Walk** (``walk``): from the root, the current node's children are tested in draw order by the
rule's ``schedule`` (``core.rules``); an accepted child becomes the current node with its own
untouched p (MCSD, arXiv:2401.06706, Algorithm 2: the residual is per node); when all are rejected the
output is drawn from the final residual (``resampled``), at a node without children from its p
(``bonus``). Temperature 0 uses the exact-match rule. The walk returns a ``TreeOutcome`` (every
test, every position reached, the accepted path, the extra token) and writes nothing.

**Record** (``record_tree``), a pure function of the outcome: per node ``q`` (the proposal law's probability the
rule used: the draft's q at draw time, or 1 under a rule whose siblings are chosen, ``core.rules.CHOSEN``,
with the draft's own probability, its plain softmax at temperature 0, as ``q_draft``), ``p`` (target probability at the
parent), ``accept_prob`` (given all earlier siblings were rejected), ``p_residual`` (the residual target
probability ``accept_prob`` was computed against), ``draw`` (the uniform, None when the outcome was
certain), ``status`` and ``root`` (the beam); per position reached a ``PositionRecord``
(``positions.position_records``, top ``Decoder.record_top_k`` tokens; none when it is 0); ``tv`` per
tested position; the rule's ``record()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from specviz.algorithms.decoder import VerifyRows
from specviz.algorithms.positions import Site, position_records
from specviz.algorithms.step_types import Commit, DraftedTree, Plan, Recorded
from specviz.core.acceptance import first_accepted
from specviz.core.rules import CHOSEN, AcceptanceRule, rule_for
from specviz.core.sampling import tv_distance
from specviz.core.trees import ROOT
from specviz.trace import TreeNode

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


@dataclass(frozen=True)
class Test:
    """One child the rule tested: its ``node``, ``accept_prob`` (given the earlier siblings were
    rejected), the uniform ``draw`` (None when certain) and ``p_residual``, the residual target
    probability of its token (None: no residual was formed, it is the node's p)."""

    node: int
    accept_prob: float
    draw: float | None
    p_residual: float | None


@dataclass(frozen=True)
class Visit:
    """A position the walk reached: below ``node`` (``ROOT``: the committed context), with the target
    law ``p`` there, the draft law ``q`` its children were drawn from (None at a leaf), the ``tested``
    tokens in draw order, the token ``produced`` there, the ``final_residual`` drawn from when every
    child was rejected and ``tv`` = TV(p, q) (None at a leaf)."""

    node: int
    p: torch.Tensor
    q: torch.Tensor | None
    tested: list[int]
    produced: int
    final_residual: torch.Tensor | None = None
    tv: float | None = None


@dataclass(frozen=True)
class TreeOutcome:
    """What the walk decided: ``p_nodes[i]`` the target probability of node i's token at its parent,
    the ``tests`` and ``visits`` in walk order, the accepted ``path`` (node ids) and the ``extra``
    token drawn where the walk stopped, of ``kind`` ``resampled`` or ``bonus``."""

    p_nodes: list[float]
    tests: list[Test]
    visits: list[Visit]
    path: list[int]
    extra: int
    kind: str

    @property
    def stop(self) -> int:
        """The node the walk stopped at (``ROOT`` if nothing was accepted)."""
        return self.path[-1] if self.path else ROOT


def walk(dec: "Decoder", tree: DraftedTree, ps: VerifyRows, rule: AcceptanceRule) -> TreeOutcome:
    """Walk ``tree`` with ``rule`` (module docstring); the only draws are the rule's uniforms and the
    extra token."""
    p_nodes = ps.at([0 if par == ROOT else par + 1 for par in tree.parents], tree.tokens)
    tests: list[Test] = []
    visits: list[Visit] = []
    node, path = ROOT, []
    while True:
        p = ps.row(0 if node == ROOT else node + 1)
        kids = tree.children.get(node, [])
        if not kids:
            extra, kind = dec.sample(p), "bonus"
            visits.append(Visit(node, p, None, [], extra))
            break
        q = tree.parent_q[node]
        tv = tv_distance(p, q)
        cands = [tree.tokens[c] for c in kids]
        sched = rule.schedule(p, q, cands)
        hit, draws = first_accepted(sched.accept_probs, dec.uniform)
        tests += [
            Test(kids[j], sched.accept_probs[j], u, float(sched.residuals[j][cands[j]]) if sched.residuals else None)
            for j, u in enumerate(draws)
        ]
        if hit is None:
            extra, kind = dec.sample(sched.final_residual), "resampled"
            visits.append(Visit(node, p, q, cands[: len(draws)], extra, sched.final_residual, tv))
            break
        visits.append(Visit(node, p, q, cands[: len(draws)], cands[hit], None, tv))
        node = kids[hit]
        path.append(node)
    return TreeOutcome(p_nodes, tests, visits, path, extra, kind)


def record_tree(dec: "Decoder", tree: DraftedTree, out: TreeOutcome, rule: AcceptanceRule) -> Recorded:
    """The step's forest, positions, TV and rule from the walk's outcome (module docstring)."""
    chosen = rule.record()["name"] in CHOSEN  # q is the point mass the rule used; the draft's own q aside
    forest = [
        TreeNode(
            i,
            None if par == ROOT else par,
            tree.level(i) - 1,
            tok,
            dec.text(tok),
            q=1.0 if chosen else tree.q_draw[i],
            p=out.p_nodes[i],
            root=tree.root[i],
            q_draft=tree.q_draw[i] if chosen and tree.q_draw[i] != 1.0 else None,
        )
        for i, (tok, par) in enumerate(zip(tree.tokens, tree.parents))
    ]
    for t in out.tests:
        n = forest[t.node]
        n.accept_prob, n.draw, n.status = t.accept_prob, t.draw, "rejected"
        n.p_residual = n.p if t.p_residual is None else t.p_residual
    for v in out.path:
        forest[v].status = "accepted"
    beam = lambda node: 0 if node == ROOT else tree.root[node]  # noqa: E731
    sites = [
        Site(
            parent=None if v.node == ROOT else v.node,
            p=v.p,
            q=v.q,
            tested=v.tested,
            produced=v.produced,
            final_residual=v.final_residual,
            root=beam(v.node),
            mass=v.tv,
        )
        for v in out.visits
    ]
    k = dec.record_top_k
    positions = position_records(sites, k, dec.text) if k else []
    stop, last = out.stop, out.visits[-1]
    forest.append(
        TreeNode(
            len(forest),
            None if stop == ROOT else stop,
            len(out.path),
            out.extra,
            dec.text(out.extra),
            p=float(last.p[out.extra]),
            status=out.kind,
            root=beam(stop),
        )
    )
    return Recorded(forest, positions, rule.record(), [v.tv for v in out.visits if v.tv is not None])


class TreeVerifier:
    """The tree walk as a ``step_types.Verifier``: ``rule`` at temperature > 0, exact match at 0."""

    def __init__(self, rule: AcceptanceRule):
        self._rule = rule

    def rule(self, dec: "Decoder") -> AcceptanceRule:
        return rule_for(self._rule, dec.sampling.greedy)

    def lossless(self, dec: "Decoder") -> bool:
        return self.rule(dec).lossless

    def budget(self, dec: "Decoder") -> int:
        """Draft levels allowed: one token of the budget is always the target's own."""
        return max(dec.remaining - 1, 0)

    def score(self, dec: "Decoder", tree: DraftedTree) -> VerifyRows:
        return dec.verify_rows(dec.target.extend(dec.context(dec.target), tree.tokens, tree.parents))

    def decide(self, dec: "Decoder", tree: DraftedTree, rows: VerifyRows, plan: Plan) -> TreeOutcome:
        return walk(dec, tree, rows, self.rule(dec))

    def commit(self, dec: "Decoder", tree: DraftedTree, out: TreeOutcome) -> Commit:
        """Keep the accepted path in the target cache; commit its tokens and the extra one."""
        dec.target.commit(out.path)
        return Commit([(tree.tokens[v], "draft", v) for v in out.path] + [(out.extra, out.kind, len(tree))])

    def record(self, dec: "Decoder", tree: DraftedTree, out: TreeOutcome) -> Recorded:
        return record_tree(dec, tree, out, self.rule(dec))
