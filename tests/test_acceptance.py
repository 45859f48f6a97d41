"""The multi-candidate rules of ``core.acceptance`` preserve p *exactly*: the output law of a sibling
group, enumerated over every candidate sequence (no sampling), equals the target distribution, for
MCSD Algorithm 1 (with replacement = SpecInfer), Algorithm 2 / Sequoia Algorithm 1 (without
replacement, with Sequoia's uniform fallback past q's support), and the temperature-0 rule. The
wrong residual order is exactly measurably biased."""

import itertools

import pytest
import torch

from specviz.core import acceptance as acc
from specviz.core.acceptance import (
    draw_candidates,
    draw_probs,
    first_accepted,
    greedy_candidates,
    greedy_schedule,
    sibling_schedule,
)

V = 5


def rand_dist(gen, zeros=0):
    x = torch.rand(V, generator=gen, dtype=torch.float64) ** 3
    if zeros:
        x[torch.randperm(V, generator=gen)[:zeros]] = 0.0
    return (x / x.sum()).float()


def candidate_law(q, k, replacement, fallback=True):
    """Exact law of the ordered candidate tuple (sequential draws; uniform over undrawn tokens once q is used up)."""
    out = {}
    for cands in itertools.product(range(V), repeat=k):
        prob, d, drawn = 1.0, q.double().clone(), set()
        for x in cands:
            if not replacement:
                if x in drawn:
                    prob = 0.0
                    break
                if d.sum() <= 0:
                    if not fallback:
                        prob = 0.0
                        break
                    d = torch.tensor([0.0 if t in drawn else 1.0 for t in range(V)], dtype=torch.float64)
                d = d / d.sum()
            prob *= float(d[x])
            if not replacement:
                d = d.clone()
                d[x] = 0.0
                drawn.add(x)
        if prob > 0:
            out[cands] = prob
    return out


def output_law(p, q, k, replacement):
    """Exact law of the token a sibling group produces (accepted candidate, or residual draw)."""
    law = torch.zeros(V, dtype=torch.float64)
    for cands, prob in candidate_law(q, k, replacement).items():
        s = sibling_schedule(p, q, list(cands), replacement)
        reach = 1.0
        for x, a in zip(cands, s.accept_probs):
            law[x] += prob * reach * a
            reach *= 1 - a
        law += prob * reach * s.final_residual.double()
    return law


CASES = [(k, zeros) for k in (1, 2, 3) for zeros in (0, 2)]


@pytest.mark.parametrize("replacement", [True, False], ids=["alg1-with", "alg2-without"])
@pytest.mark.parametrize("k,zeros", CASES)
def test_sibling_rule_is_exact(replacement, k, zeros):
    gen = torch.Generator().manual_seed(10 * k + zeros)
    for _ in range(4):
        p, q = rand_dist(gen), rand_dist(gen, zeros)
        if not replacement and k > V - zeros:
            continue
        assert torch.allclose(output_law(p, q, k, replacement), p.double(), atol=2e-6)


def test_sequoia_fallback_past_the_support_is_exact():
    """q has 2 tokens of support and 4 siblings are drawn: the last two come from the uniform fallback."""
    gen = torch.Generator().manual_seed(3)
    for _ in range(4):
        p, q = rand_dist(gen), rand_dist(gen, zeros=3)
        law = output_law(p, q, 4, replacement=False)
        assert torch.allclose(law, p.double(), atol=2e-6)


def test_cover_property_sequoia_vs_specinfer():
    """Sequoia §3.2.2 (the cover property): P = [1, 0], Q = [.5, .5], two siblings: without replacement always accepts,
    with replacement accepts 75% of the time."""
    p, q = torch.tensor([1.0, 0.0]), torch.tensor([0.5, 0.5])
    for cands in ([0, 1], [1, 0]):
        s = sibling_schedule(p, q, cands, replacement=False)
        reach = 1.0
        for a in s.accept_probs:
            reach *= 1 - a
        assert reach == 0.0
    s = sibling_schedule(p, q, [1, 1], replacement=True)
    assert s.accept_probs == [0.0, 0.0] and s.duplicate == [False, True]


