"""Exact quantities of "A Theoretical Perspective for Speculative Decoding Algorithm" (Yin, Chen,
Huang, Wang; NeurIPS 2024, arXiv 2411.00841): rejections of speculative decoding (SD, Algorithm 1)
and batch SD (Algorithm 4), and the rejection / bias trade-off of relaxed acceptance (Thms 4-5).

**Notation.** specviz's convention everywhere: ``p`` is the TARGET, ``q`` the DRAFT. The paper uses
the reverse (its ``p`` is the draft, its ``q`` the target); formulas quoted from it below are
rewritten in specviz's letters. All functions work on the last dimension (the vocabulary), broadcast
over leading ones, accept tensors, numpy arrays or lists, and compute in float64.

Markov-chain toys (the paper's App. F): ``P[n]`` and ``Q[n]`` are ``[V, V]`` transition matrices for
output position ``n + 1`` (row = previous token ``x_n``, column = next token), target and draft
respectively, ``n = 0 .. T - 1``; ``prompt`` is the law of ``x_0``. Expectations over prefixes are
under the *target* chain (Thm 1: the output of an unbiased method is distributed as the target).
"""

from __future__ import annotations

import math
from typing import Literal, Sequence

import torch

Array = torch.Tensor | Sequence[float]
Fallback = Literal["corrected", "literal_line28", "literal_inside_loop"]


def as64(x) -> torch.Tensor:
    """``x`` as a float64 tensor (no copy when it already is one)."""
    return torch.as_tensor(x, dtype=torch.float64)


def tv(p: Array, q: Array) -> torch.Tensor:
    """Total variation ``0.5 * sum |p - q| = sum max(0, p - q)``; the SD rejection probability
    of one position (Thm 1). Batched version of ``specviz.core.sampling.tv_distance``."""
    p, q = as64(p), as64(q)
    return 0.5 * (p - q).abs().sum(-1)


def residual(p: Array, q: Array) -> tuple[torch.Tensor, torch.Tensor]:
    """``(norm(max(0, p - q)), sum max(0, p - q))``: the SD resampling law and its mass (= TV(p, q)).

    Normalised by its own sum, not by a separately computed TV. Rows with zero mass (p == q) return
    ``p`` itself, as ``specviz.core.sampling.residual`` does for one vector.
    """
    p, q = as64(p), as64(q)
    h = (p - q).clamp_min(0.0)
    mass = h.sum(-1)
    law = torch.where(mass.unsqueeze(-1) > 0, h / mass.clamp_min(1e-300).unsqueeze(-1), p.expand_as(h))
    return law, mass


# ---------------------------------------------------------------- batch SD, one position (Alg. 4 root)


