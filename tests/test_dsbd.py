"""``dsbd`` (Dynamic-Width Speculative Beam Decoding, arXiv 2409.16560) against ``beam``.

With the width fixed (``dynamic=False``: W_L = ``min_width``), dsbd is fixed-width beam sampling:
at T = 0 its output equals ``beam``'s (``width=min_width``) token for token on four families; at
T = 1 the law of its output equals the exactly enumerated law of beam sampling's output
(``test_beam.exact_output_law``), the same chi-square test as ``beam``'s with the same power (it
tells the law from plain sampling's with probability > 0.99 and detects 3% moved between the two
likeliest outputs with probability 0.94, ``test_beam.test_the_law_test_has_power``), also at
temperature 0.8 with a global top-k (power > 0.99 against plain sampling). The runs mix
passed draft layers, failed (repaired) layers and bonus layers over several trees, which the test
checks. With the dynamic rule on, only the trace's consistency is checked: the whole is not
fixed-width beam sampling.
"""

from __future__ import annotations

from collections import Counter
from math import comb

import pytest
import torch
from counting import count_forwards
from test_beam import (
    EOS_FAMILIES,
    LAW_RUNS,
    PROMPT,
    T1,
    cache_free_beam_search,
    exact_output_law,
    make_eos_pair,
    make_eos_small_pair,
    sequence_loglik,
)
from test_beams_law import chi_square_power
from tiny import FAMILIES, chi_square_pvalue, exact_distribution, memoised_forwards, tiny_pair

import specviz
from specviz.core import beams as B
from specviz.core.sampling import SamplingConfig
from specviz.errors import InvalidParameterError
from specviz.metrics import drafted_positions
from specviz.trace import RunTrace
from specviz.viz.distribution import distribution_figure
from specviz.viz.explain import position_of


@pytest.fixture(scope="module", params=FAMILIES)
def close_pair(request):
    return tiny_pair(request.param, vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.1)


@pytest.fixture(scope="module")
def small_pair():
    return tiny_pair("llama", vocab=3, draft="different", init_range=0.5)


@pytest.fixture(scope="module", params=EOS_FAMILIES)
def eos_pair(request):
    """``test_beam``'s close pair with token 0 as EOS, likely enough that beams finish."""
    return make_eos_pair(request.param)


@pytest.fixture(scope="module")
def eos_small_pair():
    """``test_beam``'s pair with token 1 as EOS (30% of the outputs end with EOS)."""
    return make_eos_small_pair()


WARPED = SamplingConfig(0.8, top_k=4)


@pytest.mark.parametrize("prompt", [[1, 2, 3], [5]], ids=["p3", "p1"])
def test_fixed_width_greedy_equals_beam(close_pair, prompt):
    accepted = 0
    for width, min_width, gamma in ((1, 1, 3), (3, 2, 2), (4, 3, 4)):
        ref = specviz.decode(close_pair, "beam", prompt, max_new_tokens=24, temperature=0, width=min_width)
        trace = specviz.decode(
            close_pair,
            "dsbd",
            prompt,
            max_new_tokens=24,
            temperature=0,
            width=width,
            min_width=min_width,
            gamma=gamma,
            dynamic=False,
        )
        assert trace.output_ids == ref.output_ids, (width, min_width, gamma)
        accepted += sum(s.controller.to_json()["l_last"] > 1 for s in trace.steps)
    assert accepted > 0  # some iterations passed a drafted layer: not only the target's own choices


def test_width_one_greedy_is_ar(close_pair):
    ref = specviz.decode(close_pair, "ar", [1, 2, 3], max_new_tokens=20, temperature=0).output_ids
    out = specviz.decode(
        close_pair, "dsbd", [1, 2, 3], max_new_tokens=20, temperature=0, width=2, min_width=1, dynamic=False
    ).output_ids
    assert out == ref


@pytest.fixture(scope="module")
def peaked_pair():
    """Peaked next-token laws and a close draft: at T = 0 the dynamic rule widens and narrows."""
    return tiny_pair("llama", vocab=64, draft="noisy", init_range=0.5, hidden=32, noise=0.1)


def width_schedule(trace) -> list[int]:
    """Beams kept at each generated position (one per verified or bonus layer, in order)."""
    return [lv["kept"] for s in trace.steps for lv in s.controller.to_json()["levels"]]


