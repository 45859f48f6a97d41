"""EESD's Thompson-sampling controllers (arXiv 2406.03853, Algorithms 1-3): the posterior updates per
outcome, the draft-length law under a fixed posterior, and the Cali-TS running estimate's rules."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import integrate, stats

from specviz.core.thompson import (
    BetaState,
    CaliConfig,
    CaliState,
    beta_decide,
    beta_prior,
    beta_update,
    cali_decide,
    cali_posterior,
    cali_prior,
    cali_update,
    clipped_normal_mean,
    draft_length_pmf,
    fixed_decide,
    stop_reason,
)


@pytest.mark.parametrize("k", range(1, 7))
def test_beta_paper_update_matches_the_outcome_table(k):
    """|Q_v| = a + 1: all accepted -> (+k, +0); only the last rejected -> (+a, +1); else (+a, +2)."""
    start = BetaState(2.0, 3.0)
    for a in range(k + 1):
        new, upd = beta_update(start, k, a, "paper")
        expected = (k, 0) if a == k else (a, 1) if a == k - 1 else (a, 2)
        assert (upd.d_alpha, upd.d_beta) == expected, (k, a)
        assert (new.alpha, new.beta, new.rounds) == (2.0 + expected[0], 3.0 + expected[1], 1)
        assert upd.r == a and upd.n_trials == min(a + 2, k)  # r = |Q_v| - 1, n = min(|Q_v| + 1, |Q_d|)


@pytest.mark.parametrize("k", range(1, 7))
def test_beta_acceptance_update_is_the_textbook_one(k):
    for a in range(k + 1):
        new, upd = beta_update(BetaState(1.0, 1.0), k, a, "acceptance")
        assert (upd.d_alpha, upd.d_beta) == (a, int(a < k))


def test_paper_literal_beta_rule_breaks_the_posterior_and_the_default_does_not():
    state = beta_prior(1.0, 1.0)
    literal, upd = beta_update(state, 3, 0, "paper_literal")  # |Q_v| = a = 0 gives r = -1
    assert upd.r == -1 and literal.alpha == 0.0
    with pytest.raises(ValueError, match="not a distribution"):
        beta_decide(literal, np.random.default_rng(0))
    fine, _ = beta_update(state, 3, 0, "paper")
    assert fine.alpha == 1.0 and fine.beta == 3.0
    beta_decide(fine, np.random.default_rng(0))
    with pytest.raises(ValueError):
        beta_update(state, 2, 3)
    with pytest.raises(ValueError):
        beta_update(state, 2, 1, "nope")


def _round_length(draw_theta, rng, cap=10_000) -> int:
    """Algorithm 1's inner loop: draft, then theta and the coin; the token drawing chi = 0 is kept."""
    i = 0
    while i < cap:
        i += 1
        if not draw_theta(rng):
            return i
    return i


def _length_pvalue(lengths: list[int], p: float) -> float:
    """Chi-square p-value of observed round lengths against the geometric law P(k) = p^(k-1)(1-p)."""
    n = len(lengths)
    counts = Counter(lengths)
    kmax = 1
    while n * draft_length_pmf(p, kmax + 1) >= 5:
        kmax += 1
    obs = [counts.get(k, 0) for k in range(1, kmax + 1)] + [sum(v for k, v in counts.items() if k > kmax)]
    exp = [n * draft_length_pmf(p, k) for k in range(1, kmax + 1)]
    exp.append(n - sum(exp))
    return float(stats.chisquare(obs, exp).pvalue)


def test_draft_length_is_geometric_under_a_fixed_posterior():
    """Beta(3, 2) fixed for the round: P(chi = 1) = 0.6 at every step, so k ~ Geometric with
    P(k) = 0.6^(k-1) 0.4 and E[k] = (alpha + beta) / beta = 2.5.

    Power: 20,000 rounds. Drawing theta once per round instead (the heavy-tailed variant the paper
    does not use: E[k] = E[1/(1 - theta)] = 4) is rejected at p < 1e-12, as asserted below; a mean off
    by 0.05 (2% of 2.5) is 2.6 standard errors (sd(k) = 1.94, se = 0.0137) away."""
    state = BetaState(3.0, 2.0)
    rng = np.random.default_rng(1234)
    lengths = [_round_length(lambda g: beta_decide(state, g).chi, rng) for _ in range(20_000)]
    assert state.mean == pytest.approx(0.6) and state.mean_draft_length == pytest.approx(2.5)
    assert _length_pvalue(lengths, state.mean) > 1e-3
    assert abs(np.mean(lengths) - 2.5) < 5 * math.sqrt(0.6) / 0.4 / math.sqrt(len(lengths))

    def once_per_round(g):  # the alternative the test must reject
        theta = g.beta(3.0, 2.0)
        i = 1
        while g.random() < theta:
            i += 1
        return i

    rng = np.random.default_rng(99)
    wrong = [once_per_round(rng) for _ in range(20_000)]
    assert _length_pvalue(wrong, state.mean) < 1e-12


