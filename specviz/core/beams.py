"""Beam sampling and its speculative verification: the model-independent maths of DSBD.

Qin, He, Prakriya, Cong, Sun, "Dynamic-Width Speculative Beam Decoding for LLM Inference" (AAAI 2025,
arXiv 2409.16560). Everything here is a pure function of probability vectors; the ``beam`` and
``dsbd`` algorithms call it with their models' distributions.

**Candidates.** A layer's candidate space is Omega = (current beams) x V, flattened row-major:
``index = beam * |V| + token`` (``split_candidate``). Beam sampling (Eq 1) draws from ``p_beam``
over Omega.

**Beam scores (Eq 1 numerator, in log space).** A beam's score is its cumulative target
log-likelihood ``logL = sum_t log p(x_t | x_<t, input)`` with the target's *untempered, unwarped*
distribution (``log_softmax`` of its logits): the ``p`` of Eq 1. A candidate's score is
``logL_beam + log p(token | beam)`` (``candidate_scores``); its kept beam carries that score on
(``child_logliks``). ``p_beam = T(softmax(scores over Omega))`` (``beam_distribution``): the warp T
(temperature, then top-k, then top-p, ``sampling.warp``) is applied **once, to the joint** over Omega
(so top-k is global over all beams, not per beam, and temperature tempers the whole-sequence
likelihood). Any constant added to every ``logL`` cancels. A beam whose parent was rejected gets the
score ``-inf`` (zero mass). The final answer of a run is the beam with the highest mean target
log-probability per generated token, i.e. the lowest perplexity (``best_beam``).

**Beam sampling (T > 0).** The W new beams are W i.i.d. draws from ``p_beam``, *with replacement*,
so a (beam, token) pair may be kept twice (Theorem 3.1 states the outputs are i.i.d. p_beam;
``sample_beams``). **Beam search (T = 0)** is the deterministic variant the paper names after Eq 1:
keep the W candidates with the highest score (``beam_search_select``), distinct, best first, ties
broken by the lower candidate index (earlier beam, then lower token id: the same first-index rule as
greedy ``argmax``); width 1 is greedy decoding.

**Verification of one layer (Algorithm 1, corrected; ``verify_layer``).** The m drafts of a layer
are i.i.d. from the draft's ``q_beam`` over the same Omega (the exact vector they were drawn from)
and are visited in draw order with a running target ``p'`` (initially ``p_beam``): draft x is
accepted with probability ``min(1, p'(x) / q_beam(x))`` (Eq 4 and App. A Eq 13; Algorithm 1 line 17
prints the ratio upside down, ``q/p'``: kept as ``paper_literal_ratio=True``); after an acceptance
``p'`` is reset to ``p_beam``, after a rejection ``p' <- norm(max(p' - q_beam, 0))`` (once). A
candidate whose parent beam was rejected has ``p_beam(x) = 0``: it is rejected with certainty and the
residual update still applies, with the full-space ``q_beam`` (the convention under which ``m`` in
the width rule is the number of drafts, all of them). Once ``width`` drafts are accepted the layer
passes and the remaining drafts are skipped (no more updates). Otherwise the layer fails: exactly
one beam is drawn from the current residual ``p'``, and the rest, up to ``fill_to`` (default
``width``), are fresh draws from ``p_beam`` (not from ``p'``). For a fixed width the kept beams are
then i.i.d. ``p_beam`` (Theorem 3.1, App. A), i.e. exactly one beam-sampling step.
At T = 0 the layer rule is ``verify_layer_greedy``: the target keeps its beam-search top W; the
layer passes iff every one of them was drafted.

**Law of the number of accepted drafts (Eqs 2-4; ``accepted_count_law``).** With ``p_1 = p_beam``
and ``p_{j+1} = norm(max(p_j - q_beam, 0))``, ``alpha_j = sum min(p_j, q_beam)`` (Eq 4);
``P~(i) = alpha_i prod_{j<i} (1 - alpha_j)`` is the chance that draft i is the first accepted (Eq 3);
``P(n, k) = sum_{i=1}^{n} P~(i) P(n - i, k - 1)`` (Eq 2: after an acceptance the remaining drafts
start the same alpha sequence again), with the base cases ``P(0, 0) = 1`` and
``P(n, 0) = prod_{j<=n} (1 - alpha_j)`` that the paper leaves implicit. This is the law of the
verification loop above run over all m drafts (the quota does not change ``P(#accepted >= K)`` for
K <= width). A residual with no mass (``alpha_j = 1``) is left as it was; later terms carry the
factor ``1 - alpha_j = 0``. The official implementation's ``get_num_acc_prob`` takes the residual
twice per draft (``p_{j+1} = norm(max(norm(max(p_j - q, 0)) - q, 0))``), which is not the law of its
own loop; it is kept as ``residual_updates=2``, for comparison only.

**Dynamic width (Eqs 5-7; ``dynamic_width``, ``width_rule``).** ``P(#accepted >= K) =
1 - sum_{k=0}^{K-1} P(m, k)`` (Eq 5 prints the sum from k = 1; ``survival(law, paper_literal=True)``
keeps that form), ``W~ = max{K : P(#accepted >= K) >= t}`` (Eq 7; K = 0 always qualifies) and
``W_L = max(W_min, W~)`` (Eq 6), capped at the number of drafts W_S. The width depends only on
(p_beam, q_beam), not on the drafts, so each layer stays exact for the width it chose; with the rule
on, the sequence of layers is beam sampling with an adaptive width, not fixed-width beam sampling.
``width_rule(..., dynamic=False)`` keeps the width at W_min (the exact fixed-width mode).

Numerics: laws and ratios are computed in float64 from the given vectors; ``p_beam`` comes out of
``sampling.warp`` in float32 (scores are shifted by their maximum first, so only score differences
meet float32 rounding).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from specviz.core.sampling import SamplingConfig, residual, sample, uniform, warp
from specviz.errors import InvalidParameterError

LayerSource = str  # "accepted" | "residual" | "fresh" | "target" (see LayerVerdict)


# --- candidates and scores (Eq 1) -------------------------------------------------------------


def split_candidate(index: int, vocab: int) -> tuple[int, int]:
    """Flat candidate index over Omega = beams x V -> (beam row, token id)."""
    return index // vocab, index % vocab


def candidate_scores(
    beam_logliks: torch.Tensor, logprobs: torch.Tensor, valid: torch.Tensor | None = None
) -> torch.Tensor:
    """``[W, V]`` scores ``logL_i + log p(v | beam_i)``: the log of Eq 1's numerator, float64.

    ``beam_logliks``: ``[W]`` cumulative target log-likelihoods; ``logprobs``: ``[W, V]`` the target's
    next-token log-probabilities per beam (``log_softmax`` of its logits); ``valid``: ``[W]`` bool,
    False for a beam whose node was rejected (its row gets ``-inf``: zero mass in p_beam). Passing the
    log of per-token *warped* distributions instead (the official code's extra warp) also works:
    tokens warped out get ``-inf``.
    """
    if logprobs.dim() != 2 or beam_logliks.shape != logprobs.shape[:1]:
        raise ValueError(
            f"beam_logliks {tuple(beam_logliks.shape)} must be [W] for logprobs [W, V], "
            f"got logprobs {tuple(logprobs.shape)}"
        )
    scores = beam_logliks.double()[:, None] + logprobs.double()
    if valid is not None:
        scores = scores.masked_fill(~valid.bool()[:, None], float("-inf"))
    return scores


def beam_distribution(scores: torch.Tensor, sampling: SamplingConfig) -> torch.Tensor:
    """``p_beam = T(softmax(scores))`` over the flattened candidates (Eq 1; T on the joint, once).

    ``scores``: ``[W, V]`` or flat, from ``candidate_scores``. Returns a flat float32 vector of
    length ``W * V``. The same function with the draft's scores gives ``q_beam`` (any draft scores
    are a valid proposal, e.g. restarted at 0 each iteration as in the official code, provided the
    drafts are drawn from, and verified against, this exact vector). At temperature 0 ``warp``
    returns the one-hot of the best candidate; beam search there uses ``beam_search_select``.
    """
    flat = scores.reshape(-1).double()
    top = flat.max()
    if not torch.isfinite(top):
        raise ValueError("every candidate has score -inf: no beam is left to extend")
    return warp(flat - top, sampling)


def child_logliks(scores: torch.Tensor, kept: Sequence[int]) -> torch.Tensor:
    """Cumulative log-likelihoods of the kept beams: their candidates' scores (float64, ``[len(kept)]``)."""
    flat = scores.reshape(-1).double()
    return flat[torch.as_tensor(list(kept), dtype=torch.long)]


