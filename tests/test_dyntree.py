"""``dyntree`` (EAGLE-2's dynamic draft tree, verified as a deterministic proposal) is exact.

* **Law**: the first two generated tokens against the exactly enumerated target law (``tiny.goodness_of_fit``:
  chi-square on the joint law and on the first token), at temperature 1 (each run may generate three
  tokens, so the first step drafts a two-level tree: siblings, a descent into an accepted child, its
  own siblings, the final residual, the bonus) and at 0.7 with top-k and top-p (two tokens: one level,
  children on truncated supports). The draft is a noisy copy of the target, the setting a tree of the
  draft's likeliest tokens is made for (its top children carry much of p, so every branch is taken).
  Power, simulated with these laws (the same target as ``test_trees_exactness.py``): at 2000 runs,
  moving 5% of the probability mass from the second to the first likeliest first token fails the test
  (p < 1e-3) 93% of the time at either temperature, 4% two times in three.
* **Negative control**: the rule without its renormalisation (a later sibling accepted with p(c_i)
  instead of p(c_i) / (1 − p(earlier siblings))) moves 7.7% of the first token's mass (total
  variation); at 1000 runs the first-token test alone flags it with probability > 0.99 (simulated).
  The rule itself is checked exactly, with no sampling, in ``test_acceptance.py``.
* **Greedy**: at temperature 0 the output is ``ar``'s, token for token, on the four full-attention families.
* **The tree**: each step's tree is EAGLE-2's expand-and-rerank, recomputed here from plain full-sequence
  forwards of the draft (no cache, no tree attention), with each node's cumulative probability.
"""

import json

import pytest
import torch
from test_ui_support import read_hover
from tiny import FAMILIES, exact_distribution, goodness_of_fit, sample_counts, tiny_pair

import specviz
from specviz import metrics
from specviz.core import rules
from specviz.core.acceptance import SiblingSchedule
from specviz.core.sampling import SamplingConfig, warp
from specviz.trace import RunTrace
from specviz.trace_check import check_trace
from specviz.viz import controller_figure, tree_figure
from specviz.viz.style import fmt_prob
from specviz.viz.theory import theory_panel

RUNS = 2000
PROMPT = [1, 2, 3]
T1 = SamplingConfig(1.0)
WARPED = SamplingConfig(0.7, top_k=5, top_p=0.9)
TREE = {"nodes": 5, "depth": 3, "topk": 3}


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=8, draft="noisy")


@pytest.mark.slow
@pytest.mark.parametrize("sampling", [T1, WARPED], ids=["t1", "t07-topk-topp"])
def test_first_two_tokens_follow_the_target(pair, sampling):
    law = exact_distribution(pair, PROMPT, 2, sampling)
    counts = sample_counts(pair, "dyntree", PROMPT, 2, RUNS, sampling, budget=3 if sampling is T1 else 2, **TREE)
    assert goodness_of_fit(counts, law) > 1e-3


@pytest.mark.slow
def test_the_test_sees_a_rule_without_renormalisation(pair, monkeypatch):
    def unrenormalised(p, candidates):
        res, out = p.clone(), SiblingSchedule([], [], [], [], p)
        for x in candidates:
            out.accept_probs.append(float(res[x]))  # p(x), not p(x) / (1 - mass of the earlier siblings)
            out.residuals.append(res)
            res = res.clone()
            res[x] = 0.0
        out.final_residual = res / res.sum()
        return out

    monkeypatch.setattr(rules, "point_mass_schedule", unrenormalised)
    law = exact_distribution(pair, PROMPT, 2, T1)
    counts = sample_counts(pair, "dyntree", PROMPT, 2, 1000, T1, budget=3, **TREE)
    assert goodness_of_fit(counts, law) < 1e-3


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_equals_ar(family):
    pair = tiny_pair(family, vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.2)
    taus = []
    for prompt in ([1, 2, 3, 4], [17, 5, 42, 9, 9, 30, 2]):
        ref = specviz.decode(pair, "ar", prompt, max_new_tokens=32, temperature=0).output_ids
        for params in ({"nodes": 12, "depth": 5, "topk": 3}, {}):
            trace = specviz.decode(pair, "dyntree", prompt, max_new_tokens=32, temperature=0, **params)
            assert trace.output_ids == ref, params
            taus.append(trace.metrics["tau"])
    assert max(taus) > 2.0  # deep paths are accepted


