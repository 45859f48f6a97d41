"""The theory paper's formulas (arXiv 2411.00841) in ``specviz.core.theory`` are right, checked two
ways: exact identities against independent computations (enumeration, the engine's sibling rule, the
paper's closed forms and reported values), and Monte Carlo of the algorithms on toy Markov chains
(``specviz.theory.simulate``) against the exact values. specviz letters: p = target, q = draft.

Statistical tests use fixed seeds; thresholds are 4-5 standard errors or chi-square p > 1e-4, with the
power stated where a biased variant must be caught."""

import json

import numpy as np
import pytest
import torch
from scipy import stats

from specviz.core import theory as th
from specviz.core.acceptance import sibling_schedule
from specviz.core.sampling import residual as sd_residual
from specviz.core.sampling import tv_distance
from specviz.theory.chains import MarkovPair, paper_pair
from specviz.theory.simulate import simulate_batch_sd, simulate_token


def rand_rows(gen, *shape, zeros=0):
    x = torch.rand(*shape, generator=gen, dtype=torch.float64) ** 2
    if zeros:
        x[..., :zeros] = 0.0
    return x / x.sum(-1, keepdim=True)


def tiny_pair(T=5, V=4, seed=0) -> MarkovPair:
    gen = torch.Generator().manual_seed(seed)
    return MarkovPair(
        target=rand_rows(gen, T, V, V).numpy(), draft=rand_rows(gen, T, V, V).numpy(), prompt=rand_rows(gen, V).numpy()
    )


def chi2_pvalue(counts, law):
    counts, law = np.asarray(counts, dtype=np.float64), np.asarray(law, dtype=np.float64)
    keep = law > 0
    assert counts[~keep].sum() == 0, "a zero-probability outcome was produced"
    return stats.chisquare(counts[keep], law[keep] * counts.sum()).pvalue


def seq_law(pair: MarkovPair) -> np.ndarray:
    """Exact target law of (x_0, ..., x_T), flattened."""
    law = pair.prompt
    for n in range(pair.horizon):
        law = np.einsum("...i,ij->...ij", law, pair.target[n])
    return law.reshape(-1)


def seq_index(tokens: np.ndarray, V: int) -> np.ndarray:
    idx = np.zeros(len(tokens), dtype=np.int64)
    for t in range(tokens.shape[1]):
        idx = idx * V + tokens[:, t]
    return idx


# ------------------------------------------------------------------------ exact identities


def test_tv_and_residual_agree_with_sampling_helpers():
    gen = torch.Generator().manual_seed(1)
    p, q = rand_rows(gen, 6), rand_rows(gen, 6, zeros=2)
    assert float(th.tv(p, q)) == pytest.approx(tv_distance(p, q), abs=1e-12)
    assert float(th.tv(p, q)) == pytest.approx(float((p - q).clamp_min(0).sum()), abs=1e-12)
    law, mass = th.residual(p, q)
    assert torch.allclose(law, sd_residual(p, q), atol=1e-12) and float(mass) == pytest.approx(float(th.tv(p, q)))
    same, zero = th.residual(p, p)
    assert float(zero) == 0.0 and torch.equal(same, p)


@pytest.mark.parametrize("zeros", [0, 2])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_batch_root_law_matches_the_engines_sibling_rule(m, zeros):
    """Alg. 4's root step = SpecInfer/MCSD multi-candidate verification with replacement: enumerate the
    M i.i.d. roots, run ``core.acceptance.sibling_schedule`` on each tuple, and compare laws."""
    import itertools

    gen = torch.Generator().manual_seed(10 + m + zeros)
    V = 4
    p, q = rand_rows(gen, V), rand_rows(gen, V, zeros=zeros)
    q = torch.roll(q, 1)  # zero draft mass on some tokens the target likes
    law = torch.zeros(V, dtype=torch.float64)
    all_rejected = 0.0
    for cands in itertools.product(range(V), repeat=m):
        prob = float(torch.prod(q[list(cands)]))
        if prob == 0:
            continue
        s = sibling_schedule(p, q, list(cands), replacement=True)
        reach = 1.0
        for x, a in zip(cands, s.accept_probs):
            law[x] += prob * reach * a
            reach *= 1 - a
        law += prob * reach * s.final_residual
        all_rejected += prob * reach
    assert torch.allclose(th.batch_root_law(p, q, m), law, atol=1e-12)
    assert torch.allclose(law, p, atol=1e-12)
    assert float(th.batch_root_rejection(p, q, m)) == pytest.approx(all_rejected, abs=1e-12)


