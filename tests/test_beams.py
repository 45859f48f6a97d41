"""``core.beams`` checked exactly (no sampling): DSBD's accepted-count law, width rule, p_beam, layer law.

Oracles are independent re-derivations by brute force: every draft sequence of a layer is enumerated
with its probability under q_beam, and every accept / reject branch of the verification loop with
its probability, so the law of the loop (and of the kept beams) is exact up to float64 rounding.
Dynamic-Width Speculative Beam Decoding (arXiv 2409.16560): Eqs 1-7, Algorithm 1, Theorem 3.1.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import pytest
import torch

from specviz.core import beams
from specviz.core.sampling import SamplingConfig, residual
from specviz.errors import InvalidParameterError

# p and q over 6 tokens (p has zeros q does not): the case where the official code's double residual
# visibly changes the law. The official ``get_num_acc_prob`` returns [.1688, .2363, .2520, .3430] here.
P6 = torch.tensor([0.5, 0.3, 0.1, 0.1, 0.0, 0.0], dtype=torch.float64)
Q6 = torch.tensor([0.25, 0.25, 0.2, 0.1, 0.1, 0.1], dtype=torch.float64)


def dirichlet(n: int, seed: int, zeros: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    x = -torch.log(torch.rand(n, generator=gen, dtype=torch.float64))
    if zeros:
        x[torch.randperm(n, generator=gen)[:zeros]] = 0.0
    return x / x.sum()


CASES = [
    (P6, Q6, 3),
    (dirichlet(5, 1), dirichlet(5, 2), 4),
    (dirichlet(6, 3, zeros=2), dirichlet(6, 4), 3),
    (dirichlet(4, 5), dirichlet(4, 6, zeros=1), 2),
    (Q6, Q6, 3),
]


# --- brute-force oracles -----------------------------------------------------------------------


def draft_sequences(q: torch.Tensor, m: int):
    """Every ordered m-tuple of i.i.d. drafts from q with its probability."""
    support = [i for i in range(len(q)) if q[i] > 0]
    for seq in itertools.product(support, repeat=m):
        yield seq, math.prod(float(q[i]) for i in seq)


def enumerate_accepted_count(p: torch.Tensor, q: torch.Tensor, m: int, updates: int = 1) -> list[float]:
    """Law of the number of accepted drafts when all m drafts are verified in turn: accept x with
    min(1, p'(x)/q(x)); reset p' to p after an accept; ``updates`` residual steps after a reject."""
    law = [0.0] * (m + 1)

    def walk(seq, i, cur, count, mass):
        if mass == 0.0:
            return
        if i == len(seq):
            law[count] += mass
            return
        x = seq[i]
        a = min(1.0, float(cur[x]) / float(q[x]))
        walk(seq, i + 1, p, count + 1, mass * a)
        nxt = cur
        for _ in range(updates):
            nxt = residual(nxt, q)
        walk(seq, i + 1, nxt, count, mass * (1.0 - a))

    for seq, mass in draft_sequences(q, m):
        walk(seq, 0, p.double(), 0, mass)
    return law


def enumerate_layer(
    p: torch.Tensor,
    q: torch.Tensor,
    m: int,
    width: int,
    fill_to: int | None = None,
    inverted: bool = False,
    reset: bool = True,
    fill_from_residual: bool = False,
) -> dict:
    """Exact law of the ordered tuple of kept beams of one layer (Algorithm 1, corrected by default).

    Switches for the wrong variants: ``inverted`` (Algorithm 1 line 17 as printed, min(1, q/p')),
    ``reset=False`` (p' not reset after an acceptance), ``fill_from_residual`` (repair slots drawn
    from p' instead of p_beam)."""
    fill_to = fill_to or width
    p = p.double()
    law: dict[tuple, float] = defaultdict(float)
    support_p = [i for i in range(len(p)) if p[i] > 0]

    def fill(kept, mass, dist):
        if len(kept) == fill_to:
            law[kept] += mass
            return
        for x in range(len(dist)):
            if dist[x] > 0:
                fill(kept + (x,), mass * float(dist[x]), dist)

    def walk(seq, i, cur, kept, mass):
        if mass == 0.0:
            return
        if len(kept) == width:
            law[kept] += mass
            return
        if i == len(seq):
            for x in range(len(cur)):
                if cur[x] > 0:
                    fill(kept + (x,), mass * float(cur[x]), cur if fill_from_residual else p)
            return
        x = seq[i]
        if inverted:
            a = 1.0 if cur[x] <= 0 else min(1.0, float(q[x]) / float(cur[x]))
        else:
            a = min(1.0, float(cur[x]) / float(q[x]))
        walk(seq, i + 1, p if reset else cur, kept + (x,), mass * a)
        walk(seq, i + 1, residual(cur, q), kept, mass * (1.0 - a))

    assert support_p
    for seq, mass in draft_sequences(q, m):
        walk(seq, 0, p, (), mass)
    return dict(law)


def iid_law(p: torch.Tensor, width: int) -> dict:
    """Beam sampling (Eq 1, with replacement): the ordered W-tuple of kept candidates is p_beam^W."""
    support = [i for i in range(len(p)) if p[i] > 0]
    return {t: math.prod(float(p[i]) for i in t) for t in itertools.product(support, repeat=width)}


def law_distance(a: dict, b: dict) -> float:
    return max(abs(a.get(k, 0.0) - b.get(k, 0.0)) for k in set(a) | set(b))


# --- the accepted-count law (Eqs 2-4) ----------------------------------------------------------


@pytest.mark.parametrize("p,q,m", CASES)
def test_accepted_count_law_matches_enumeration(p, q, m):
    law = beams.accepted_count_law(p, q, m)
    assert law.shape == (m + 1,) and law.dtype == torch.float64
    assert torch.allclose(law, torch.tensor(enumerate_accepted_count(p, q, m), dtype=torch.float64), atol=1e-12, rtol=0)
    assert abs(float(law.sum()) - 1.0) < 1e-12


def test_double_residual_is_visibly_a_different_law():
    """The official code's helper takes the residual twice per draft: its 'law' is not the loop's
    (enumerated) on this 6-token, 3-draft case (max difference 0.07, enough to change the width at
    t = 0.6); it is exactly the law of a loop that would update twice."""
    loop = torch.tensor(enumerate_accepted_count(P6, Q6, 3), dtype=torch.float64)
    single = beams.accepted_count_law(P6, Q6, 3)
    double = beams.accepted_count_law(P6, Q6, 3, residual_updates=2)
    assert torch.allclose(single, loop, atol=1e-12, rtol=0)
    gap = float((double - loop).abs().max())
    assert gap > 0.05, gap
    assert abs(gap - 0.07) < 1e-9  # P(2 accepted): 0.322 (loop) vs 0.252 (double)
    assert torch.allclose(double, torch.tensor([0.16875, 0.23625, 0.252, 0.343], dtype=torch.float64), atol=1e-12)
    # ... and it picks another width: P(>= 2) is 0.665 for the loop, 0.595 for the double residual.
    assert beams.dynamic_width(single, 0.6, 1) == 2 and beams.dynamic_width(double, 0.6, 1) == 1
    twice = torch.tensor(enumerate_accepted_count(P6, Q6, 3, updates=2), dtype=torch.float64)
    assert torch.allclose(double, twice, atol=1e-12, rtol=0)


def test_accepted_count_law_edges():
    assert beams.accepted_count_law(P6, Q6, 0).tolist() == [1.0]
    same = beams.accepted_count_law(Q6, Q6, 4)  # p == q: every draft is accepted
    assert torch.allclose(same, torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0], dtype=torch.float64), atol=1e-12)
    disjoint = beams.accepted_count_law(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]), 3)
    assert disjoint.tolist() == [1.0, 0.0, 0.0, 0.0]  # q never proposes what p wants
    alpha = beams.acceptance_rates(P6, Q6, 3)
    assert abs(float(alpha[0]) - (1 - 0.5 * float((P6 - Q6).abs().sum()))) < 1e-12  # alpha_1 = 1 - TV
    with pytest.raises(ValueError):
        beams.accepted_count_law(P6, Q6[:5], 2)