def residual_chain(p: Array, q: Array, num_drafts: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Thm 3's chain ``p^1 = p, p^{m+1} = norm(max(0, p^m - q))``.

    Returns ``(r, p^{M+1})`` with ``r[..., m-1] = TV(p^m, q)``, the probability that root m is rejected
    given roots 1..m-1 were (all M roots are i.i.d. draws from the same draft ``q``).
    """
    if num_drafts < 1:
        raise ValueError(f"num_drafts must be >= 1, got {num_drafts}.")
    pm, q = as64(p), as64(q)
    rs = []
    for _ in range(num_drafts):
        pm, r = residual(pm, q)
        rs.append(r)
    return torch.stack(rs, -1), pm


def batch_root_rejection(p: Array, q: Array, num_drafts: int) -> torch.Tensor:
    """``prod_m TV(p^m, q)``: probability that all M roots of Algorithm 4 are rejected."""
    return residual_chain(p, q, num_drafts)[0].prod(-1)


def batch_improvement(p: Array, q: Array, num_drafts: int) -> torch.Tensor:
    """Single-token batch improvement ``BI = TV(p, q) - prod_{m=1}^M TV(p^m, q)`` (Sec. 3.2, >= 0)."""
    return tv(p, q) - batch_root_rejection(p, q, num_drafts)


def batch_improvement_uniform(ratio: float, num_drafts: int) -> float:
    """Paper's closed form (Sec. 3.2): target uniform on V' within the draft's uniform support V,
    ``r = |V| / |V'|``: ``BI = (1 - 1/r) - (1 - 1/r)^M``."""
    a = 1.0 - 1.0 / ratio
    return a - a**num_drafts


def batch_improvement_bernoulli(draft: float, target: float, num_drafts: int) -> float:
    """Paper's closed form (Sec. 3.2): draft Ber(u), target Ber(v), ``u >= v``:
    ``BI = |u - v| (1 - u^{M-1})``. (The paper writes p ~ Ber(u) for its draft p.)"""
    if draft < target:
        raise ValueError("the closed form needs draft >= target (u >= v).")
    return abs(draft - target) * (1.0 - draft ** (num_drafts - 1))


def batch_root_law(p: Array, q: Array, num_drafts: int, fallback: Fallback = "corrected") -> torch.Tensor:
    """Exact law of the token Algorithm 4 outputs at a round's first position.

    Root m is tried against ``p^m`` and accepted with ``min(1, p^m / q)``, so it contributes
    ``(prod_{j<m} r_j) min(q, p^m)``. ``fallback`` is what is sampled when roots are rejected:

    * ``"corrected"``: after all M roots, ``p^{M+1}`` (the already-updated residual). Unbiased: the
      law is ``p`` (telescoping ``p^m = min(q, p^m) + r_m p^{m+1}``).
    * ``"literal_line28"`` (BIASED, printed line 28 read literally, fallback after the loop):
      ``norm(max(0, p^{M+1} - q)) = p^{M+2}``, one residual too far.
    * ``"literal_inside_loop"`` (BIASED, printed lines 25-29 inside the m loop): the fallback fires
      after the first rejected root and samples ``p^3``; roots 2..M are never tried.
    """
    p, q = as64(p), as64(q)
    tried = 1 if fallback == "literal_inside_loop" else num_drafts
    extra = 0 if fallback == "corrected" else 1
    law = torch.zeros_like(p + q)
    pm, reach = p, torch.ones(law.shape[:-1], dtype=torch.float64)
    for _ in range(tried):
        law = law + reach.unsqueeze(-1) * torch.minimum(q, pm)
        pm, r = residual(pm, q)
        reach = reach * r
    for _ in range(extra):
        pm = residual(pm, q)[0]
    return law + reach.unsqueeze(-1) * pm


# ---------------------------------------------------------------- Markov chains: Thms 1 and 3, Prop 1


def _chain_args(P: Array, Q: Array, prompt: Array) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    P, Q, prompt = as64(P), as64(Q), as64(prompt)
    if P.shape != Q.shape or P.dim() != 3 or P.shape[-1] != P.shape[-2] or prompt.shape != P.shape[-1:]:
        raise ValueError(
            f"need P, Q of shape [T, V, V] and prompt [V]; got {tuple(P.shape)}, "
            f"{tuple(Q.shape)}, {tuple(prompt.shape)}."
        )
    return P, Q, prompt


def sd_rejections_per_position(P: Array, Q: Array, prompt: Array) -> torch.Tensor:
    """Thm 1 on a Markov chain, exactly: ``E[R_n] = sum_x Pr_p(x_{n-1} = x) TV(P[n](x, .), Q[n](x, .))``.

    Returns the ``[T]`` per-position expectations; their sum is ``E[N_rej]`` of SD (Algorithm 1,
    lookahead K = T, no bonus token) and, by Thm 2, of the best unbiased rejection-based method.
    """
    P, Q, prompt = _chain_args(P, Q, prompt)
    marg, out = prompt, []
    for n in range(P.shape[0]):
        out.append((marg * tv(P[n], Q[n])).sum())
        marg = marg @ P[n]
    return torch.stack(out)


def batch_rejections_per_position(P: Array, Q: Array, prompt: Array, num_drafts: int | None) -> torch.Tensor:
    """Thm 3 on a Markov chain, exactly (``num_drafts=None``: the M -> infinity limit of Prop 1).

    ``E[R_n] = E_p[TV_n] - sum_x F_{n-1}(x) (TV_n(x) - Pi_n(x))`` with ``Pi_n = prod_m r_m`` and
    ``F_{n-1}(x) = Pr(x_{n-1} = x, position n starts a round)`` (the paper's ``f``, eq. 22, marginalised;
    ``F_0 = prompt``: position 1 always starts a round). Recursion:
    ``F_n = (marg - F_{n-1}) @ h_n + (F_{n-1} Pi_n) @ p^{M+1}_n`` with ``h_n = max(0, P[n] - Q[n])``.
    The limit uses ``Pi = 0`` (Prop 1), valid when the draft covers the target's support.
    ``num_drafts=1`` equals ``sd_rejections_per_position``.
    """
    P, Q, prompt = _chain_args(P, Q, prompt)
    marg, F, out = prompt, prompt, []
    for n in range(P.shape[0]):
        tvn = tv(P[n], Q[n])
        h = (P[n] - Q[n]).clamp_min(0.0)
        if num_drafts is None:
            pi, tail = torch.zeros_like(tvn), torch.zeros_like(h)
        else:
            rs, last = residual_chain(P[n], Q[n], num_drafts)
            pi = rs.prod(-1)
            tail = pi.unsqueeze(-1) * last
        out.append((marg * tvn).sum() - (F * (tvn - pi)).sum())
        F = (marg - F) @ h + F @ tail
        marg = marg @ P[n]
    return torch.stack(out)


# ---------------------------------------------------------------- relaxed acceptance: Thms 4 and 5


def sd_accept_probs(p: Array, q: Array) -> torch.Tensor:
    """``min(1, p / q)``, the SD acceptance probability of each token (1 where ``q = 0``)."""
    p, q = as64(p), as64(q)
    return torch.where(q > 0, p / q.clamp_min(1e-300), torch.ones_like(p)).clamp(max=1.0)


def eps_accept_probs(p: Array, q: Array, eps: float) -> torch.Tensor:
    """Over-acceptance ``b_eps = min(1, (p + eps) / q)`` (Sec. 4.2; eps an absolute probability)."""
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}.")
    p, q = as64(p), as64(q)
    return torch.where(q > 0, (p + eps) / q.clamp_min(1e-300), torch.ones_like(p)).clamp(max=1.0)