def test_literal_batch_fallbacks_are_biased_and_corrected_is_not():
    gen = torch.Generator().manual_seed(3)
    p, q = rand_rows(gen, 200, 6), rand_rows(gen, 200, 6)
    for m in (1, 2, 4):
        assert torch.allclose(th.batch_root_law(p, q, m), p, atol=1e-12)
        for kind in ("literal_line28", "literal_inside_loop"):
            law = th.batch_root_law(p, q, m, kind)
            assert torch.allclose(law.sum(-1), torch.ones(200, dtype=torch.float64))
            assert float(th.tv(law, p).max()) > 0.02, (m, kind)


def test_batch_improvement_closed_forms_match_the_paper():
    # printed examples (Sec. 3.2): draft Ber(u) >= target Ber(v); target Unif(V') inside draft Unif(V)
    for m, want in zip((1, 2, 3, 5), (0.0, 0.12, 0.204, 0.30396)):
        assert th.batch_improvement_bernoulli(0.7, 0.3, m) == pytest.approx(want, abs=1e-12)
        assert float(th.batch_improvement([0.7, 0.3], [0.3, 0.7], m)) == pytest.approx(want, abs=1e-12)
    for m, want in zip((1, 2, 3, 5), (0.0, 2 / 9, 10 / 27, 0.5350)):
        assert th.batch_improvement_uniform(3, m) == pytest.approx(want, abs=1e-4)
        assert float(th.batch_improvement([1 / 3] * 3 + [0.0] * 6, [1 / 9] * 9, m)) == pytest.approx(want, abs=1e-4)
    for u in (0.55, 0.8, 0.95):
        for m in range(1, 12):
            assert float(th.batch_improvement([0.5, 0.5], [1 - u, u], m)) == pytest.approx(
                th.batch_improvement_bernoulli(u, 0.5, m), abs=1e-12
            )
    # both tend to TV(p, q) as M grows
    assert th.batch_improvement_uniform(4, 400) == pytest.approx(0.75, abs=1e-9)


def test_chain_theory_reproduces_the_papers_reported_value():
    pair = paper_pair(50)
    sd = float(th.sd_rejections_per_position(pair.target, pair.draft, pair.prompt).sum())
    assert sd == pytest.approx(16.41, abs=0.006)  # paper Sec. 3: 16.41 (ours 16.405), speed-up 3.05
    assert round(50 / sd, 2) == 3.05


def test_batch_chain_theory_structure():
    raw = tiny_pair(T=6, V=5, seed=4)
    # draft probabilities >= 0.1, so prod r_m -> 0 fast and M = 300 is at the limit
    pair = MarkovPair(target=raw.target, draft=0.5 * raw.draft + 0.1, prompt=raw.prompt)
    args = (pair.target, pair.draft, pair.prompt)
    sd = th.sd_rejections_per_position(*args)
    assert torch.allclose(th.batch_rejections_per_position(*args, 1), sd, atol=1e-12)
    totals = [float(th.batch_rejections_per_position(*args, m).sum()) for m in (1, 2, 3, 5, 10, 50, 300)]
    limit = float(th.batch_rejections_per_position(*args, None).sum())
    assert all(a > b for a, b in zip(totals, totals[1:]))  # batch improvement >= 0, grows with M
    assert 0 < limit < totals[-1] and totals[-1] - limit < 1e-6  # Prop. 1: positive limit
    # first position: E[R_1] = E_prompt[prod r_m], the single-token rule
    per = th.batch_rejections_per_position(*args, 3)
    want = (pair.prompt * th.batch_root_rejection(pair.target[0], pair.draft[0], 3).numpy()).sum()
    assert float(per[0]) == pytest.approx(want, abs=1e-12)


