"""The step narrative, the distribution view and the node explanations (tooltips).

Steps with per-position data are built here by running the library's own acceptance rule
(``core.acceptance.sibling_schedule`` / ``first_accepted``) on hand-chosen p, q and uniform draws,
so every number in them is what a real run with those distributions and draws would record; the
real-trace tests at the end use tiny real models.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import plotly.graph_objects as go
import pytest
import torch

import specviz
from specviz.core.acceptance import first_accepted, sibling_schedule
from specviz.core.sampling import residual
from specviz.trace import CommittedToken, PositionRecord, RunTrace, StepRecord, TreeNode
from specviz.viz.distribution import NO_POSITIONS, distribution_figure
from specviz.viz.explain import StepIndex, not_reached_reason
from specviz.viz.narrative import informative_step, step_narrative
from specviz.viz.tree import tree_figure

TEXTS = ["a", " the", "\n", "x", "<b>", "cat", "dog", "ok"]


@dataclass
class Level:
    """One verified position: distributions over a vocabulary of 8, drafted candidates in draw
    order, and the uniform draws the run would take (one per test whose a is not 0 or 1)."""

    p: list[float]
    q: list[float]
    candidates: list[int]
    draws: list[float]


def build_step(levels: list[Level], replacement: bool = True, index: int = 0, v2: bool = True,
               extra_children: dict[int, list[int]] | None = None) -> StepRecord:
    """A step whose nodes follow the multi-candidate rule exactly. ``extra_children``: level ->
    tokens drafted under that level's *last* candidate (to get nodes below rejected/skipped ones)."""
    step = StepRecord(index, 0, target_calls=1, draft_calls=len(levels))
    parent: int | None = None
    depth = 0
    for li, lv in enumerate(levels):
        p, q = torch.tensor(lv.p), torch.tensor(lv.q)
        p, q = p / p.sum(), q / q.sum()
        sched = sibling_schedule(p, q, lv.candidates, replacement)
        it = iter(lv.draws)
        hit, draws = first_accepted(sched.accept_probs, lambda: next(it))
        ids = [int(i) for i in torch.argsort(p, descending=True) if p[i] > 0 or q[i] > 0]
        res = residual(p, q)
        kids = []
        for j, tok in enumerate(lv.candidates):
            n = TreeNode(len(step.forest), parent, depth, tok, TEXTS[tok], q=sched.draft_probs[j], p=float(p[tok]))
            if j < len(draws):
                n.accept_prob, n.draw = sched.accept_probs[j], draws[j]
                n.status = "accepted" if j == hit else "rejected"
                if v2:
                    n.p_residual = float(sched.residuals[j][tok])
            step.forest.append(n)
            kids.append(n)
        for tok in (extra_children or {}).get(li, []):
            step.forest.append(TreeNode(len(step.forest), kids[-1].id, depth + 1, tok, TEXTS[tok], q=0.3, p=0.2))
        pos = PositionRecord(parent, ids, [float(p[i]) for i in ids], [float(q[i]) for i in ids],
                             [float(res[i]) for i in ids], float(torch.clamp(p - q, min=0).sum()))
        if hit is None:
            final = sched.final_residual
            pos.final_residual = [float(final[i]) for i in ids]
            tok = int(final.argmax())
            step.forest.append(TreeNode(len(step.forest), parent, depth, tok, TEXTS[tok], p=float(p[tok]),
                                        status="resampled"))
            if v2:
                step.positions.append(pos)
            break
        if v2:
            step.positions.append(pos)
        parent, depth = kids[hit].id, depth + 1
    else:
        step.forest.append(TreeNode(len(step.forest), parent, depth, 7, TEXTS[7], p=0.5, status="bonus"))
        if v2:
            step.positions.append(PositionRecord(parent, [7, 0], [0.5, 0.5]))
    by_id = {n.id: n for n in step.forest}
    path = [n for n in step.forest if n.status in ("accepted", "resampled", "bonus")]
    for n in path:
        kind = {"accepted": "draft"}.get(n.status, n.status)
        step.committed.append(CommittedToken(n.token_id, n.token_text, kind, n.id))
    assert all(by_id[c.node_id] for c in step.committed)
    return step


P = [0.05, 0.4, 0.3, 0.1, 0.1, 0.05, 0.0, 0.0]
Q = [0.5, 0.1, 0.1, 0.2, 0.05, 0.05, 0.0, 0.0]