def test_dynamic_greedy_is_beam_search_with_its_width_schedule(peaked_pair):
    """At T = 0 dynamic dsbd is beam search whose width changes from position to position: its output
    is that of a cache-free beam search run with the widths it chose (so the scores carried across
    iterations, each layer's choice and the final pick among several beams are right). Narrowing
    keeps the best prefix so far, which can end below greedy: some of these runs end with a lower
    target log-likelihood than ``ar``, some higher (the bench anomaly, docs/algorithms.md)."""
    below = above = 0
    narrows = ends_wide = False
    for prompt, n in (([9], 24), ([10, 11, 12], 24), ([20], 24), ([10, 11, 12], 12)):
        trace = specviz.decode(peaked_pair, "dsbd", prompt, max_new_tokens=n, temperature=0, width=4, min_width=1)
        widths = width_schedule(trace)
        assert len(widths) == n
        assert trace.output_ids == cache_free_beam_search(peaked_pair, prompt, widths, n)
        narrows |= any(b < a for a, b in zip(widths, widths[1:]))
        ends_wide |= widths[-1] > 1
        ar = specviz.decode(peaked_pair, "ar", prompt, max_new_tokens=n, temperature=0).output_ids
        ours, greedy = (sequence_loglik(peaked_pair, prompt, tuple(o)) for o in (trace.output_ids, ar))
        below += ours < greedy - 1e-9
        above += ours > greedy + 1e-9
    assert narrows and ends_wide and below and above


def test_greedy_width_law_is_binomial_in_the_drafts_confidence():
    """At T = 0, p_beam is one-hot on the target's best candidate c*, every residual is that one-hot
    again and alpha_j = q_beam(c*) (Eq 4), so Eqs 2-3 give Binomial(W_S, q_beam(c*)): the width
    measures the draft's confidence in the target's choice. The bundled pair's case in the docs:
    q_beam(c*) = 0.5878, W_S = 4, t = 0.7: P(#accepted >= 2) = 0.8065, width 2."""
    q = torch.tensor([0.2, 0.5878, 0.1, 0.1122], dtype=torch.float64)
    p = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64)
    choice = B.width_rule(p, q, 4, 0.7, 1)
    binomial = [comb(4, k) * 0.5878**k * 0.4122 ** (4 - k) for k in range(5)]
    assert choice.law == pytest.approx(binomial, abs=1e-12)
    assert choice.survival[2] == pytest.approx(0.8065, abs=1e-4) and choice.survival[3] < 0.7
    assert choice.width == 2


def run_counts(pair, runs: int, sampling: SamplingConfig = T1, **params) -> tuple[Counter, Counter]:
    counts, ends = Counter(), Counter()
    with memoised_forwards():  # the same numbers, each distinct model call computed once (tiny.py)
        for seed in range(runs):
            trace = specviz.decode(
                pair,
                "dsbd",
                PROMPT,
                max_new_tokens=3,
                seed=seed,
                temperature=sampling.temperature,
                top_k=sampling.top_k,
                top_p=sampling.top_p,
                record_top_k=0,
                **params,
            )
            counts[tuple(trace.output_ids)] += 1
            for step in trace.steps:
                c = step.controller.to_json()
                ends[(len({n.root for n in step.forest}), c["l_last"], c["levels"][-1].get("bonus", False))] += 1
    return counts, ends


@pytest.mark.slow
def test_fixed_width_output_law_is_beam_sampling(small_pair):
    law = exact_output_law(small_pair, PROMPT, 2, 3, T1)
    counts, ends = run_counts(small_pair, LAW_RUNS, width=3, min_width=2, gamma=2, dynamic=False)
    assert chi_square_pvalue(counts, law) > 1e-3
    assert any(bonus for (_, _, bonus) in ends)  # all drafted layers passed (bonus layer)
    assert any(not bonus and last == 2 for (_, last, bonus) in ends)  # the second layer failed
    assert any(trees > 1 for (trees, _, _) in ends)  # forests of two trees were verified
    assert any(not bonus and last == 1 for (_, last, bonus) in ends)  # the first layer failed


@pytest.mark.slow
def test_fixed_width_output_law_with_a_warp(small_pair):
    """Temperature 0.8 and a global top-k of 4 over the (beam x token) candidates, on the target's
    joint (as ``beam``) and on the draft's. The test tells this law from plain sampling's under the
    same warp with power > 0.99 (computed by ``chi_square_power``)."""
    law = exact_output_law(small_pair, PROMPT, 2, 3, WARPED)
    assert chi_square_power(law, exact_distribution(small_pair, PROMPT, 3, WARPED), LAW_RUNS) > 0.99
    counts, _ = run_counts(small_pair, LAW_RUNS, WARPED, width=3, min_width=2, gamma=2, dynamic=False)
    assert chi_square_pvalue(counts, law) > 1e-3