def sample_beams(p_beam: torch.Tensor, width: int, generator: torch.Generator) -> list[int]:
    """One beam-sampling step (Eq 1): ``width`` i.i.d. candidates from ``p_beam``, with replacement."""
    if width < 1:
        raise InvalidParameterError(f"width must be at least 1, got {width}.")
    return [int(i) for i in torch.multinomial(p_beam, width, replacement=True, generator=generator)]


def beam_search_select(scores: torch.Tensor, width: int) -> list[int]:
    """Deterministic beam search (T = 0; the paper's "deterministic beam sampling" after Eq 1): the
    ``width`` distinct candidates with the highest score, best first, ties to the lower flat index;
    candidates scored ``-inf`` are never kept (fewer come back if fewer are finite)."""
    if width < 1:
        raise InvalidParameterError(f"width must be at least 1, got {width}.")
    flat = scores.reshape(-1).double()
    order = torch.sort(flat, descending=True, stable=True).indices
    return [int(i) for i in order[:width] if torch.isfinite(flat[i])]


def best_beam(logliks: Sequence[float] | torch.Tensor, lengths: Sequence[int] | torch.Tensor) -> int:
    """Index of the output beam with the highest mean target log-probability per generated token
    (lowest perplexity); beams of equal length compare by cumulative log-likelihood; ties: first."""
    ll = torch.as_tensor(logliks, dtype=torch.float64)
    n = torch.as_tensor(lengths, dtype=torch.float64).clamp_min(1.0)
    return int(torch.argmax(ll / n))


