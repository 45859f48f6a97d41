"""``beam``: beam sampling / beam search with the target alone (the reference of ``dsbd``).

Checks: width 1 is ``ar`` (greedy token for token on four families; in law at T = 1); beam search
at T = 0 equals a cache-free beam search built from full-sequence forwards; at T = 1 the law of the
output (the best of the final beams) equals the law computed exactly by enumerating beam sampling
(``exact_beam_law``, Eq 1 with replacement) and taking the best beam of every outcome. Power of the
law test (noncentral chi-square at level 1e-3, ``chi_square_power``): it tells beam sampling's output
law from plain sampling's (``ar``) with probability > 0.99 (computed: 1.0), and it detects 3% of the
probability moved from the likeliest output to the second with probability 0.94 (4%: > 0.999).
The same law and test serve ``dsbd`` (``test_dsbd.py``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter

import pytest
import torch
from test_beams_law import chi_square_power, exact_beam_law, next_logprobs
from tiny import FAMILIES, chi_square_pvalue, exact_distribution, goodness_of_fit, sample_counts, tiny_pair, with_eos

import specviz
from specviz.core import beams as B
from specviz.core.sampling import SamplingConfig, warp
from specviz.trace import RunTrace
from specviz.viz.beams import beam_rows
from specviz.viz.explain import position_of

PROMPT = [1, 2]
T1 = SamplingConfig(1.0)
LAW_RUNS = 2000


@pytest.fixture(scope="module", params=FAMILIES)
def close_pair(request):
    return tiny_pair(request.param, vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.1)


@pytest.fixture(scope="module")
def small_pair():
    """Vocabulary 3, target and a different draft: every beam outcome can be enumerated."""
    return tiny_pair("llama", vocab=3, draft="different", init_range=0.5)


EOS_FAMILIES = ("llama", "gpt2")


def make_eos_pair(family: str):
    """A close pair whose token 0 is EOS, its logit raised by 2: beams finish, some runs end with a
    finished beam and some with a live one."""
    return with_eos(tiny_pair(family, vocab=64, draft="noisy", init_range=0.2, hidden=32, noise=0.1), 0, 2.0)


@pytest.fixture(scope="module", params=EOS_FAMILIES)
def eos_pair(request):
    """``make_eos_pair``'s pair for each of ``EOS_FAMILIES``, built once per module."""
    return make_eos_pair(request.param)


def make_eos_small_pair():
    """``small_pair`` with token 1 as EOS, its logit raised by 1: 30% of the outputs end with EOS."""
    return with_eos(tiny_pair("llama", vocab=3, draft="different", init_range=0.5), 1, 1.0)


@pytest.fixture(scope="module")
def eos_small_pair():
    """``make_eos_small_pair``'s pair, built once per module."""
    return make_eos_small_pair()


@torch.inference_mode()
def sequence_loglik(pair, prompt: list[int], seq: tuple[int, ...]) -> float:
    """Target log-likelihood of ``seq`` after ``prompt``, from one full-sequence forward (no cache)."""
    ids = prompt + list(seq)
    logp = torch.log_softmax(pair.target(torch.tensor([ids])).logits[0].double(), -1)
    return float(sum(logp[len(prompt) - 1 + i, t] for i, t in enumerate(seq)))


def first_best(beams: list[tuple[tuple[int, ...], float]]) -> tuple[int, ...]:
    """The sequence with the highest mean log-likelihood per token (ties: the first)."""
    return max(enumerate(beams), key=lambda ib: (ib[1][1] / max(len(ib[1][0]), 1), -ib[0]))[1][0]