@pytest.mark.slow
def test_printed_ratio_breaks_the_law(small_pair):
    """Algorithm 1's printed acceptance ratio min(1, q/p') is caught by the same test, from far fewer
    runs: it moves the output law so far that 300 runs reject it at p ~ 1e-90 (600: 1e-180)."""
    law = exact_output_law(small_pair, PROMPT, 2, 3, T1)
    counts, _ = run_counts(small_pair, 300, width=3, min_width=2, gamma=2, dynamic=False, literal_ratio=True)
    assert chi_square_pvalue(counts, law) < 1e-3


def test_fixed_width_greedy_equals_beam_with_finished_beams(eos_pair):
    """EOS likely (``test_beam.eos_pair``): finished beams are set aside in both, inside an
    iteration too, and dsbd's greedy output is still ``beam``'s."""
    ended_inside = False
    for prompt in ([1, 2, 3], [5], [4, 5, 6]):
        for width, min_width, gamma in ((3, 2, 3), (4, 3, 2)):
            ref = specviz.decode(eos_pair, "beam", prompt, max_new_tokens=24, temperature=0, width=min_width)
            trace = specviz.decode(
                eos_pair,
                "dsbd",
                prompt,
                max_new_tokens=24,
                temperature=0,
                width=width,
                min_width=min_width,
                gamma=gamma,
                dynamic=False,
            )
            assert trace.output_ids == ref.output_ids and trace.finish_reason == ref.finish_reason
            ended_inside |= any(finished_inside(s) for s in trace.steps)
    assert ended_inside


def finished_inside(step) -> bool:
    """A beam finished at a layer before the one the iteration ended in (an accepted EOS draft)."""
    c = step.controller.to_json()
    return any(b["finished"] and len(b["tokens"]) < c["l_last"] for b in c["beams"][: len(c["kept"])])


@pytest.mark.slow
def test_fixed_width_output_law_with_finished_beams(eos_small_pair):
    """At T = 1 the law of dsbd's output (fixed width) with finished beams set aside is that of beam
    sampling (``test_beam.test_finished_beams_law``), over runs where beams finish in a passed layer
    and iterations end because every kept beam finished."""
    law = exact_output_law(eos_small_pair, PROMPT, 2, 3, T1)
    counts, inside, all_done = Counter(), 0, 0
    with memoised_forwards():
        for seed in range(LAW_RUNS):
            trace = specviz.decode(
                eos_small_pair,
                "dsbd",
                PROMPT,
                max_new_tokens=3,
                seed=seed,
                width=3,
                min_width=2,
                gamma=2,
                dynamic=False,
                record_top_k=0,
                temperature=1.0,
            )
            counts[tuple(trace.output_ids)] += 1
            inside += any(finished_inside(s) for s in trace.steps)
            states = [s.controller.to_json() for s in trace.steps]
            all_done += any(not c["carried"] and c["levels"][-1].get("passed") for c in states)
    assert chi_square_pvalue(counts, law) > 1e-3
    assert inside > 0 and all_done > 0, (inside, all_done)


def test_one_target_call_per_iteration(close_pair):
    with count_forwards(target=close_pair.target, draft=close_pair.draft) as calls:
        trace = specviz.decode(close_pair, "dsbd", [1, 2, 3], max_new_tokens=20, temperature=1, width=4, gamma=3)
    assert all(s.target_calls == 1 for s in trace.steps)
    assert all(s.draft_calls == s.controller.to_json()["gamma"] for s in trace.steps)
    assert trace.metrics["target_calls"] == calls["target"] == len(trace.steps)
    assert sum(s.draft_calls for s in trace.steps) == calls["draft"]
    assert len(trace.output_ids) == 20
    assert trace.metrics["tau"] == 20 / len(trace.steps)