@pytest.mark.parametrize("wrong", ["q-before-residual", "no-renormalise"])
def test_wrong_update_order_is_biased(wrong):
    """MCSD Algorithm 2 / Eq. 10: updating q before the residual (or not renormalising q) is biased."""

    def swapped(res, d, x, rejected):
        if wrong == "q-before-residual":
            d = d.clone()
            d[x] = 0.0
            d = d / d.sum()
            return acc.residual(res, d), d
        res = acc.residual(res, d)
        d = d.clone()
        d[x] = 0.0
        return res, d  # right order, but q is not renormalised

    gen = torch.Generator().manual_seed(0)
    p, q = rand_dist(gen), rand_dist(gen)
    original = acc.reject_without_replacement
    try:
        acc.reject_without_replacement = swapped
        law = output_law(p, q, 2, replacement=False)
    finally:
        acc.reject_without_replacement = original
    assert (law - p.double()).abs().max() > 0.01


def test_greedy_rule_matches_target_argmax():
    p = torch.tensor([0.0, 0.0, 1.0, 0.0])
    s = greedy_schedule(p, [1, 2, 3])
    assert s.accept_probs == [0.0, 1.0, 0.0]
    assert first_accepted(s.accept_probs, lambda: pytest.fail("greedy must not draw"))[0] == 1
    s = greedy_schedule(p, [0, 3])
    assert first_accepted(s.accept_probs, lambda: 0.5)[0] is None and int(s.final_residual.argmax()) == 2
    logits = torch.tensor([0.1, 3.0, -1.0, 2.0])
    assert greedy_candidates(logits, 3, replacement=False) == [1, 3, 0]
    assert greedy_candidates(logits, 3, replacement=True) == [1, 1, 1]


def test_draws_without_replacement_follow_the_sequential_law():
    from scipy import stats

    gen = torch.Generator().manual_seed(1)
    q = rand_dist(gen, zeros=1)
    law = candidate_law(q, 2, replacement=False)
    runs = 8000
    counts = {}
    for _ in range(runs):
        c = tuple(draw_candidates(q, 2, False, gen))
        counts[c] = counts.get(c, 0) + 1
    assert set(counts) <= set(law)
    keys = sorted(law)
    pvalue = stats.chisquare([counts.get(c, 0) for c in keys], [law[c] * runs for c in keys]).pvalue
    assert pvalue > 1e-3


def test_draws_with_replacement_follow_q():
    """``core.sampling.draws`` (inverse CDF, what every sampled token goes through): chi-square of 20000
    draws against q with a zero-mass token, which must never appear. With 3 degrees of freedom the
    test rejects at p < 1e-3 any law off by 0.03 in total variation with probability > 0.99
    (noncentrality 20000 * sum (p - q)^2 / q >= 20000 * (2 * 0.03)^2 = 72 by Cauchy-Schwarz)."""
    from scipy import stats

    from specviz.core.sampling import draws

    gen = torch.Generator().manual_seed(3)
    q = rand_dist(gen, zeros=1)
    counts = torch.bincount(torch.tensor(draws(q, 20000, gen)), minlength=V)
    assert int(counts[q == 0].sum()) == 0
    live = q > 0
    expected = q[live].double() / q[live].double().sum() * 20000
    assert stats.chisquare(counts[live].double().tolist(), expected.tolist()).pvalue > 1e-3


def test_a_draw_at_the_top_of_the_cdf_lands_on_the_last_token_with_mass(monkeypatch):
    """A uniform that rounds ``u * total`` up to the total must not pick a trailing zero-mass token."""
    from specviz.core.sampling import draws

    q = torch.tensor([0.25, 0.0, 0.75, 0.0, 0.0])
    monkeypatch.setattr(torch, "rand", lambda *a, **k: torch.tensor([1.0], dtype=torch.float64))
    assert draws(q, 1, torch.Generator()) == [2]


def test_draws_cap_or_fall_back_past_the_support():
    gen = torch.Generator().manual_seed(2)
    q = torch.tensor([0.5, 0.0, 0.5, 0.0, 0.0])
    assert sorted(draw_candidates(q, 4, False, gen)) == [0, 2]
    c = draw_candidates(q, 4, False, gen, fallback=True)
    assert sorted(c[:2]) == [0, 2] and len(set(c)) == 4 and set(c[2:]) <= {1, 3, 4}
    assert draw_probs(q, c, False)[2:] == [1 / 3, 1 / 2]