def all_rejected_step(v2: bool = True) -> StepRecord:
    """Two i.i.d. candidates at the root, both rejected: 'a' by its draw, 'x' with a = 0 after the residual."""
    return build_step([Level(P, Q, [0, 3], [0.62])], v2=v2, extra_children={0: [5]})


def skipped_sibling_step(v2: bool = True) -> StepRecord:
    """Root: 'a' rejected, ' the' accepted, 'cat' never tested; then '\\n' accepted, then 'x' rejected."""
    return build_step([Level(P, Q, [0, 1, 5], [0.62, 0.3]),
                       Level([0.1, 0.1, 0.6, 0.1, 0.1, 0, 0, 0], [0.1, 0.1, 0.5, 0.2, 0.1, 0, 0, 0], [2], []),
                       Level([0.3, 0.3, 0.1, 0.00004, 0.3, 0, 0, 0], [0.2, 0.2, 0.2, 0.3, 0.1, 0, 0, 0], [3], [0.9])],
                      v2=v2, extra_children={0: [6, 4]})


def validated(fig: go.Figure) -> go.Figure:
    return go.Figure(fig.to_dict())


# ---------------------------------------------------------------- tooltips (tree hover, token titles)

def hover_of(step: StepRecord, node_id: int) -> str:
    for t in tree_figure(step).data:
        if t.customdata is not None and t.hovertext is not None and node_id in list(t.customdata):
            return t.hovertext[list(t.customdata).index(node_id)]
    raise AssertionError(node_id)


def test_sibling_skipped_after_accepted_sibling_says_so():
    step = skipped_sibling_step()
    skipped = next(n for n in step.forest if n.token_text == "cat")
    assert skipped.status == "not_reached"
    hover = hover_of(step, skipped.id)
    assert "earlier sibling" in hover and "was accepted" in hover and '" the"' in hover
    assert "rejected" not in hover
    # its children are explained by the skipped ancestor, a rejected node's children by the rejection
    below_skipped = [n for n in step.forest if n.parent == skipped.id]
    assert below_skipped and all("never tested" in not_reached_reason(n, StepIndex(step)) and
                                 '"cat"' in not_reached_reason(n, StepIndex(step)) for n in below_skipped)
    chain = all_rejected_step()
    below_rejected = next(n for n in chain.forest if n.status == "not_reached")
    assert "was rejected" in hover_of(chain, below_rejected.id)


def test_second_candidate_shows_residual_p_next_to_a_and_original_p():
    step = all_rejected_step()
    second = step.forest[1]
    assert second.token_id == 3 and second.p_residual == 0.0 and second.p == pytest.approx(0.1)
    hover = hover_of(step, second.id)
    assert re.search(r"p target = 0\.1\b.*original", hover)
    assert "p residual = 0  (a uses this; after 1 earlier sibling rejected)" in hover
    assert "a = 0" in hover
    first = hover_of(step, step.forest[0].id)
    assert "first candidate" in first and "u = 0.62 ≥ a = 0.1" in first
    # a v1 trace has no p_residual: say the residual was used without inventing a value
    old = hover_of(all_rejected_step(v2=False), 1)
    assert "not recorded" in old and "p residual = " not in old


def test_token_titles_keep_small_numbers():
    step = skipped_sibling_step()
    trace = RunTrace("mcsd", {}, {}, {}, 0, [0], "p", output_ids=[c.token_id for c in step.committed],
                     steps=[step])
    html = specviz.viz.tokens_html(trace)
    rejected_x = next(n for n in step.forest if n.token_id == 3 and n.status == "rejected")
    assert rejected_x.p == pytest.approx(4e-5, rel=1e-3)
    assert "p=4e-5" in html and "0.000" not in html
    # ' the' was accepted against the residual left by the rejected 'a': 0.3 / 0.55, not its p = 0.4
    assert "p=0.4 · p_res=0.545" in html
    assert "a=0.1 · u=0.62" in html


def test_lossy_divergence_is_not_flagged_as_a_bug():
    step = skipped_sibling_step()
    trace = RunTrace("biased_sd", {}, {}, {"temperature": 0.0}, 0, [0], "p",
                     output_ids=[c.token_id for c in step.committed], steps=[step], lossless=False)
    lossy = specviz.viz.tokens_html(trace, diverge_at=1)
    assert "sv-diverge-lossy" in lossy and "not lossless by design" in lossy and "sv-diverge " not in lossy
    trace.lossless = True
    assert 'sv-diverge"' in specviz.viz.tokens_html(trace, diverge_at=1)