# --- law of the number of accepted drafts (Eqs 2-4) and the width rule (Eqs 5-7) ---------------


def residual_sequence(p: torch.Tensor, q: torch.Tensor, m: int, residual_updates: int = 1) -> list[torch.Tensor]:
    """``p_1 .. p_m``: ``p_1 = p``, ``p_{j+1} = norm(max(p_j - q, 0))`` (App. A), the running target
    each successive rejected draft is tested against. ``residual_updates=2`` is the official code's
    double update (not the law of the loop; comparison only)."""
    if residual_updates not in (1, 2):
        raise ValueError("residual_updates is 1 (the verification loop) or 2 (the official code's helper)")
    out, cur = [], p.double()
    qd = q.double()
    for _ in range(m):
        out.append(cur)
        for _ in range(residual_updates):
            cur = residual(cur, qd)
    return out


def acceptance_rates(p: torch.Tensor, q: torch.Tensor, m: int, residual_updates: int = 1) -> torch.Tensor:
    """``alpha_1 .. alpha_m`` (Eq 4): ``alpha_j = sum_x min(p_j(x), q(x))``, the chance that draft j
    is accepted given drafts 1..j-1 were all rejected since the last reset. float64 ``[m]``."""
    qd = q.double()
    rates = [torch.minimum(pj, qd).sum() for pj in residual_sequence(p, q, m, residual_updates)]
    return torch.stack(rates).clamp(0.0, 1.0) if rates else torch.zeros(0, dtype=torch.float64)


