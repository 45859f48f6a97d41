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

import pytest
import torch
from test_beam import LAW_RUNS, PROMPT, T1, exact_output_law
from test_beams_law import chi_square_power
from counting import count_forwards
from tiny import FAMILIES, chi_square_pvalue, exact_distribution, tiny_pair

import specviz
from specviz.core import beams as B
from specviz.core.sampling import SamplingConfig
from specviz.errors import InvalidParameterError
from specviz.trace import RunTrace


@pytest.fixture(scope="module", params=FAMILIES)
def close_pair(request):
    return tiny_pair(request.param, vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.1)


@pytest.fixture(scope="module")
def small_pair():
    return tiny_pair("llama", vocab=3, draft="different", init_range=0.5)


WARPED = SamplingConfig(0.8, top_k=4)


@pytest.mark.parametrize("prompt", [[1, 2, 3], [5]], ids=["p3", "p1"])
def test_fixed_width_greedy_equals_beam(close_pair, prompt):
    accepted = 0
    for width, min_width, gamma in ((1, 1, 3), (3, 2, 2), (4, 3, 4)):
        ref = specviz.decode(close_pair, "beam", prompt, max_new_tokens=24, temperature=0, width=min_width)
        trace = specviz.decode(close_pair, "dsbd", prompt, max_new_tokens=24, temperature=0, width=width,
                               min_width=min_width, gamma=gamma, dynamic=False)
        assert trace.output_ids == ref.output_ids, (width, min_width, gamma)
        accepted += sum(s.controller["l_last"] > 1 for s in trace.steps)
    assert accepted > 0        # some iterations passed a drafted layer: not only the target's own choices


def test_width_one_greedy_is_ar(close_pair):
    ref = specviz.decode(close_pair, "ar", [1, 2, 3], max_new_tokens=20, temperature=0).output_ids
    out = specviz.decode(close_pair, "dsbd", [1, 2, 3], max_new_tokens=20, temperature=0, width=2, min_width=1,
                         dynamic=False).output_ids
    assert out == ref


def run_counts(pair, runs: int, sampling: SamplingConfig = T1, **params) -> tuple[Counter, Counter]:
    counts, ends = Counter(), Counter()
    for seed in range(runs):
        trace = specviz.decode(pair, "dsbd", PROMPT, max_new_tokens=3, seed=seed, temperature=sampling.temperature,
                               top_k=sampling.top_k, top_p=sampling.top_p, **params)
        counts[tuple(trace.output_ids)] += 1
        for step in trace.steps:
            c = step.controller
            ends[(len({n.root for n in step.forest}), c["l_last"], c["levels"][-1].get("bonus", False))] += 1
    return counts, ends


def test_fixed_width_output_law_is_beam_sampling(small_pair):
    law = exact_output_law(small_pair, PROMPT, 2, 3, T1)
    counts, ends = run_counts(small_pair, LAW_RUNS, width=3, min_width=2, gamma=2, dynamic=False)
    assert chi_square_pvalue(counts, law) > 1e-3
    assert any(bonus for (_, _, bonus) in ends)                 # all drafted layers passed (bonus layer)
    assert any(not bonus and last == 2 for (_, last, bonus) in ends)   # the second layer failed
    assert any(trees > 1 for (trees, _, _) in ends)                     # forests of two trees were verified
    assert any(not bonus and last == 1 for (_, last, bonus) in ends)   # the first layer failed


def test_fixed_width_output_law_with_a_warp(small_pair):
    """Temperature 0.8 and a global top-k of 4 over the (beam x token) candidates, on the target's
    joint (as ``beam``) and on the draft's. The test tells this law from plain sampling's under the
    same warp with power > 0.99 (computed by ``chi_square_power``)."""
    law = exact_output_law(small_pair, PROMPT, 2, 3, WARPED)
    assert chi_square_power(law, exact_distribution(small_pair, PROMPT, 3, WARPED), LAW_RUNS) > 0.99
    counts, _ = run_counts(small_pair, LAW_RUNS, WARPED, width=3, min_width=2, gamma=2, dynamic=False)
    assert chi_square_pvalue(counts, law) > 1e-3


def test_printed_ratio_breaks_the_law(small_pair):
    """Algorithm 1's printed acceptance ratio min(1, q/p') is caught by the same test."""
    law = exact_output_law(small_pair, PROMPT, 2, 3, T1)
    counts, _ = run_counts(small_pair, LAW_RUNS, width=3, min_width=2, gamma=2, dynamic=False, literal_ratio=True)
    assert chi_square_pvalue(counts, law) < 1e-3


def test_one_target_call_per_iteration(close_pair):
    with count_forwards(target=close_pair.target, draft=close_pair.draft) as calls:
        trace = specviz.decode(close_pair, "dsbd", [1, 2, 3], max_new_tokens=20, temperature=1, width=4, gamma=3)
    assert all(s.target_calls == 1 for s in trace.steps)
    assert all(s.draft_calls == s.controller["gamma"] for s in trace.steps)
    assert trace.metrics["target_calls"] == calls["target"] == len(trace.steps)
    assert sum(s.draft_calls for s in trace.steps) == calls["draft"]
    assert len(trace.output_ids) == 20
    assert trace.metrics["tau"] == 20 / len(trace.steps)


def test_dynamic_trace_is_consistent(close_pair):
    trace = specviz.decode(close_pair, "dsbd", [1, 2, 3], max_new_tokens=30, temperature=1, width=4, min_width=1,
                           threshold=0.7, gamma=3, seed=3)
    assert len(trace.output_ids) == 30 and not trace.lossless     # its reference is beam, not ar
    for step in trace.steps:
        c = step.controller
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
        assert roots <= set(range(len(trace.steps[step.index - 1].controller["carried"]) if step.index else 1))
        for node_id in c["kept"]:
            assert step.forest[node_id].status in ("accepted", "resampled", "bonus")
    assert any(len({n.root for n in s.forest}) > 1 for s in trace.steps)     # forests of several trees
    again = RunTrace.from_json(trace.to_json())
    assert again.steps[-1].controller == trace.steps[-1].controller


def test_single_beam_mode_carries_one_beam(close_pair):
    trace = specviz.decode(close_pair, "dsbd", [1, 2, 3], max_new_tokens=25, temperature=1, width=3, gamma=3,
                           single_beam=True, seed=1)
    assert len(trace.output_ids) == 25
    for step in trace.steps:
        assert len(step.controller["carried"]) == 1
        assert {n.root for n in step.forest} == {0}
        # every step commits the whole carried beam's new tokens
        assert step.controller["beams"][step.controller["carried"][0]]["tokens"] == \
            [c.token_id for c in step.committed]


def test_parameters_are_checked(close_pair):
    with pytest.raises(InvalidParameterError):
        specviz.decode(close_pair, "dsbd", [1], max_new_tokens=4, width=2, min_width=3)
    with pytest.raises(InvalidParameterError):
        specviz.decode(close_pair, "dsbd", [1], max_new_tokens=4, threshold=1.5)