# --- the width rule (Eqs 5-7) ------------------------------------------------------------------


def test_survival_sums_from_zero_and_the_literal_form_does_not():
    law = beams.accepted_count_law(P6, Q6, 3)
    surv = beams.survival(law)
    for k in range(4):
        assert abs(float(surv[k]) - (1 - float(law[:k].sum()))) < 1e-12
    literal = beams.survival(law, paper_literal=True)  # Eq 5 as printed adds P(m, 0) for K >= 1
    assert abs(float(literal[1] - surv[1]) - float(law[0])) < 1e-12
    assert float(literal[1]) == 1.0


@pytest.mark.parametrize(
    "threshold,min_width,expected",
    [
        (0.95, 1, 1),  # P(>=1) = 0.869 < 0.95: W~ = 0, floored at 1
        (0.95, 2, 2),
        (0.8, 1, 1),  # P(>=1) = 0.869, P(>=2) = 0.665
        (0.6, 1, 2),
        (0.3, 1, 3),  # P(>=3) = 0.343
        (0.0, 1, 3),
        (1.0, 3, 3),
    ],
)
def test_dynamic_width_is_the_largest_k_reaching_the_threshold(threshold, min_width, expected):
    law = beams.accepted_count_law(P6, Q6, 3)
    assert beams.dynamic_width(law, threshold, min_width) == expected
    choice = beams.width_rule(P6, Q6, 3, threshold, min_width)
    assert choice.width == expected
    assert choice.law == tuple(float(v) for v in law)
    surv = beams.survival(law)
    assert choice.unfloored == max(k for k in range(4) if float(surv[k]) >= threshold)
    assert choice.pass_probability == float(surv[expected])
    assert choice.beta_min == float(surv[min_width])
    assert abs(choice.expected_accepted - sum(k * float(v) for k, v in enumerate(law))) < 1e-12