def accepted_count_law(p: torch.Tensor, q: torch.Tensor, m: int, residual_updates: int = 1) -> torch.Tensor:
    """Law of the number of accepted drafts, ``[P(m, 0), ..., P(m, m)]`` (float64, length m + 1).

    ``p``: the target beam distribution ``p_beam`` over the layer's candidates; ``q``: the draft's
    ``q_beam`` the m drafts were drawn from (i.i.d.); all m drafts are verified in turn with the
    single-residual update and the reset after each acceptance (Eqs 2-4 with the base cases
    ``P(0, 0) = 1``, ``P(n, 0) = prod_{j<=n} (1 - alpha_j)``). ``residual_updates=2``: the official
    ``get_num_acc_prob`` (double residual), which is *not* this law.
    """
    if p.dim() != 1 or p.shape != q.shape:
        raise ValueError(f"p and q must be 1-D of the same length, got {tuple(p.shape)} and {tuple(q.shape)}")
    if m < 0:
        raise ValueError(f"m (number of drafts) must be >= 0, got {m}")
    alpha = acceptance_rates(p, q, m, residual_updates)
    survive = torch.cumprod(torch.cat([torch.ones(1, dtype=torch.float64), 1.0 - alpha]), 0)  # prod_{j<=n}
    first = alpha * survive[:-1]  # Eq 3: draft i is the first accepted
    table = torch.zeros(m + 1, m + 1, dtype=torch.float64)
    table[:, 0] = survive  # P(n, 0); P(0, 0) = 1
    for n in range(1, m + 1):
        for k in range(1, n + 1):  # Eq 2
            table[n, k] = sum(first[i - 1] * table[n - i, k - 1] for i in range(1, n - k + 2))
    return table[m]


def survival(law: torch.Tensor, paper_literal: bool = False) -> torch.Tensor:
    """``[P(#accepted >= K) for K = 0..m]`` (Eq 5 with the sum starting at k = 0, as tail sums).

    ``paper_literal=True``: Eq 5 as printed, ``1 - sum_{k=1}^{K-1} P(m, k)``, which adds P(m, 0) to
    every K >= 1 (wrong; kept to show the difference)."""
    law = law.double()
    tails = torch.flip(torch.cumsum(torch.flip(law, [0]), 0), [0]).clamp(0.0, 1.0)
    if paper_literal:
        tails = tails.clone()
        tails[1:] = (tails[1:] + law[0]).clamp(max=1.0)
        tails[0] = 1.0
    return tails


def dynamic_width(law: torch.Tensor, threshold: float, min_width: int, max_width: int | None = None) -> int:
    """Eqs 6-7: ``max(min_width, largest K with P(#accepted >= K) >= threshold)``, capped at
    ``max_width`` (default: the number of drafts, ``len(law) - 1``)."""
    max_width = len(law) - 1 if max_width is None else max_width
    _check_width_params(threshold, min_width, max_width)
    return min(max(min_width, _unfloored_width(survival(law), threshold)), max_width)


def _unfloored_width(surv: torch.Tensor, threshold: float) -> int:
    """Eq 7: the largest K with P(#accepted >= K) >= threshold (K = 0 always qualifies)."""
    return max(k for k in range(len(surv)) if k == 0 or float(surv[k]) >= threshold)


def _check_width_params(threshold: float, min_width: int, max_width: int) -> None:
    if not 0.0 <= threshold <= 1.0:
        raise InvalidParameterError(f"threshold must be in [0, 1], got {threshold!r}.")
    if min_width < 1:
        raise InvalidParameterError(f"min_width must be at least 1, got {min_width!r}.")
    if max_width < min_width:
        raise InvalidParameterError(f"min_width ({min_width}) must not exceed width ({max_width}).")