def test_schedule_draft_probs_are_the_draw_time_probabilities():
    gen = torch.Generator().manual_seed(5)
    p, q = rand_dist(gen), rand_dist(gen)
    cands = [int(x) for x in torch.multinomial(q, 3, replacement=False, generator=gen)]
    s = sibling_schedule(p, q, cands, replacement=False)
    assert s.draft_probs == pytest.approx(draw_probs(q, cands, False), rel=1e-5)


# ---- rule objects (core.rules) -------------------------------------------------------------------

from specviz.core.rules import ExactMatch, MultiCandidate, OverAcceptance, rule_for  # noqa: E402
from specviz.core.sampling import residual, tv_distance  # noqa: E402
from specviz.errors import InvalidParameterError  # noqa: E402


def one_token_law(rule, p, q):
    """Exact output law of one candidate drawn from q and tested by ``rule`` (enumerated over x)."""
    law = torch.zeros(V, dtype=torch.float64)
    for x in range(V):
        if q[x] <= 0:
            continue
        s = rule.schedule(p, q, [x])
        a = s.accept_probs[0]
        law[x] += float(q[x]) * a
        law += float(q[x]) * (1 - a) * s.final_residual.double()
    return law


def test_rule_objects_carry_their_flags():
    assert MultiCandidate(True).lossless and ExactMatch().lossless and not OverAcceptance(0.1).lossless
    assert rule_for(OverAcceptance(0.1), greedy=True) == ExactMatch(True)
    assert rule_for(MultiCandidate(False), greedy=True) == ExactMatch(False)
    assert rule_for(MultiCandidate(False), greedy=False) == MultiCandidate(False)
    with pytest.raises(InvalidParameterError):
        OverAcceptance(-0.1)
    with pytest.raises(InvalidParameterError):
        OverAcceptance(0.1, residual="draft")


def test_sd_is_the_one_candidate_case_and_exact():
    gen = torch.Generator().manual_seed(7)
    for _ in range(4):
        p, q = rand_dist(gen), rand_dist(gen, zeros=1)
        assert torch.allclose(one_token_law(MultiCandidate(True), p, q), p.double(), atol=2e-6)
        assert MultiCandidate(True).schedule(p, q, [2]).accept_probs == sibling_schedule(p, q, [2], True).accept_probs


def test_a_one_hot_draft_is_exact():
    """Prompt lookup: a deterministic proposal x has draft law onehot(x); the rule keeps p exactly."""
    gen = torch.Generator().manual_seed(8)
    p = rand_dist(gen, zeros=2)
    for x in range(V):
        q = torch.zeros(V)
        q[x] = 1.0
        assert torch.allclose(one_token_law(MultiCandidate(True), p, q), p.double(), atol=2e-6)


@pytest.mark.parametrize("which", ["opt", "target"])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.2, 1.0])
def test_over_acceptance_law_is_b_q_plus_z_r(which, eps):
    """Theory paper §4: the one-token law of accept-with-b, else draw R, is b*q + Z*R with
    Z = sum (1 - b) q, for b = min(1, (p + eps) / q) and R = norm(max(0, p - q)) (OPT) or p (UNO)."""
    gen = torch.Generator().manual_seed(11)
    rule = OverAcceptance(eps, which)
    for _ in range(4):
        p, q = rand_dist(gen, zeros=1), rand_dist(gen, zeros=1)
        b = torch.where(
            q > 0,
            torch.clamp((p.double() + eps) / q.double().clamp_min(1e-30), max=1.0),
            torch.ones(V, dtype=torch.float64),
        )
        z = float(((1 - b) * q.double()).sum())
        r = residual(p, q).double() if which == "opt" else p.double()
        expected = b * q.double() + z * r
        assert torch.allclose(one_token_law(rule, p, q), expected, atol=2e-6)
        bias = 0.5 * float((expected - p.double()).abs().sum())
        if which == "opt":  # Theorem 5: rejection probability + TV bias = TV(p, q) for over-accepting b
            assert z + bias == pytest.approx(tv_distance(p, q), abs=2e-6)
            if eps == 0.0:
                assert bias < 2e-6  # eps = 0 is SD
        elif eps < 1.0:
            assert bias > 1e-3  # UNO is biased, even at eps = 0


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_linear_knob_sits_on_theorem_5s_line(lam):
    """Theory paper Thm 5 with the linear knob b = s + lam (1 - s), s = min(1, p/q): the one-token
    law is b*q + Z*R (OPT residual), rejection (1 - lam) TV and TV bias lam TV, by enumeration."""
    from specviz.core.theory import lambda_accept_probs

    gen = torch.Generator().manual_seed(5)
    rule = OverAcceptance(0.0, "opt", lam=lam)
    for _ in range(4):
        p, q = rand_dist(gen, zeros=1), rand_dist(gen, zeros=1)
        b = lambda_accept_probs(p, q, lam).double()
        b = torch.where(q > 0, b, torch.ones_like(b))
        z = float(((1 - b) * q.double()).sum())
        expected = b * q.double() + z * residual(p, q).double()
        assert torch.allclose(one_token_law(rule, p, q), expected, atol=2e-6)
        tv = tv_distance(p, q)
        assert z == pytest.approx((1 - lam) * tv, abs=2e-6)
        assert 0.5 * float((expected - p.double()).abs().sum()) == pytest.approx(lam * tv, abs=2e-6)


