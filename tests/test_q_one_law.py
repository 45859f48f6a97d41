"""Issue 35 point 1: every view that says "q" shows the law the acceptance rule used.

At temperature 0 the warped draft law is one-hot, so a drafted node's q is 1 (the point mass exact match
verified against) and the draft's plain softmax is recorded beside it as ``q_draft``; the tree's hover,
the token titles and the distribution view's q bars then say the same thing. At temperature 1 the
draft's q is the law (``q_draft`` is not recorded)."""

from __future__ import annotations

import pytest

import specviz
from specviz.viz.distribution import distribution_figure
from specviz.viz.tokens import tokens_html
from specviz.viz.tree import node_hover
from tests.tiny import tiny_pair


@pytest.fixture(scope="module")
def pair():
    return tiny_pair(vocab=16, seed=3)


def _drafted(trace):
    return [(s, n) for s in trace.steps for n in s.forest if n.status in ("accepted", "rejected", "not_reached")]


@pytest.mark.parametrize("algorithm, params", [("sd", {"gamma": 3}), ("specinfer", {}), ("dyntree", {})])
def test_greedy_node_q_is_the_point_mass_and_the_softmax_is_named(pair, algorithm, params):
    trace = specviz.decode(pair, algorithm, [1, 2, 3], max_new_tokens=12, temperature=0.0, **params)
    drafted = _drafted(trace)
    assert drafted
    assert all(n.q == 1.0 for _, n in drafted), "a greedy proposal is a point mass: q = 1"
    raw = [n.q_draft for _, n in drafted]
    assert all(r is not None and 0.0 < r < 1.0 for r in raw), "the draft's softmax is kept, under its own name"
    step, node = drafted[0]
    hover = node_hover(node)
    assert "q = 1" in hover and "draft's own = " in hover and "q draft = " not in hover


def test_greedy_tree_hover_and_distribution_view_agree_on_q(pair):
    trace = specviz.decode(pair, "sd", [4, 5], max_new_tokens=16, temperature=0.0, gamma=3)
    checked = 0
    for step in trace.steps:
        first = next((n for n in step.forest if n.parent is None and n.status in ("accepted", "rejected")), None)
        if first is None:
            continue
        fig = distribution_figure(step, first.id)
        bar = next(t for t in fig.data if t.meta == "q")
        assert "one-hot at T = 0" in bar.name
        pos = next(p for p in step.positions if p.parent is None)
        assert pos.q[pos.ids.index(first.token_id)] == pytest.approx(first.q) == 1.0
        checked += 1
    assert checked


def test_sampled_node_q_is_the_drafts_law_without_a_second_name(pair):
    trace = specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=12, temperature=1.0, seed=5, gamma=3)
    drafted = _drafted(trace)
    assert drafted and all(n.q_draft is None for _, n in drafted)
    assert any(n.q < 1.0 for _, n in drafted)
    step, node = next((s, n) for s, n in drafted if n.parent is None)
    pos = next(p for p in step.positions if p.parent is None)
    assert pos.q[pos.ids.index(node.token_id)] == pytest.approx(node.q, rel=1e-4)
    assert "q draft = " in node_hover(node)


def test_token_titles_name_the_drafts_own_probability(pair):
    trace = specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=8, temperature=0.0, gamma=3)
    html = tokens_html(trace)
    assert "q=1" in html
    assert "draft's own probability=" in html.replace("&#x27;", "'").replace("&#39;", "'")


def test_a_trace_with_q_draft_round_trips_and_a_bad_one_is_refused(pair):
    trace = specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=8, temperature=0.0, gamma=3)
    again = specviz.RunTrace.from_json(trace.to_json())
    assert [n.q_draft for s in again.steps for n in s.forest] == [n.q_draft for s in trace.steps for n in s.forest]
    bad = trace.to_dict()
    node = next(n for s in bad["steps"] for n in s["forest"] if n.get("q_draft") is not None)
    node["q_draft"] = 1.5
    with pytest.raises(specviz.SpecvizError, match="q_draft"):
        specviz.RunTrace.from_dict(bad)