@dataclass(frozen=True)
class WidthChoice:
    """The width chosen before verifying one layer, and the estimate behind it (for the trace).

    ``width``: W_L^(l) (Eq 6), how many acceptances the layer needs; ``unfloored``: W~ (Eq 7);
    ``law``: P(W_S, k) for k = 0..W_S (Eq 2); ``survival``: P(#accepted >= K) (Eq 5).
    """

    width: int
    unfloored: int
    law: tuple[float, ...]
    survival: tuple[float, ...]
    threshold: float
    min_width: int
    dynamic: bool

    @property
    def pass_probability(self) -> float:
        """P(the layer passes) = P(#accepted >= width)."""
        return self.survival[self.width] if self.width < len(self.survival) else 0.0

    @property
    def beta_min(self) -> float:
        """beta_{W_min} = P(#accepted >= W_min) (Theorem 3.2)."""
        return self.survival[self.min_width] if self.min_width < len(self.survival) else 0.0

    @property
    def expected_accepted(self) -> float:
        """E[#accepted] = sum_k k P(W_S, k)."""
        return sum(k * v for k, v in enumerate(self.law))


def width_rule(
    p_beam: torch.Tensor, q_beam: torch.Tensor, drafts: int, threshold: float, min_width: int, dynamic: bool = True
) -> WidthChoice:
    """The width of one layer from (p_beam, q_beam) and the number of drafts W_S (Eqs 2-7).

    ``dynamic=False`` keeps the width at ``min_width`` (fixed-width, exact beam sampling) but still
    reports the law. The choice never looks at the drafts themselves."""
    _check_width_params(threshold, min_width, drafts)
    law = accepted_count_law(p_beam, q_beam, drafts)
    surv = survival(law)
    tilde = _unfloored_width(surv, threshold)
    width = dynamic_width(law, threshold, min_width, drafts) if dynamic else min_width
    return WidthChoice(
        width, tilde, tuple(float(v) for v in law), tuple(float(v) for v in surv), float(threshold), min_width, dynamic
    )


# --- one verified layer (Algorithm 1, corrected) ----------------------------------------------


@dataclass
class LayerVerdict:
    """What one layer's verification did.

    Per draft (draw order): ``status`` ``accepted`` / ``rejected`` / ``skipped`` (quota already met);
    a draft whose parent beam was rejected has ``p_residual`` 0 and is ``rejected`` with
    ``accept_prob`` 0 (the caller may show it as auto-rejected); ``accept_prob`` the probability the
    rule used, ``p_residual`` the running target ``p'(x)`` it was tested against, ``draw`` the uniform
    (None when the outcome was certain or the draft skipped), ``rejection_mass`` ``sum max(p' - q, 0)``
    at that draft (= P(reject | reached), the residual's mass before normalising).
    Per kept beam (output order): the candidate, its ``source`` (``accepted`` draft, ``residual``
    draw after a failed layer, ``fresh`` draw from p_beam, or ``target`` at T = 0 for a beam the
    target kept that was not drafted), and the index of the draft it is (``kept_draft``, else None).
    ``final_residual``: the p' the repair beam was drawn from (failed layers only).
    """

    kept: list[int] = field(default_factory=list)
    sources: list[LayerSource] = field(default_factory=list)
    kept_draft: list[int | None] = field(default_factory=list)
    status: list[str] = field(default_factory=list)
    accept_probs: list[float | None] = field(default_factory=list)
    p_residual: list[float | None] = field(default_factory=list)
    draws: list[float | None] = field(default_factory=list)
    rejection_mass: list[float | None] = field(default_factory=list)
    passed: bool = False
    final_residual: torch.Tensor | None = field(default=None, repr=False)

    @property
    def n_accepted(self) -> int:
        return self.status.count("accepted")

    def _skip(self) -> None:
        self.status.append("skipped")
        for col in (self.accept_probs, self.p_residual, self.draws, self.rejection_mass):
            col.append(None)


