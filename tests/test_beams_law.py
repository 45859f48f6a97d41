"""One verified DSBD layer keeps beams distributed as one step of beam sampling (statistical tests).

Dynamic-Width Speculative Beam Decoding (arXiv 2409.16560), Theorem 3.1: with the width W fixed, the
W beams kept by a verified layer (Algorithm 1, corrected) are i.i.d. draws from p_beam (Eq 1), i.e.
one beam-sampling step. Here p_beam and q_beam come from a tiny real pair (vocabulary 4, target and a
different draft): two beams continue a prompt, each with its cumulative target log-likelihood; the
draft's scores restart at 0 (the official code's choice, a legitimate proposal). Three drafts are
drawn i.i.d. from q_beam and ``core.beams.verify_layer`` keeps two beams, 20000 times per case. The
ordered pair of kept beams (64 cells) is compared by chi-square with its exact law, enumerated by
``exact_beam_law`` from full-sequence target forwards (no cache, no specviz scoring code at T = 1).

Power (``test_the_tests_have_power``: noncentral chi-square at level 1e-3 with the test's own cell
pooling, against exactly enumerated alternatives on the same p_beam and q_beam): 20000 runs detect
Algorithm 1's printed ratio (q/p'), a missing reset after an acceptance, and repair slots drawn from
the residual instead of p_beam, each with probability > 0.99 (they fail with p ~ 0); moving 1% of the
probability from the likeliest ordered pair of kept beams to the second is caught with probability
0.99 at T = 1 and 0.86 with the warp (1.5%: > 0.99 and 0.93). The printed ratio is also run through
``verify_layer(paper_literal_ratio=True)`` and must fail. Smaller deviations of the rule itself are
excluded exactly (no sampling) by ``test_beams.py``; this file adds the real pair's distributions,
the draws and the function as the algorithms call it. About 5 s per 20000 layers on a 2-core CPU.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest
import torch
from scipy import stats
from test_beams import enumerate_layer
from tiny import chi_square_pvalue, exact_distribution, tiny_pair

from specviz.core import beams
from specviz.core.sampling import SamplingConfig, warp

PROMPT = [1, 2, 3]
ROOTS = [(0,), (2,)]
RUNS = 20000
DRAFTS = 3
WIDTH = 2
T1 = SamplingConfig(1.0)
WARPED = SamplingConfig(0.8, top_k=5)  # global top-k over the 8 (beam, token) candidates


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=4, draft="different")


@torch.inference_mode()
def next_logprobs(model, prompt: list[int], seqs: list[tuple[int, ...]], vocab: int) -> torch.Tensor:
    """``[len(seqs), V]`` float64 next-token log-probabilities after prompt + each sequence."""
    rows = [model(torch.tensor([prompt + list(s)])).logits[0, -1, :vocab] for s in seqs]
    return torch.log_softmax(torch.stack(rows).double(), -1)


def exact_beam_law(
    pair,
    prompt: list[int],
    roots: list[tuple[int, ...]],
    logliks: list[float],
    width: int,
    sampling: SamplingConfig,
    steps: int = 1,
) -> dict[tuple, float]:
    """Exact law of beam sampling (Eq 1, with replacement) from the given beams for ``steps`` steps:
    {ordered tuple of the kept beams' token sequences: probability}. Enumerates every ordered W-tuple
    of candidates per step; p_beam is the product law normalised (T = 1, no warp) or the warp applied
    once to the joint's log."""
    law: dict[tuple, float] = {}

    def step(beams_now, ll, mass, left):
        if left == 0:
            law[tuple(beams_now)] = law.get(tuple(beams_now), 0.0) + mass
            return
        lp = next_logprobs(pair.target, prompt, beams_now, pair.vocab_size)
        joint = torch.tensor(ll, dtype=torch.float64)[:, None] + lp
        if sampling == T1:
            p = joint.exp().flatten()
            p = p / p.sum()
        else:
            p = warp(joint.flatten() - joint.max(), sampling).double()
        support = [i for i in range(len(p)) if p[i] > 0]
        for pick in itertools.product(support, repeat=width):
            rows = [divmod(i, pair.vocab_size) for i in pick]
            step(
                [beams_now[r] + (t,) for r, t in rows],
                [float(joint[r, t]) for r, t in rows],
                mass * math.prod(float(p[i]) for i in pick),
                left - 1,
            )

    step(list(roots), list(logliks), 1.0, steps)
    return law


def layer_inputs(pair, sampling: SamplingConfig):
    """p_beam, q_beam over ROOTS x V and the roots' target log-likelihoods."""
    first = next_logprobs(pair.target, PROMPT, [()], pair.vocab_size)[0]
    logl = torch.stack([first[r[0]] for r in ROOTS])
    p_beam = beams.beam_distribution(
        beams.candidate_scores(logl, next_logprobs(pair.target, PROMPT, ROOTS, pair.vocab_size)), sampling
    )
    q_beam = beams.beam_distribution(
        beams.candidate_scores(torch.zeros(len(ROOTS)), next_logprobs(pair.draft, PROMPT, ROOTS, pair.vocab_size)),
        sampling,
    )
    return p_beam, q_beam, logl.tolist()


def as_beams(kept: tuple[int, ...], vocab: int) -> tuple:
    return tuple(ROOTS[i // vocab] + (i % vocab,) for i in kept)


def run_layer(p_beam, q_beam, vocab: int, seed: int, **kw) -> tuple[Counter, Counter]:
    """RUNS verified layers: counts of the ordered kept beams and of the number of accepted drafts."""
    gen = torch.Generator().manual_seed(seed)
    kept, accepted = Counter(), Counter()
    for _ in range(RUNS):
        drafts = beams.sample_beams(q_beam, DRAFTS, gen)
        out = beams.verify_layer(p_beam, q_beam, drafts, WIDTH, gen, **kw)
        assert len(out.kept) == WIDTH and out.passed == (out.n_accepted == WIDTH)
        kept[as_beams(tuple(out.kept), vocab)] += 1
        accepted[out.n_accepted] += 1
    return kept, accepted


@pytest.mark.parametrize("sampling", [T1, WARPED], ids=["t1", "t08-global-topk"])
def test_kept_beams_of_one_layer_follow_beam_sampling(pair, sampling):
    p_beam, q_beam, logl = layer_inputs(pair, sampling)
    assert 0.05 < 1 - float(torch.minimum(p_beam, q_beam).sum()) < 0.9  # draft and target really differ
    law = exact_beam_law(pair, PROMPT, ROOTS, logl, WIDTH, sampling)
    kept, accepted = run_layer(p_beam, q_beam, pair.vocab_size, seed=1)
    assert chi_square_pvalue(kept, law) > 1e-3
    # The number accepted (the quota caps it at the width) follows accepted_count_law.
    surv = beams.survival(beams.accepted_count_law(p_beam, q_beam, DRAFTS))
    capped = {k: float(surv[k] - surv[k + 1]) for k in range(WIDTH)} | {WIDTH: float(surv[WIDTH])}
    assert chi_square_pvalue(accepted, capped) > 1e-3


def test_the_printed_ratio_fails_the_same_test(pair):
    """Algorithm 1 line 17 as printed, min(1, q_beam / p'): the kept beams are no longer p_beam."""
    p_beam, q_beam, logl = layer_inputs(pair, T1)
    law = exact_beam_law(pair, PROMPT, ROOTS, logl, WIDTH, T1)
    kept, _ = run_layer(p_beam, q_beam, pair.vocab_size, seed=2, paper_literal_ratio=True)
    assert chi_square_pvalue(kept, law) < 1e-3


def chi_square_power(null: dict, alternative: dict, runs: int, level: float = 1e-3) -> float:
    """Power of ``chi_square_pvalue``'s test (same cell pooling) against an exactly known alternative."""
    cells, pooled = [k for k in null if null[k] * runs >= 5], [k for k in null if null[k] * runs < 5]
    p0 = [null[k] for k in cells] + ([sum(null[k] for k in pooled)] if pooled else [])
    p1 = [alternative.get(k, 0.0) for k in cells] + ([sum(alternative.get(k, 0.0) for k in pooled)] if pooled else [])
    outside = sum(v for k, v in alternative.items() if k not in null)
    lam = runs * sum((a - b) ** 2 / b for a, b in zip(p1, p0))
    df = len(p0) - 1
    power = float(stats.ncx2.sf(stats.chi2.isf(level, df), df, lam))
    return 1 - (1 - power) * (1 - outside) ** runs


@pytest.mark.parametrize("sampling", [T1, WARPED], ids=["t1", "t08-global-topk"])
def test_the_tests_have_power(pair, sampling):
    p_beam, q_beam, logl = layer_inputs(pair, sampling)
    law = exact_beam_law(pair, PROMPT, ROOTS, logl, WIDTH, sampling)
    exact = enumerate_layer(p_beam, q_beam, DRAFTS, WIDTH)
    assert max(abs(law.get(as_beams(k, pair.vocab_size), 0.0) - v) for k, v in exact.items()) < 1e-6
    for wrong in [dict(inverted=True), dict(reset=False), dict(fill_from_residual=True)]:
        alt: Counter = Counter()
        for k, v in enumerate_layer(p_beam, q_beam, DRAFTS, WIDTH, **wrong).items():
            alt[as_beams(k, pair.vocab_size)] += v
        assert chi_square_power(law, alt, RUNS) > 0.99, wrong
    top = sorted(law, key=law.get, reverse=True)
    shifted = dict(law)
    shifted[top[0]] += 0.015
    shifted[top[1]] -= 0.015
    assert chi_square_power(law, shifted, RUNS) > 0.9


def test_exact_beam_law_with_width_one_is_plain_sampling(pair):
    """Beam sampling with one beam is multinomial sampling: the helper agrees with tiny's enumeration."""
    for sampling in (T1, WARPED):
        law = exact_beam_law(pair, PROMPT, [()], [0.0], 1, sampling, steps=2)
        plain = exact_distribution(pair, PROMPT, 2, sampling)
        assert max(abs(law.get((seq,), 0.0) - v) for seq, v in plain.items()) < 1e-6
        assert abs(sum(law.values()) - 1.0) < 1e-6