def exact_output_law(pair, prompt: list[int], width: int, steps: int, sampling: SamplingConfig) -> dict:
    """Law of the output of beam sampling with finished beams set aside, by enumeration from
    full-sequence target forwards: every ordered draw of ``width`` candidates (Eq 1, with
    replacement) from the live beams; a drawn EOS finishes its beam; the run ends after ``steps``
    tokens or when no beam is live; the output is the best of the finished beams (in the order they
    finished) and the live ones by mean log-likelihood per token (``first_best``). Without EOS: the
    best of the final beams."""
    eos, vocab = pair.eos_token_ids, pair.vocab_size
    nxt = functools.lru_cache(maxsize=None)(lambda seq: next_logprobs(pair.target, prompt, [seq], vocab)[0])
    law: Counter = Counter()

    def walk(live, finished, mass, left):
        if not live or left == 0:
            law[first_best(finished + live)] += mass
            return
        joint = torch.stack([ll + nxt(seq) for seq, ll in live]).flatten()
        p = (joint - joint.max()).exp() if sampling == T1 else warp(joint - joint.max(), sampling).double()
        p = p / p.sum()
        support = [i for i in range(len(p)) if p[i] > 0]
        for pick in itertools.product(support, repeat=width):
            new = [(live[i // vocab][0] + (i % vocab,), float(joint[i])) for i in pick]
            walk(
                [b for b in new if b[0][-1] not in eos],
                finished + [b for b in new if b[0][-1] in eos],
                mass * math.prod(float(p[i]) for i in pick),
                left - 1,
            )

    walk([((), 0.0)], [], 1.0, steps)
    return dict(law)


def ordinary_eos_law(pair, prompt: list[int], width: int, steps: int, sampling: SamplingConfig) -> dict:
    """The law when EOS is an ordinary token: beam sampling for ``steps`` steps (``exact_beam_law``),
    the best final beam by target log-likelihood, cut after its first EOS (the rule before finished
    beams were set aside; the alternative the EOS law tests must tell apart)."""
    eos = pair.eos_token_ids
    ll = functools.lru_cache(maxsize=None)(lambda seq: sequence_loglik(pair, prompt, seq))
    law: Counter = Counter()
    for kept, mass in exact_beam_law(pair, prompt, [()], [0.0], width, sampling, steps=steps).items():
        best = kept[B.best_beam([ll(s) for s in kept], [len(s) for s in kept])]
        cut = next((i + 1 for i, t in enumerate(best) if t in eos), len(best))
        law[best[:cut]] += mass
    return dict(law)


@torch.inference_mode()
def cache_free_beam_search(pair, prompt: list[int], width: int | list[int], steps: int) -> list[int]:
    """Beam search from full-sequence forwards; ``width`` is one width or one per step (a schedule).
    A kept EOS candidate finishes its beam (set aside); the output is ``first_best`` of the finished
    beams and the live ones at the end."""
    widths = [width] * steps if isinstance(width, int) else list(width)
    live: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    finished: list[tuple[tuple[int, ...], float]] = []
    for w in widths[:steps]:
        if not live:
            break
        ll = torch.tensor([b[1] for b in live], dtype=torch.float64)
        scores = B.candidate_scores(ll, next_logprobs(pair.target, prompt, [b[0] for b in live], pair.vocab_size))
        flat = scores.reshape(-1)
        new = [
            (live[c // pair.vocab_size][0] + (c % pair.vocab_size,), float(flat[c]))
            for c in B.beam_search_select(scores, w)
        ]
        finished += [b for b in new if b[0][-1] in pair.eos_token_ids]
        live = [b for b in new if b[0][-1] not in pair.eos_token_ids]
    return list(first_best(finished + live))


@pytest.mark.parametrize("prompt", [[1, 2, 3], [5]], ids=["p3", "p1"])
def test_width_one_greedy_is_ar(close_pair, prompt):
    ref = specviz.decode(close_pair, "ar", prompt, max_new_tokens=30, temperature=0).output_ids
    assert specviz.decode(close_pair, "beam", prompt, max_new_tokens=30, temperature=0, width=1).output_ids == ref


def test_beam_search_matches_a_cache_free_reference(close_pair):
    for width in (2, 3):
        trace = specviz.decode(close_pair, "beam", [4, 5, 6], max_new_tokens=12, temperature=0, width=width)
        assert trace.output_ids == cache_free_beam_search(close_pair, [4, 5, 6], width, 12)
        assert trace.metrics["target_calls"] == 12 and all(s.target_calls == 1 for s in trace.steps)


@pytest.mark.slow
def test_width_one_is_ar_in_law(small_pair):
    law = exact_distribution(small_pair, PROMPT, 3, T1)
    counts = sample_counts(small_pair, "beam", PROMPT, 3, LAW_RUNS, T1, width=1)
    assert goodness_of_fit(counts, law) > 1e-3


@pytest.mark.slow
def test_output_law_is_beam_sampling(small_pair):
    law = exact_output_law(small_pair, PROMPT, 2, 3, T1)
    counts = sample_counts(small_pair, "beam", PROMPT, 3, LAW_RUNS, T1, width=2)
    assert chi_square_pvalue(counts, law) > 1e-3


def test_the_law_test_has_power(small_pair):
    law = exact_output_law(small_pair, PROMPT, 2, 3, T1)
    plain = exact_distribution(small_pair, PROMPT, 3, T1)
    assert chi_square_power(law, plain, LAW_RUNS) > 0.99  # beam sampling is not plain sampling
    top = sorted(law, key=law.get, reverse=True)
    shifted = dict(law)
    shifted[top[0]] -= 0.03
    shifted[top[1]] += 0.03
    assert chi_square_power(law, shifted, LAW_RUNS) > 0.9


def test_trace_keeps_every_beam(close_pair):
    trace = specviz.decode(close_pair, "beam", [1, 2, 3], max_new_tokens=10, temperature=1, width=3, seed=4)
    assert len(trace.output_ids) == 10 and trace.finish_reason == "length"
    for step in trace.steps:
        assert len(step.forest) == 3 and {n.status for n in step.forest} == {"bonus"}
        state = step.controller.to_json()
        assert state["kind"] == "beam" and len(state["beams"]) == 3
        assert [n.root for n in step.forest] == [b["parent"] for b in state["beams"]]
        assert abs(sum(n.p for n in step.forest) - 1.0) < 1.0 + 1e-6
    # the committed output is the best final beam, rebuilt from the per-step beam lists
    final = trace.steps[-1].controller
    assert final.beam_list.length == 10
    again = RunTrace.from_json(trace.to_json())
    assert again.steps[-1].controller == final


def test_positions_one_per_beam(close_pair):
    """Trace v2 positions: each step records one position per beam it extended (``root`` = the
    beam), with p_beam on that beam's row (the scale of the nodes' ``p``) and every kept token."""
    trace = specviz.decode(
        close_pair, "beam", [1, 2, 3], max_new_tokens=10, temperature=1, width=3, seed=4, record_top_k=4
    )
    for step in trace.steps:
        beams = len(trace.steps[step.index - 1].controller.to_json()["carried"]) if step.index else 1
        assert sorted(r.root for r in step.positions) == list(range(beams))
        assert all(r.parent is None and r.q is None for r in step.positions)
        for n in step.forest:
            pos = position_of(step, n)
            assert pos.root == n.root and pos.p[pos.ids.index(n.token_id)] == pytest.approx(n.p, rel=1e-4)
    quiet = specviz.decode(
        close_pair, "beam", [1, 2, 3], max_new_tokens=10, temperature=1, width=3, seed=4, record_top_k=0
    )
    assert quiet.output_ids == trace.output_ids and all(not s.positions for s in quiet.steps)


def test_finished_beams_greedy_match_a_cache_free_reference(eos_pair):
    """Beam search with finished beams set aside equals the cache-free reference; width 1 is ``ar``
    (the beam ends at EOS); the trace's beam list marks the output as its best beam."""
    outcomes = set()
    for prompt in ([1, 2, 3], [5], [4, 5, 6]):
        ar = specviz.decode(eos_pair, "ar", prompt, max_new_tokens=24, temperature=0).output_ids
        assert specviz.decode(eos_pair, "beam", prompt, max_new_tokens=24, temperature=0, width=1).output_ids == ar
        for width in (2, 3):
            trace = specviz.decode(eos_pair, "beam", prompt, max_new_tokens=24, temperature=0, width=width)
            assert trace.output_ids == cache_free_beam_search(eos_pair, prompt, width, 24)
            rows = beam_rows(trace, len(trace.steps) - 1)
            best = [r for r in rows if r["best"]]
            assert [r["tokens"] for r in best] == [trace.output_ids]
            for r in rows:  # per token of that beam: a beam that finished at EOS is shorter than the live ones
                assert r["mean_logprob"] == pytest.approx(r["loglik"] / len(r["tokens"]))
            finished = any(r["finished"] and r["tokens"] for s in trace.steps for r in s.controller.to_json()["beams"])
            outcomes.add((trace.finish_reason, finished))
    assert {("eos", True), ("length", True)} <= outcomes  # a finished beam won; one lost to a live beam


@pytest.mark.slow
def test_finished_beams_law(eos_small_pair):
    """At T = 1 the output law is that of beam sampling with finished beams set aside (enumerated
    exactly); the test tells it from EOS as an ordinary token (cut at the first EOS) with power
    > 0.99."""
    law = exact_output_law(eos_small_pair, PROMPT, 2, 3, T1)
    assert chi_square_power(law, ordinary_eos_law(eos_small_pair, PROMPT, 2, 3, T1), LAW_RUNS) > 0.99
    counts = sample_counts(eos_small_pair, "beam", PROMPT, 3, LAW_RUNS, T1, width=2)
    assert chi_square_pvalue(counts, law) > 1e-3