def lambda_accept_probs(p: Array, q: Array, lam: float) -> torch.Tensor:
    """Linear knob ``b = s + lam (1 - s)``, ``s = min(1, p / q)``: lam = 0 is SD, lam = 1 accepts every
    draft. Over-accepting, so on Thm 5's line: rejection ``(1 - lam) TV`` and least bias ``lam TV``."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}.")
    s = sd_accept_probs(p, q)
    return s + lam * (1.0 - s)


def rejection_prob(b: Array, q: Array) -> torch.Tensor:
    """``Z = sum_x (1 - b(x)) q(x)``: probability that the drafted token is rejected."""
    b, q = as64(b), as64(q)
    return ((1.0 - b) * q).sum(-1)


def optimal_rejection_law(b: Array, p: Array, q: Array) -> torch.Tensor:
    """Thm 4's canonical minimiser ``P* = norm(max(0, A))``, ``A = (p - b q) / Z``.

    For ``b <= min(1, p/q)`` this is ``A`` itself (Corollary 1's forced law; unbiased). For any
    over-accepting ``b`` (e.g. ``b_eps``) it equals the SD residual ``norm(max(0, p - q))``. Where
    ``Z = 0`` nothing is resampled; ``p`` is returned as a placeholder.
    """
    b, p, q = as64(b), as64(p), as64(q)
    a = (p - b * q).clamp_min(0.0)
    s = a.sum(-1, keepdim=True)
    return torch.where(s > 0, a / s.clamp_min(1e-300), p.expand_as(a))


def rejection_law(b: Array, p: Array, q: Array, residual_kind: Literal["opt", "target"]) -> torch.Tensor:
    """What a rejection resamples from: ``"opt"`` Thm 4's ``P*`` (Decoding-OPT), ``"target"`` ``p``
    itself (Decoding-UNO, the paper's baseline)."""
    if residual_kind == "opt":
        return optimal_rejection_law(b, p, q)
    if residual_kind == "target":
        p = as64(p)
        return p.expand(torch.broadcast_shapes(p.shape, as64(b).shape))
    raise ValueError(f"residual must be 'opt' or 'target', got {residual_kind!r}.")


def output_law(b: Array, q: Array, law: Array) -> torch.Tensor:
    """One token of Algorithm 2: ``b q + Z R`` (accepted draft, else a draw from ``R``)."""
    b, q, law = as64(b), as64(q), as64(law)
    return b * q + rejection_prob(b, q).unsqueeze(-1) * law


def min_bias(b: Array, p: Array, q: Array) -> torch.Tensor:
    """Thm 4's ``Loss*_TV(b) = 0.5 sum |p - b q| - 0.5 Z``: the least TV from the target any rejection
    law can reach with acceptance ``b`` (with the factor 1/2 that App. E.2 drops)."""
    b, p, q = as64(b), as64(p), as64(q)
    return 0.5 * (p - b * q).abs().sum(-1) - 0.5 * rejection_prob(b, q)


def tradeoff(
    b: Array, p: Array, q: Array, residual_kind: Literal["opt", "target"]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rejection probability, TV(output law, p))`` of acceptance ``b`` with the given rejection law,
    the point of Fig. 4 for one position. OPT lands on Thm 5's line, UNO above it."""
    law = rejection_law(b, p, q, residual_kind)
    return rejection_prob(b, q), tv(output_law(b, q, law), p)


def eps_tradeoff(p: Array, q: Array, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Closed forms for ``b_eps``: ``(sum max(0, q - p - eps), sum min(eps, max(0, q - p)))``, the
    rejection probability and ``Loss*``; they add up to ``TV(p, q)`` (Thm 5)."""
    p, q = as64(p), as64(q)
    d = q - p
    return (d - eps).clamp_min(0.0).sum(-1), d.clamp_min(0.0).clamp(max=eps).sum(-1)


def pareto_gap(rejection: Array, bias: Array, p: Array, q: Array) -> torch.Tensor:
    """``rejection + bias - TV(p, q)``: 0 on Thm 5's front, > 0 above it; no rule is below."""
    return as64(rejection) + as64(bias) - tv(p, q)


def eps_for_rejection(p: Array, q: Array, rejection: float, tol: float = 1e-12) -> float:
    """The ``eps`` at which ``b_eps`` rejects with the given probability (in ``[0, TV]``): bisection on
    the decreasing piecewise-linear ``sum max(0, q - p - eps)``."""
    p, q = as64(p), as64(q)
    if p.dim() != 1:
        raise ValueError("eps_for_rejection works on one position (1-D p and q).")
    total = float(tv(p, q))
    if not -tol <= rejection <= total + tol:
        raise ValueError(f"rejection must be in [0, TV = {total:.6g}], got {rejection}.")
    lo, hi = 0.0, max(float((q - p).max()), 0.0)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if float(eps_tradeoff(p, q, mid)[0]) > rejection:
            lo = mid
        else:
            hi = mid
    return hi


# ---------------------------------------------------------------- measured vs theory along a run


def run_rejection_probs(
    tvs: Array, is_root: Sequence[bool] | None = None, root_rejection: Array | None = None
) -> torch.Tensor:
    """Per-position ``Pr(R_n = 1 | history)`` along one run: ``TV_n`` for SD; for batch SD ``Pi_n``
    (``root_rejection``) where position n starts a round and ``TV_n`` in a branch (Thm 3's proof).
    Summed over a run this is an unbiased estimate of E[N_rej] (the output follows the target)."""
    tvs = as64(tvs)
    if is_root is None:
        return tvs
    return torch.where(torch.as_tensor(list(is_root), dtype=torch.bool), as64(root_rejection), tvs)


def rejection_band(probs: Array, z: float = 1.96) -> tuple[float, float, float]:
    """``(expected, low, high)`` for the rejection count of a run with per-position conditional
    rejection probabilities ``probs``: mean ``sum probs`` and normal half-width
    ``z * sqrt(sum probs (1 - probs))``. ``N_rej - sum probs`` is a martingale with exactly that
    predictable variance, so the band holds even though the ``probs`` depend on the realised prefix."""
    probs = as64(probs)
    mean = float(probs.sum())
    half = z * math.sqrt(float((probs * (1.0 - probs)).sum()))
    return mean, mean - half, mean + half
