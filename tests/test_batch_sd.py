"""``batch_sd`` (theory paper, arXiv:2411.00841, Algorithm 4 with its two printed errors corrected) is
exact: the law of the first two generated tokens matches the exactly enumerated target law at T = 1
and at T = 0.7 with top-k/top-p; it equals ``ar`` at temperature 0 on four families; with M = 1 it
makes ``sd``'s draws and outputs; a step is drawn as M branches; its probe records Thm 3's
``prod_m TV(p^m, q)`` at the root position.

Power: the pair's draft is an independent model, 2500 runs per case (as ``test_trees_exactness.py``).
For the statistical tests the prompt is ``[5, 6]``, where at T = 1 the first position has TV(p, q) =
0.27 and, with M = 2, all roots are rejected with probability 0.15; there the literal line 28 of
Algorithm 4 (sample one residual too far, ``p^{M+2}``) puts the first token 0.047 away from p in total
variation (exactly, ``core.theory.batch_root_law``), and the same test flags it
(``test_the_test_sees_the_literal_fallback``). Most prompts of this pair give the literal form a far
smaller bias (under 0.015), which no affordable sample would see; that is why the fallback law itself
is also checked exactly by enumeration in ``tests/test_theory.py``.
"""

import pytest
import torch
from tiny import FAMILIES, exact_distribution, goodness_of_fit, sample_counts, tiny_pair

import specviz
from specviz.core import rules, theory
from specviz.core.acceptance import sibling_schedule
from specviz.core.sampling import SamplingConfig, residual, warp

RUNS = 2500
PROMPT = [1, 2, 3]
STAT_PROMPT = [5, 6]
T1 = SamplingConfig(1.0)
WARPED = SamplingConfig(0.7, top_k=5, top_p=0.9)


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=8, draft="different")


@pytest.mark.slow
@pytest.mark.parametrize("sampling", [T1, WARPED], ids=["t1", "t07-topk-topp"])
def test_first_two_tokens_follow_the_target(pair, sampling):
    law = exact_distribution(pair, STAT_PROMPT, 2, sampling)
    counts = sample_counts(pair, "batch_sd", STAT_PROMPT, 2, RUNS, sampling, budget=3, num_drafts=2, gamma=2)
    assert goodness_of_fit(counts, law) > 1e-3


@pytest.mark.slow
def test_the_test_sees_the_literal_fallback(pair, monkeypatch):
    """Algorithm 4's printed line 28 read literally: after all M roots, one more residual (p^{M+2})."""

    def literal(p, q, candidates, replacement):
        sched = sibling_schedule(p, q, candidates, replacement)
        if len(candidates) > 1:
            sched.final_residual = residual(sched.final_residual, q)
        return sched

    with torch.no_grad():
        p = warp(pair.target(torch.tensor([STAT_PROMPT])).logits[0, -1], T1)
        q = warp(pair.draft(torch.tensor([STAT_PROMPT])).logits[0, -1], T1)
    assert float(theory.tv(theory.batch_root_law(p, q, 2, "literal_line28"), p)) > 0.04
    monkeypatch.setattr(rules, "sibling_schedule", literal)
    law = exact_distribution(pair, STAT_PROMPT, 2, T1)
    counts = sample_counts(pair, "batch_sd", STAT_PROMPT, 2, RUNS, T1, budget=3, num_drafts=2, gamma=2)
    assert goodness_of_fit(counts, law) < 1e-3


@pytest.mark.parametrize("family", FAMILIES)
def test_batch_sd_greedy_equals_ar(family):
    pair = tiny_pair(family, vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.1)
    accepted = 0
    for prompt in ([1, 2, 3], [5], [7, 7, 7, 9, 30]):
        ref = specviz.decode(pair, "ar", prompt, max_new_tokens=30, temperature=0).output_ids
        for m, gamma in ((1, 1), (3, 4), (4, 2)):
            trace = specviz.decode(
                pair, "batch_sd", prompt, max_new_tokens=30, temperature=0, num_drafts=m, gamma=gamma
            )
            assert trace.output_ids == ref, (prompt, m, gamma)
            assert trace.lossless
            accepted += trace.metrics["accepted"]
    assert accepted > 0


@pytest.mark.parametrize("sampling", [T1, WARPED], ids=["t1", "t07-topk-topp"])
def test_one_draft_is_sd(pair, sampling):
    kw = dict(temperature=sampling.temperature, top_k=sampling.top_k, top_p=sampling.top_p)
    for seed in range(6):
        for gamma in (1, 3):
            a = specviz.decode(pair, "sd", PROMPT, max_new_tokens=25, seed=seed, gamma=gamma, **kw)
            b = specviz.decode(pair, "batch_sd", PROMPT, max_new_tokens=25, seed=seed, gamma=gamma, num_drafts=1, **kw)
            assert b.output_ids == a.output_ids
            assert [len(s.committed) for s in b.steps] == [len(s.committed) for s in a.steps]


def test_a_step_is_m_branches_and_records_thm3(pair):
    m, gamma = 3, 3
    trace = specviz.decode(
        pair, "batch_sd", PROMPT, max_new_tokens=30, seed=2, num_drafts=m, gamma=gamma, temperature=1.0
    )
    step = trace.steps[0]
    roots = [n for n in step.forest if n.parent is None and n.status in ("accepted", "rejected", "not_reached")]
    assert len(roots) == m
    for r in roots:  # each root carries a chain (a duplicate root none: it can never be accepted)
        depth, node = 0, r
        while kids := [
            n for n in step.forest if n.parent == node.id and n.status != "bonus" and n.status != "resampled"
        ]:
            assert len(kids) == 1
            node, depth = kids[0], depth + 1
        dup = any(o.token_id == r.token_id and o.id < r.id for o in roots)
        assert depth == (0 if dup else gamma - 1)
    assert all(s.target_calls == 1 for s in trace.steps)
    # the probe: Thm 3's all-roots-rejected probability, from the exact p and q at the first position
    with torch.no_grad():
        logits_p = pair.target(torch.tensor([PROMPT])).logits[0, -1]
        logits_q = pair.draft(torch.tensor([PROMPT])).logits[0, -1]
    p, q = warp(logits_p, T1), warp(logits_q, T1)
    first = step.controller.to_json()["positions"][0]
    assert step.controller.to_json()["kind"] == "theory" and first["roots"] == m
    assert first["reject"] == pytest.approx(float(theory.batch_root_rejection(p, q, m)), rel=1e-4)
    assert first["tv"] == pytest.approx(float(theory.tv(p, q)), rel=1e-4)
    assert len(step.controller.to_json()["positions"]) == sum(1 for r in step.positions if r.q is not None)