def reference_tree(pair, context, sampling, nodes, depth, topk):
    """EAGLE-2's expand and rerank from full-sequence draft forwards: {token path: cumulative q}."""

    def q_after(path):
        logits = pair.draft(torch.tensor([context + list(path)])).logits[0, -1, : pair.vocab_size]
        return torch.softmax(logits.float(), -1) if sampling.greedy else warp(logits, sampling)

    value, order, frontier = {}, [], [()]
    for level in range(1, depth + 1):
        new = []
        for path in frontier:
            values, ids = torch.topk(q_after(path), topk)
            for qx, t in zip(values.tolist(), ids.tolist()):
                if qx > 0:
                    value[path + (t,)] = value.get(path, 1.0) * qx
                    order.append(path + (t,))
                    new.append(path + (t,))
        ranked = sorted(order, key=lambda v: (-value[v], order.index(v)))
        frontier = [v for v in ranked[:nodes] if v in new][:topk]
    return {v: value[v] for v in sorted(order, key=lambda v: (-value[v], order.index(v)))[:nodes]}


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@torch.inference_mode()
def test_each_step_is_eagle2s_tree_with_its_cumulative_probabilities(temperature):
    pair = tiny_pair("llama", vocab=16, draft="noisy", noise=0.5)
    sampling, params = SamplingConfig(temperature), {"nodes": 7, "depth": 3, "topk": 3}
    trace = specviz.decode(pair, "dyntree", PROMPT, max_new_tokens=14, temperature=temperature, seed=2, **params)
    out = trace.output_ids
    for step in trace.steps:
        drafted = [n for n in step.forest if n.status in ("accepted", "rejected", "not_reached")]
        if not drafted:
            continue
        paths = {}
        for n in drafted:
            paths[n.id] = (paths[n.parent] if n.parent is not None else ()) + (n.token_id,)
        left = 14 - step.n_before
        want = reference_tree(
            pair,
            PROMPT + out[: step.n_before],
            sampling,
            params["nodes"],
            min(params["depth"], left - 1),
            params["topk"],
        )
        assert set(paths.values()) == set(want)
        cum = step.controller.to_json()["cum_q"]
        assert cum == pytest.approx([want[paths[n.id]] for n in drafted], rel=1e-4)
        assert [n.depth for n in drafted] == sorted(n.depth for n in drafted)  # breadth first
        assert step.draft_calls <= params["depth"]
    check_trace(trace)
    assert RunTrace.from_json(trace.to_json()).to_dict() == json.loads(trace.to_json())  # export and replay


def test_the_tree_view_shows_each_nodes_cumulative_probability():
    pair = tiny_pair("llama", vocab=16, draft="noisy", noise=0.5)
    trace = specviz.decode(pair, "dyntree", PROMPT, max_new_tokens=8, seed=0, **TREE, temperature=1.0)
    step = trace.steps[0]
    fig = tree_figure(step)
    labels = next(t for t in fig.data if t.meta == "cum_q")
    cum = step.controller.to_json()["cum_q"]
    assert list(labels.text) == [fmt_prob(c) for c in cum] and list(labels.customdata) == list(range(len(cum)))
    hovers = {
        i: read_hover(h)
        for t in fig.data
        if t.meta in ("accepted", "rejected", "not_reached")
        for i, h in zip(t.customdata, t.hovertext)
    }
    assert all(f"cumulative draft probability = {fmt_prob(cum[i])}" in hovers[i] for i in range(len(cum)))
    assert controller_figure(trace, 0) is not None
    wide = specviz.decode(
        pair, "dyntree", PROMPT, max_new_tokens=8, seed=0, nodes=40, depth=3, topk=8, temperature=1.0
    ).steps[0]
    fig = tree_figure(wide)  # 20+ leaves: no room under the nodes, the hover keeps c
    assert len([n for n in wide.forest if not any(m.parent == n.id for m in wide.forest)]) > 18
    assert not any(t.meta == "cum_q" for t in fig.data)
    assert any("cumulative draft probability" in h for t in fig.data if t.meta == "not_reached" for h in t.hovertext)
    other = specviz.decode(pair, "specinfer", PROMPT, max_new_tokens=8, seed=0, temperature=1.0)
    fig = tree_figure(other.steps[0])
    assert not any(t.meta == "cum_q" for t in fig.data)
    assert not any("cumulative" in h for t in fig.data if t.hovertext is not None for h in t.hovertext)


def test_the_theory_panel_expects_the_rules_own_rejections():
    """A chosen tree's position is all rejected with 1 - sum p(children) (not TV(p, q)), which the trace
    records exactly: the rejection panel's expectation is that, beside chain SD's sum of TVs."""
    pair = tiny_pair("llama", vocab=16, draft="noisy", noise=0.5)
    trace = specviz.decode(
        pair, "dyntree", PROMPT, max_new_tokens=12, seed=1, nodes=6, depth=2, topk=3, temperature=1.0
    )
    positions = metrics.drafted_positions(trace)
    expected = []
    for step in trace.steps:
        for pos in step.positions:
            if pos.q is not None:
                kids = [
                    n
                    for n in step.forest
                    if n.parent == pos.parent and n.status in ("accepted", "rejected", "not_reached")
                ]
                expected.append(1 - sum(n.p for n in kids))
    assert [d.reject_prob for d in positions] == pytest.approx(expected, abs=1e-9) and len(expected) > 3
    assert any(d.candidates > 1 for d in positions)
    fig = theory_panel(trace)
    names = {t.name for t in fig.data}
    assert "1 − Σp(c) ± 95%" in names and "ΣTV (Thm 1, SD)" in names