# ---- deterministic proposals: the point-mass rule (dyntree; SpecExec's verification) ----------------

from specviz.core.acceptance import point_mass_schedule  # noqa: E402
from specviz.core.rules import PointMass  # noqa: E402


def point_mass_law(p, cands):
    """Exact law of the token a group of chosen (not drawn) siblings produces under the point-mass rule."""
    s = point_mass_schedule(p, list(cands))
    law, reach = torch.zeros(V, dtype=torch.float64), 1.0
    for x, a in zip(cands, s.accept_probs):
        law[x] += reach * a
        reach *= 1 - a
    return law + reach * s.final_residual.double()


@pytest.mark.parametrize("zeros", [0, 2])
def test_point_mass_rule_is_exact_for_every_chosen_sibling_list(zeros):
    """Every ordered list of 1-4 siblings (repeats and tokens the target never makes included): the
    output law is p, and P(output c_i) = p(c_i), accepted with p without the earlier ones, renormalised."""
    gen = torch.Generator().manual_seed(20 + zeros)
    for _ in range(3):
        p = rand_dist(gen, zeros)
        for k in range(1, 5):
            for cands in itertools.product(range(V), repeat=k):
                assert torch.allclose(point_mass_law(p, cands), p.double(), atol=2e-6), cands
        s = point_mass_schedule(p, [3, 1, 3])
        left = 1 - float(p[3])
        assert s.accept_probs == pytest.approx([float(p[3]), float(p[1]) / left if left > 0 else 0.0, 0.0], abs=1e-6)
        assert s.draft_probs == [1.0, 1.0, 1.0] and s.duplicate == [False, False, True]
        assert s.rejection_mass == pytest.approx([1 - a for a in s.accept_probs])


def test_a_chosen_tree_verified_as_draws_from_q_is_biased():
    """Why dyntree needs its own rule: the top-2 tokens of q tested by MCSD's rule as if drawn from q
    (without replacement) give an output law off p by far more than the enumeration's tolerance."""
    gen = torch.Generator().manual_seed(4)
    p, q = rand_dist(gen), rand_dist(gen)
    cands = torch.topk(q, 2).indices.tolist()
    s = sibling_schedule(p, q, cands, replacement=False)
    law, reach = torch.zeros(V, dtype=torch.float64), 1.0
    for x, a in zip(cands, s.accept_probs):
        law[x] += reach * a
        reach *= 1 - a
    law += reach * s.final_residual.double()
    assert (law - p.double()).abs().max() > 0.05
    assert torch.allclose(point_mass_law(p, cands), p.double(), atol=2e-6)


def test_point_mass_rule_object():
    rule = PointMass()
    assert rule.lossless and rule.record() == {"name": "point_mass"}
    assert rule_for(rule, greedy=True) == ExactMatch(False)
    gen = torch.Generator().manual_seed(9)
    p, q = rand_dist(gen), rand_dist(gen)
    assert rule.schedule(p, q, [0, 2]).accept_probs == point_mass_schedule(p, [0, 2]).accept_probs