def test_decisions_replay_with_the_same_seed():
    state = BetaState(2.0, 5.0)
    a = [beta_decide(state, g) for g in [np.random.default_rng(7)] for _ in range(50)]
    b = [beta_decide(state, g) for g in [np.random.default_rng(7)] for _ in range(50)]
    assert a == b and len({c.theta for c in a}) == 50
    assert all(c.chi == int(c.u < c.theta) and 0 <= c.theta <= 1 for c in a)


def test_cali_posterior_blends_model_and_running_estimate():
    cfg = CaliConfig(sigma_m=0.3, sigma_s=0.25)
    first = cali_posterior(cali_prior(cfg), theta_m=0.9, config=cfg)
    assert first.w_m == 1.0 and first.mu == 0.9 and first.sigma == pytest.approx(0.3)  # n = 0: the model's prior
    for n, w in ((1, 0.41), (5, 0.12), (20, 0.03)):
        post = cali_posterior(CaliState(theta_hat=0.2, weight=10.0, n_ver=n), theta_m=0.9, config=cfg)
        assert post.w_m == pytest.approx(w, abs=0.005)
        assert post.mu == pytest.approx(post.w_m * 0.9 + (1 - post.w_m) * 0.2)
        assert 1 / post.sigma**2 == pytest.approx(1 / 0.3**2 + n / 0.25**2)  # Eq. 7, conjugate precision
    only_m = cali_posterior(CaliState(0.2, 10.0, 5), 0.9, CaliConfig(mode="model_only"))
    only_s = cali_posterior(CaliState(0.2, 10.0, 5), 0.9, CaliConfig(mode="sampling_only"))
    assert (only_m.mu, only_m.sigma) == (0.9, pytest.approx(0.3))
    assert (only_s.mu, only_s.sigma) == (0.2, pytest.approx(0.25 / math.sqrt(5)))


def test_cali_coin_rate_is_the_clipped_normal_mean():
    """P(chi = 1) = E[clip(theta, 0, 1)], theta ~ N(mu, sigma^2); 40,000 draws give se <= 0.0025."""
    for mu, sigma in ((0.9, 0.3), (0.1, 0.4), (0.5, 0.05)):
        exact = integrate.quad(
            lambda x: min(max(x, 0), 1) * stats.norm.pdf(x, mu, sigma), mu - 12 * sigma, mu + 12 * sigma, points=[0, 1]
        )[0]
        assert clipped_normal_mean(mu, sigma) == pytest.approx(exact, abs=1e-9)
    state, cfg = CaliState(0.8, 4.0, 2), CaliConfig()
    rng = np.random.default_rng(5)
    draws = [cali_decide(state, 0.3, rng, cfg) for _ in range(40_000)]
    post = draws[0].posterior
    rate = np.mean([d.coin.chi for d in draws])
    assert abs(rate - post.continue_probability) < 5 * 0.5 / math.sqrt(len(draws))
    assert any(d.theta > 1 or d.theta < 0 for d in draws) and all(0 <= d.coin.theta <= 1 for d in draws)


def _run_rounds(rule: str, outcomes) -> list[float]:
    cfg = CaliConfig(rule=rule)
    state, hats = cali_prior(cfg), []
    for k, a in outcomes:
        state, upd = cali_update(state, k, a, cfg)
        assert upd.theta_hat_after == state.theta_hat and state.n_ver == len(hats) + 1
        hats.append(state.theta_hat)
    return hats


def test_paper_literal_running_estimate_drifts_to_one_and_the_default_does_not():
    """Eq. 8 as printed gives theta_hat_t = (theta_hat_0 + t) / (t + 1) whatever was accepted."""
    nothing = [(3, 0)] * 50  # every round rejects its first draft
    literal = _run_rounds("paper_literal", nothing)
    assert literal[-1] == pytest.approx((0.5 + 50) / 51) and literal[-1] > 0.99
    assert all(b > a for a, b in zip(literal, literal[1:]))
    default = _run_rounds("draft_fraction", nothing)
    assert default[-1] == pytest.approx(0.5 / 51) and default[-1] < 0.02
    # the default tracks the fraction of committed tokens that came from the draft: 3 of every 4 here
    good = _run_rounds("draft_fraction", [(3, 3)] * 200)
    assert good[-1] == pytest.approx((0.5 + 600) / 801)
    trials = _run_rounds("trials", [(4, 1)] * 100)  # Beta-TS's statistic: r = 1 of n = 3 per round
    assert trials[-1] == pytest.approx((0.5 + 100) / 301)


def test_fixed_length_and_stop_reasons():
    assert [fixed_decide(i, 3) for i in (1, 2, 3, 4)] == [1, 1, 0, 0]
    with pytest.raises(ValueError):
        fixed_decide(1, 0)
    assert stop_reason(2, chi=0) == "chi0"
    assert stop_reason(2, chi=1) is None
    assert stop_reason(5, chi=1, k_max=5) == "k_cap"
    assert stop_reason(5, chi=0, k_max=5) == "chi0"  # the cap did not bite: the coin stopped first
    assert stop_reason(3, chi=1, k_max=5, budget=3) == "max_len"
    assert stop_reason(1, chi=1, eos=True) == "eos"