def verify_layer(
    p_beam: torch.Tensor,
    q_beam: torch.Tensor,
    drafts: Sequence[int],
    width: int,
    generator: torch.Generator,
    fill_to: int | None = None,
    paper_literal_ratio: bool = False,
) -> LayerVerdict:
    """Verify one draft layer (Algorithm 1 lines 12-27, corrected; see the module docstring).

    ``p_beam``, ``q_beam``: flat target and draft beam distributions over the layer's candidates;
    ``drafts``: the drafted candidate indices in draw order (i.i.d. from ``q_beam``); ``width``:
    W_L^(l), the acceptances needed to pass; ``fill_to``: beams returned by a failed layer (default
    ``width``; the official code uses W_S). Randomness: one U(0, 1) per uncertain test and the
    repair draws, all from ``generator``. ``paper_literal_ratio=True`` uses Algorithm 1's printed
    ``min(1, q/p')`` (wrong: not p_beam-distributed).
    """
    fill_to = width if fill_to is None else fill_to
    if width < 1 or fill_to < width:
        raise InvalidParameterError(f"width must be >= 1 and fill_to >= width, got {width} and {fill_to}.")
    p = p_beam.double()
    q = q_beam.double()
    cur = p
    out = LayerVerdict()
    accepted: list[int] = []
    for i, x in enumerate(drafts):
        if len(accepted) == width:
            out._skip()
            continue
        qx, px = float(q[x]), float(cur[x])
        if qx <= 0.0:
            raise ValueError(f"draft {i} (candidate {x}) has draft probability 0: it cannot have been drawn")
        a = (1.0 if px <= 0.0 else min(1.0, qx / px)) if paper_literal_ratio else min(1.0, px / qx)
        u = uniform(generator) if 0.0 < a < 1.0 else None
        out.accept_probs.append(a)
        out.p_residual.append(px)
        out.draws.append(u)
        out.rejection_mass.append(float(torch.clamp(cur - q, min=0.0).sum()))
        if a >= 1.0 or (u is not None and u < a):
            out.status.append("accepted")
            accepted.append(i)
            out.kept.append(int(x))
            out.sources.append("accepted")
            out.kept_draft.append(i)
            cur = p  # reset after an acceptance
        else:
            out.status.append("rejected")
            cur = residual(cur, q)  # one residual update per rejection
    if len(accepted) == width:
        out.passed = True
        return out
    return _repair_failed_layer(out, cur, p, fill_to, generator)


def _repair_failed_layer(
    out: LayerVerdict, cur: torch.Tensor, p: torch.Tensor, fill_to: int, generator: torch.Generator
) -> LayerVerdict:
    """A failed layer's beams after its accepted ones: one draw from the final residual ``cur``, then fresh
    draws from ``p`` up to ``fill_to`` (Algorithm 1, corrected; the module docstring)."""
    out.final_residual = cur
    out.kept.append(sample(cur, generator))
    out.sources.append("residual")
    out.kept_draft.append(None)
    while len(out.kept) < fill_to:
        out.kept.append(sample(p, generator))
        out.sources.append("fresh")
        out.kept_draft.append(None)
    return out


def verify_layer_greedy(target_scores: torch.Tensor, drafts: Sequence[int], width: int) -> LayerVerdict:
    """Temperature 0: the target keeps its beam-search top ``width`` (``beam_search_select`` on its
    candidate scores); a draft is accepted iff it is one of them (first occurrence); the layer passes
    iff every kept candidate was drafted. Kept beams come best first; undrafted ones are ``target``."""
    top = beam_search_select(target_scores, width)
    out = LayerVerdict()
    match: dict[int, int] = {}
    for i, x in enumerate(drafts):
        hit = x in top and x not in match
        if hit:
            match[int(x)] = i
        out.status.append("accepted" if hit else "rejected")
        out.accept_probs.append(1.0 if hit else 0.0)
        out.p_residual.append(None)
        out.draws.append(None)
        out.rejection_mass.append(None)
    for x in top:
        out.kept.append(x)
        out.sources.append("accepted" if x in match else "target")
        out.kept_draft.append(match.get(x))
    out.passed = len(top) == width and all(x in match for x in top)
    return out