def test_width_rule_fixed_mode_and_bounds():
    fixed = beams.width_rule(P6, Q6, 3, 0.0, 2, dynamic=False)
    assert fixed.width == 2 and fixed.unfloored == 3
    law = beams.accepted_count_law(P6, Q6, 3)
    assert beams.dynamic_width(law, 0.0, 1, max_width=2) == 2  # capped at W_S
    for bad in [dict(threshold=1.5, min_width=1), dict(threshold=0.5, min_width=0), dict(threshold=0.5, min_width=4)]:
        with pytest.raises(InvalidParameterError):
            beams.width_rule(P6, Q6, 3, **bad)


def test_width_never_decreases_as_the_threshold_falls():
    law = beams.accepted_count_law(dirichlet(6, 7), dirichlet(6, 8), 5)
    widths = [beams.dynamic_width(law, t / 20, 1) for t in range(20, -1, -1)]
    assert widths == sorted(widths) and widths[0] >= 1 and widths[-1] == 5


# --- p_beam (Eq 1), scores, beam search ----------------------------------------------------------


def test_beam_distribution_is_eq1():
    """p_beam(i, v) = p(beam_i) p(v | beam_i) / sum over all beams and tokens."""
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, generator=gen)
    logprobs = torch.log_softmax(logits.double(), -1)
    prefix = torch.tensor([0.5, 0.2, 0.05], dtype=torch.float64)  # p(beam_i | input)
    direct = (prefix[:, None] * logprobs.exp()).flatten()
    direct = direct / direct.sum()
    scores = beams.candidate_scores(prefix.log(), logprobs)
    got = beams.beam_distribution(scores, SamplingConfig(1.0))
    assert torch.allclose(got.double(), direct, atol=1e-6)
    shifted = beams.beam_distribution(beams.candidate_scores(prefix.log() - 40.0, logprobs), SamplingConfig(1.0))
    assert torch.allclose(shifted, got, atol=1e-7)  # a common constant cancels
    assert torch.allclose(
        beams.child_logliks(scores, [7, 0]),
        torch.stack([prefix.log()[1] + logprobs[1, 2], prefix.log()[0] + logprobs[0, 0]]),
    )


def test_beam_distribution_warps_the_joint_and_drops_rejected_beams():
    gen = torch.Generator().manual_seed(1)
    logprobs = torch.log_softmax(torch.randn(3, 6, generator=gen, dtype=torch.float64), -1)
    logl = torch.tensor([-1.0, -0.2, -3.0], dtype=torch.float64)
    scores = beams.candidate_scores(logl, logprobs, valid=torch.tensor([True, False, True]))
    p = beams.beam_distribution(scores, SamplingConfig(1.0, top_k=4))
    assert int((p > 0).sum()) == 4  # top-k over all beams, not per beam
    assert float(p.view(3, 6)[1].sum()) == 0.0  # the rejected beam's row
    assert set(torch.nonzero(p).flatten().tolist()) == set(torch.topk(scores.flatten(), 4).indices.tolist())
    hot = beams.beam_distribution(scores, SamplingConfig(0.5))  # temperature on the joint
    ref = torch.softmax(scores.flatten() / 0.5, 0)
    assert torch.allclose(hot.double(), ref, atol=1e-6)
    with pytest.raises(ValueError):
        beams.beam_distribution(torch.full((2, 3), float("-inf")), SamplingConfig(1.0))


def test_beam_search_selects_the_top_w_with_first_index_ties():
    scores = torch.tensor([[-1.0, -0.5, float("-inf")], [-0.5, -2.0, -0.1]], dtype=torch.float64)
    assert beams.beam_search_select(scores, 3) == [5, 1, 3]  # -0.1, then the tie -0.5: index 1 first
    assert beams.beam_search_select(scores, 1) == [int(scores.flatten().argmax())]
    assert beams.beam_search_select(scores, 10) == [5, 1, 3, 0, 4]  # never a -inf candidate
    assert beams.split_candidate(5, 3) == (1, 2)


def test_sample_beams_draws_with_replacement():
    p = torch.tensor([0.0, 1.0, 0.0])
    assert beams.sample_beams(p, 3, torch.Generator().manual_seed(0)) == [1, 1, 1]