def test_dynamic_trace_is_consistent(close_pair):
    trace = specviz.decode(
        close_pair,
        "dsbd",
        [1, 2, 3],
        max_new_tokens=30,
        temperature=1,
        width=4,
        min_width=1,
        threshold=0.7,
        gamma=3,
        seed=3,
    )
    assert len(trace.output_ids) == 30 and not trace.lossless  # its reference is beam, not ar
    for step in trace.steps:
        c = step.controller.to_json()
        assert c["kind"] == "dsbd" and c["l_last"] == len(c["levels"])
        n_out = len(c["beams"])
        for layer in c["levels"]:
            if layer.get("bonus"):
                continue
            surv = B.survival(torch.tensor(layer["p_accept"]))
            assert layer["width"] == max(1, layer["unfloored"])
            assert layer["width"] == 1 or float(surv[layer["width"]]) >= 0.7 - 1e-5
            assert layer["passed"] == (layer["accepted"] == layer["width"])
        assert n_out == c["levels"][-1]["kept"] and len(c["kept"]) == n_out
        roots = {n.root for n in step.forest}
        assert roots <= set(range(len(trace.steps[step.index - 1].controller.beam_list.carried) if step.index else 1))
        for node_id in c["kept"]:
            assert step.forest[node_id].status in ("accepted", "resampled", "bonus")
    assert any(len({n.root for n in s.forest}) > 1 for s in trace.steps)  # forests of several trees
    again = RunTrace.from_json(trace.to_json())
    assert again.steps[-1].controller == trace.steps[-1].controller


def test_positions_for_the_distribution_view(close_pair):
    """Trace v2 positions: one per parent row a layer scored or tested drafts at (roots: one per
    beam), on the joint scale of the nodes' ``p`` / ``q`` (p_beam, q_beam), with the residual a
    repair beam was drawn from; the app's distribution view shows a dsbd node's p and q; the
    chain-SD theory views leave these positions out; ``record_top_k=0`` records none."""
    kw = dict(max_new_tokens=24, width=4, min_width=1, threshold=0.6, seed=2)
    roots = resampled = views = 0
    for temperature in (1.0, 0.0):
        trace = specviz.decode(close_pair, "dsbd", [1, 2, 3], temperature=temperature, record_top_k=4, **kw)
        for step in trace.steps:
            for n in step.forest:
                pos = position_of(step, n)
                if n.status == "not_reached":
                    continue
                assert pos is not None and pos.root == n.root and n.token_id in pos.ids, (step.index, n)
                i = pos.ids.index(n.token_id)
                if n.p is not None:
                    assert pos.p[i] == pytest.approx(n.p, rel=1e-4, abs=1e-12)
                if n.status in ("accepted", "rejected"):
                    assert pos.q[i] == pytest.approx(n.q, rel=1e-4, abs=1e-12)
                if n.status == "resampled" and temperature > 0:
                    assert pos.final_residual[i] > 0
                    resampled += 1
            assert all(r.residual_mass is None and r.p == sorted(r.p, reverse=True) for r in step.positions)
            roots = max(roots, sum(r.parent is None for r in step.positions))
            for node in [n for n in step.forest if n.status in ("accepted", "rejected") and n.parent is not None][:1]:
                bars = {t.meta: t for t in distribution_figure(step, node.id).data if t.type == "bar"}
                col = list(bars["p"].customdata).index(node.token_id)
                assert bars["p"].y[col] == pytest.approx(node.p, rel=1e-4, abs=1e-12)
                assert bars["q"].y[col] == pytest.approx(node.q, rel=1e-4, abs=1e-12)
                views += 1
        assert drafted_positions(trace) == []
    assert roots > 1 and views > 0 and resampled > 0  # several trees, the view, repaired layers
    quiet = specviz.decode(close_pair, "dsbd", [1, 2, 3], temperature=1.0, record_top_k=0, **kw)
    assert all(not s.positions for s in quiet.steps)
    assert quiet.output_ids == specviz.decode(close_pair, "dsbd", [1, 2, 3], temperature=1.0, **kw).output_ids


def test_single_beam_mode_carries_one_beam(close_pair):
    trace = specviz.decode(
        close_pair, "dsbd", [1, 2, 3], max_new_tokens=25, temperature=1, width=3, gamma=3, single_beam=True, seed=1
    )
    assert len(trace.output_ids) == 25
    for step in trace.steps:
        assert len(step.controller.to_json()["carried"]) == 1
        assert {n.root for n in step.forest} == {0}
        # every step commits the whole carried beam's new tokens
        assert step.controller.to_json()["beams"][step.controller.to_json()["carried"][0]]["tokens"] == [
            c.token_id for c in step.committed
        ]


def test_parameters_are_checked(close_pair):
    with pytest.raises(InvalidParameterError):
        specviz.decode(close_pair, "dsbd", [1], max_new_tokens=4, width=2, min_width=3, temperature=1.0)
    with pytest.raises(InvalidParameterError):
        specviz.decode(close_pair, "dsbd", [1], max_new_tokens=4, threshold=1.5, temperature=1.0)