def test_eps_tradeoff_values_and_thm5_line():
    # spec-free check values from the closed forms: target (.1,.3,.2,.4), draft (.5,.3,.2,0), TV 0.4
    p, q = [0.1, 0.3, 0.2, 0.4], [0.5, 0.3, 0.2, 0.0]
    for eps, rej, bias, uno in (
        (0.0, 0.4, 0.0, 0.24),
        (0.1, 0.3, 0.1, 0.28),
        (0.2, 0.2, 0.2, 0.32),
        (0.5, 0.0, 0.4, 0.4),
    ):
        b = th.eps_accept_probs(p, q, eps)
        r_opt, b_opt = th.tradeoff(b, p, q, "opt")
        r_uno, b_uno = th.tradeoff(b, p, q, "target")
        assert (float(r_opt), float(b_opt), float(b_uno)) == pytest.approx((rej, bias, uno), abs=1e-12)
        assert float(r_uno) == pytest.approx(rej, abs=1e-12)
        assert th.eps_tradeoff(p, q, eps)[0].item() == pytest.approx(rej, abs=1e-12)
        assert th.eps_tradeoff(p, q, eps)[1].item() == pytest.approx(bias, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_thm4_optimum_and_thm5_front_on_random_pairs(seed):
    gen = torch.Generator().manual_seed(seed)
    p, q = rand_rows(gen, 7, zeros=seed % 3), rand_rows(gen, 7)
    total = float(th.tv(p, q))
    sd_res = th.residual(p, q)[0]
    for eps in np.linspace(0, float((q - p).max()) * 0.95, 6):
        b = th.eps_accept_probs(p, q, float(eps))
        r, bias_opt = th.tradeoff(b, p, q, "opt")
        _, bias_uno = th.tradeoff(b, p, q, "target")
        assert float(bias_opt) == pytest.approx(float(th.min_bias(b, p, q)), abs=1e-12)  # OPT reaches Loss*
        assert float(bias_uno) > float(bias_opt) + 1e-6  # UNO strictly worse (Z > 0 here)
        assert float(r + bias_opt) == pytest.approx(total, abs=1e-12)  # Thm 5
        assert torch.allclose(th.optimal_rejection_law(b, p, q), sd_res, atol=1e-12)  # P* = SD residual
        assert th.eps_for_rejection(p, q, float(r)) == pytest.approx(float(eps), abs=1e-9)
        # no rejection law beats P* (Thm 4): 300 random candidates
        cand = rand_rows(gen, 300, 7)
        assert float(th.tv(th.output_law(b, q, cand), p).min()) >= float(bias_opt) - 1e-12
    for lam in (0.0, 0.3, 1.0):
        b = th.lambda_accept_probs(p, q, lam)
        r, bias = th.tradeoff(b, p, q, "opt")
        assert (float(r), float(bias)) == pytest.approx(((1 - lam) * total, lam * total), abs=1e-12)
    # any b: rejection + Loss* >= TV, = TV only when over-accepting; under-accepting b is unbiased
    bs = torch.rand(500, 7, generator=gen, dtype=torch.float64)
    assert float(th.pareto_gap(th.rejection_prob(bs, q), th.min_bias(bs, p, q), p, q).min()) >= -1e-12
    under = 0.6 * th.sd_accept_probs(p, q)
    law = th.output_law(under, q, th.optimal_rejection_law(under, p, q))
    assert torch.allclose(law, p, atol=1e-12) and float(th.min_bias(under, p, q)) == pytest.approx(0, abs=1e-12)
    assert float(th.rejection_prob(under, q)) == pytest.approx(1 - 0.6 * (1 - total), abs=1e-12)


def test_rejection_band():
    mean, lo, hi = th.rejection_band([0.5, 0.2, 0.0, 1.0])
    assert mean == pytest.approx(1.7)
    assert hi - mean == pytest.approx(1.96 * np.sqrt(0.25 + 0.16))
    assert mean - lo == pytest.approx(hi - mean)
    probs = th.run_rejection_probs([0.3, 0.4, 0.5], is_root=[True, False, True], root_rejection=[0.1, 0.2, 0.05])
    assert probs.tolist() == pytest.approx([0.1, 0.4, 0.05])


# ------------------------------------------------------------------------ Monte Carlo of the algorithms


@pytest.mark.parametrize("m", [1, 2, 3])
def test_expected_rejections_match_thm1_thm3(m):
    """Mean N_rej over 4000 runs of Alg. 1 / Alg. 4 within 4.5 s.e. (s.e. ~0.02-0.03 here) of the exact
    value; a formula off by 0.15 (e.g. SD's value used for M = 2, which differs by > 0.2) fails."""
    pair = tiny_pair(T=8, V=5, seed=7)
    args = (pair.target, pair.draft, pair.prompt)
    exact = th.batch_rejections_per_position(*args, m).numpy()
    res = simulate_batch_sd(pair, m, 4000, seed=100 + m)
    mean, half = res.mean_and_halfwidth(z=4.5)
    assert abs(mean - exact.sum()) < half
    if m > 1:
        assert abs(float(th.sd_rejections_per_position(*args).sum()) - exact.sum()) > 2 * half
    # per position: E[R_n] within 4.5 s.e.
    freq = res.rejected.mean(0)
    se = np.sqrt(np.maximum(exact * (1 - exact), 1e-4) / 4000)
    assert np.all(np.abs(freq - exact) < 4.5 * se)
    if m == 1:  # oracle calls = rejections + 1[x_T accepted] (no bonus token)
        calls = res.calls.astype(float)
        assert np.all((res.calls - res.rejections >= 0) & (res.calls - res.rejections <= 1))
        assert abs(calls.mean() - (exact.sum() + 1 - exact[-1])) < 4.5 * calls.std() / np.sqrt(4000)


@pytest.mark.parametrize("m", [1, 3])
def test_simulated_sequences_follow_the_target(m):
    """Alg. 1 and corrected Alg. 4 are unbiased: the law of (x_0 .. x_3) over 3^4 = 81 cells matches the
    exact target chain (chi-square, 20000 runs)."""
    pair = tiny_pair(T=3, V=3, seed=11)
    res = simulate_batch_sd(pair, m, 20000, seed=5)
    counts = np.bincount(seq_index(res.tokens, 3), minlength=81)
    assert chi2_pvalue(counts, seq_law(pair)) > 1e-4


@pytest.mark.parametrize("kind", ["literal_line28", "literal_inside_loop"])
def test_literal_fallbacks_are_caught_by_simulation(kind):
    """One position, M = 2: the printed Alg. 4 read literally has a law at TV >= 0.05 from the target;
    with 20000 draws the chi-square test rejects it (power ~1); the corrected form passes."""
    gen = torch.Generator().manual_seed(1)
    V = 4
    tgt, dft = (np.broadcast_to(rand_rows(gen, V).numpy(), (1, V, V)).copy() for _ in range(2))
    pair = MarkovPair(target=tgt, draft=dft, prompt=np.eye(V)[0])
    biased = th.batch_root_law(tgt[0, 0], dft[0, 0], 2, kind).numpy()
    assert float(th.tv(biased, tgt[0, 0])) >= 0.05
    for fb, ok in (("corrected", True), (kind, False)):
        res = simulate_batch_sd(pair, 2, 20000, seed=9, fallback=fb)
        pval = chi2_pvalue(np.bincount(res.tokens[:, 1], minlength=V), tgt[0, 0])
        assert (pval > 1e-4) if ok else (pval < 1e-8), (fb, pval)
        if not ok:  # and it follows the biased law computed exactly
            assert chi2_pvalue(np.bincount(res.tokens[:, 1], minlength=V), biased) > 1e-4


@pytest.mark.parametrize("m", [1, 3])
def test_run_estimator_and_band(m):
    """N_rej minus the summed conditional rejection probabilities along the realised run (TV_n in a
    branch, prod r_m at a round's first position) has mean 0 and variance sum p(1 - p); the 1.96 band
    covers ~95% of runs."""
    pair = tiny_pair(T=10, V=5, seed=3)
    res = simulate_batch_sd(pair, m, 5000, seed=21)
    runs, T = res.rejected.shape
    n_idx = np.arange(T)
    prev = res.tokens[:, :-1]
    tvs = th.tv(pair.target[n_idx, prev], pair.draft[n_idx, prev]).numpy()
    roots = th.batch_root_rejection(pair.target[n_idx, prev], pair.draft[n_idx, prev], m).numpy()
    is_root = np.concatenate([np.ones((runs, 1), bool), res.rejected[:, :-1]], 1)
    probs = np.where(is_root, roots, tvs)
    z = res.rejections - probs.sum(1)
    var = (probs * (1 - probs)).sum(1)
    assert abs(z.mean()) < 4.5 * z.std() / np.sqrt(runs)
    assert 0.9 < z.var() / var.mean() < 1.1
    inside = np.mean(
        [th.rejection_band(probs[i])[1] <= res.rejections[i] <= th.rejection_band(probs[i])[2] for i in range(1000)]
    )
    assert 0.9 < inside <= 1.0


@pytest.mark.parametrize("kind", ["opt", "target"])
def test_biased_token_law_matches_b_q_plus_z_r(kind):
    """One token of Alg. 2 with b_eps (eps = 0.1): sampled law = b q + Z R (chi-square, 100k draws);
    rejection frequency = Z within 4.5 s.e."""
    gen = torch.Generator().manual_seed(8)
    p, q = rand_rows(gen, 6), rand_rows(gen, 6)
    b = th.eps_accept_probs(p, q, 0.1)
    law = th.rejection_law(b, p, q, kind)
    exact = th.output_law(b, q, law).numpy()
    emp = simulate_token(b.numpy(), q.numpy(), law.numpy(), 100_000, seed=1)
    assert chi2_pvalue(emp[:-1] * 100_000, exact) > 1e-4
    z = float(th.rejection_prob(b, q))
    assert abs(emp[-1] - z) < 4.5 * np.sqrt(z * (1 - z) / 100_000)
    assert chi2_pvalue(emp[:-1] * 100_000, p.numpy()) < 1e-8  # and it is biased: not the target


# ------------------------------------------------------------------------ the figures command


def test_theory_figures_command(tmp_path):
    from specviz.cli import main

    out = tmp_path / "figs"
    assert (
        main(["theory", "--figures", str(out), "--runs", "60", "--horizons", "6", "8", "--draws", "500", "--no-png"])
        == 0
    )
    names = {f.name for f in out.iterdir()}
    want = {
        "fig2_t6_running_mean.html",
        "fig2_t6_cumulative.html",
        "fig2_t6_versus_m.html",
        "fig5_t8_running_mean.html",
        "fig3_batch_improvement.html",
        "fig4_pareto.html",
        "fig4_bias_vs_eps.html",
        "plotly.min.js",
        "results.md",
        "results.json",
    }
    assert want <= names
    html = (out / "fig4_pareto.html").read_text(encoding="utf-8")
    assert 'src="plotly.min.js"' in html and "Pareto front (Thm 5)" in html
    rows = json.loads((out / "results.json").read_text(encoding="utf-8"))["rows"]
    by_q = {r["quantity"]: r for r in rows}
    small = paper_pair(6)
    exact_sd = float(th.sd_rejections_per_position(small.target, small.draft, small.prompt).sum())
    assert by_q["E[N_rej], SD (Thm 1), T = 6"]["theory"] == pytest.approx(exact_sd)
    assert by_q["max |rejection + Loss* − TV| over eps (Thm 5)"]["theory"] < 1e-12
    assert "| Fig. 2 |" in (out / "results.md").read_text(encoding="utf-8")