def test_best_beam_is_the_highest_mean_log_likelihood():
    assert beams.best_beam([-3.0, -2.0, -2.0], [3, 3, 3]) == 1
    assert beams.best_beam([-3.0, -2.5], [4, 2]) == 0  # -0.75 per token beats -1.25


# --- one verified layer (Algorithm 1, Theorem 3.1) -----------------------------------------------

LAYER_CASES = [
    (P6, Q6, 3, 1, None),
    (P6, Q6, 3, 2, None),
    (P6, Q6, 3, 3, None),
    (P6, Q6, 3, 2, 3),
    (dirichlet(5, 11), dirichlet(5, 12), 3, 2, None),
    (dirichlet(6, 13, zeros=3), dirichlet(6, 14), 3, 2, None),
]


@pytest.mark.parametrize("p,q,m,width,fill_to", LAYER_CASES)
def test_one_layer_keeps_iid_p_beam_exactly(p, q, m, width, fill_to):
    """Theorem 3.1: the ordered kept beams of a layer are i.i.d. p_beam (the beam-sampling law),
    checked by enumerating every draft sequence and branch of the corrected Algorithm 1."""
    law = enumerate_layer(p, q, m, width, fill_to)
    if fill_to:
        # A failed layer returns fill_to beams (the official code's W_S), a passed one width beams;
        # the first width beams are i.i.d. p_beam either way and the extra ones fresh draws.
        assert {len(k) for k in law} == {width, fill_to}
        head: dict[tuple, float] = defaultdict(float)
        for kept, mass in law.items():
            head[kept[:width]] += mass
        law = dict(head)
    assert law_distance(law, iid_law(p, width)) < 1e-12


def test_the_literal_and_broken_variants_are_not_beam_sampling():
    """Algorithm 1 as printed (ratio q/p'), no reset after an acceptance, and repair slots from the
    residual all change the law of the kept beams: the exactness checks can tell them apart."""
    exact = iid_law(P6, 2)
    for kw in [dict(inverted=True), dict(reset=False), dict(fill_from_residual=True)]:
        assert law_distance(enumerate_layer(P6, Q6, 3, 2, **kw), exact) > 0.01, kw


def test_verify_layer_with_certain_outcomes():
    """Every ratio here is 0 or >= 1, so no uniform is drawn: reject a zero-mass candidate (the
    residual keeps p), accept, reject, accept, then the quota is met and the last draft is skipped."""
    p = torch.tensor([0.5, 0.5, 0.0, 0.0])
    q = torch.tensor([0.25, 0.25, 0.25, 0.25])
    gen = torch.Generator().manual_seed(0)
    state = gen.get_state()
    out = beams.verify_layer(p, q, [2, 0, 3, 1, 0], width=2, generator=gen)
    assert out.status == ["rejected", "accepted", "rejected", "accepted", "skipped"]
    assert out.passed and out.n_accepted == 2 and out.kept == [0, 1] and out.kept_draft == [1, 3]
    assert out.accept_probs == [0.0, 1.0, 0.0, 1.0, None] and out.draws == [None] * 5
    assert out.p_residual[:4] == [0.0, 0.5, 0.0, 0.5]
    assert out.rejection_mass[0] == pytest.approx(0.5)
    assert torch.equal(gen.get_state(), state)
    fail = beams.verify_layer(
        torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.2, 0.4, 0.4]), [1, 2], width=1, generator=gen, fill_to=3
    )
    assert not fail.passed and fail.status == ["rejected", "rejected"]
    assert fail.kept == [0, 0, 0] and fail.sources == ["residual", "fresh", "fresh"]
    assert fail.final_residual is not None and float(fail.final_residual[0]) == 1.0


def test_verify_layer_rejects_impossible_input():
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError):
        beams.verify_layer(P6, torch.tensor([0.5, 0.5, 0, 0, 0, 0.0]), [4], 1, gen)  # q(x) = 0: never drawn
    with pytest.raises(InvalidParameterError):
        beams.verify_layer(P6, Q6, [0], 2, gen, fill_to=1)


def test_greedy_layer_passes_iff_the_target_top_w_was_drafted():
    scores = torch.tensor([[-0.1, -3.0, -0.7], [-0.4, -5.0, -2.0]], dtype=torch.float64)  # top 2: 0, 3
    ok = beams.verify_layer_greedy(scores, [3, 1, 0, 0], 2)
    assert ok.passed and ok.kept == [0, 3] and ok.kept_draft == [2, 0]
    assert ok.status == ["accepted", "rejected", "accepted", "rejected"]  # a repeated draft is not reused
    miss = beams.verify_layer_greedy(scores, [3, 1, 2], 2)
    assert not miss.passed and miss.kept == [0, 3] and miss.sources == ["target", "accepted"]
    assert miss.kept_draft == [None, 0]
