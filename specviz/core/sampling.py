"""Sampling warps and draws, applied identically to draft and target distributions.

Both models' logits go through the same ``warp`` in float32 (a common source of bias in other tools
is warping only one side, or taking the p/q ratio in low precision; the guarantee of Leviathan et al.
2023, Theorem 1, holds for the warped p only when q is warped the same way).
``temperature == 0`` means greedy: the warped distribution is the one-hot of the argmax (first index
on ties), so every acceptance rule below reduces to exact-match verification.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from specviz import validation


@dataclass(frozen=True)
class SamplingConfig:
    """Temperature, top-k (0 = off) and top-p (1 = off)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        """Checked by ``specviz.validation`` (0 or [1e-3, 100]; an int >= 0; (0, 1]) and stored as exact types."""
        object.__setattr__(self, "temperature", validation.temperature(self.temperature))
        object.__setattr__(self, "top_k", validation.integer("top_k (0 disables it)", self.top_k, 0))
        object.__setattr__(
            self, "top_p", validation.number("top_p (1 disables it)", self.top_p, 0.0, 1.0, lo_open=True)
        )

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def as_dict(self) -> dict:
        return asdict(self)


def warp(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """Logits ``[..., V]`` -> float32 probabilities ``[..., V]`` after temperature, top-k, top-p.

    Order as in Hugging Face ``generate``: temperature, then top-k, then top-p (nucleus: keep the
    smallest set of most likely tokens whose mass reaches ``top_p``; the most likely token is always kept).
    """
    logits = logits.float()
    if cfg.greedy:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    logits = logits / cfg.temperature
    if 0 < cfg.top_k < logits.shape[-1]:
        kth = torch.topk(logits, cfg.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if cfg.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        sorted_probs = sorted_logits.softmax(-1)
        mass_before = sorted_probs.cumsum(-1) - sorted_probs
        drop_sorted = mass_before >= cfg.top_p
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits.softmax(-1)


def sample(probs: torch.Tensor, generator: torch.Generator) -> int:
    """One draw from a 1-D probability vector (CPU; it need not sum to 1): ``draws(probs, 1, generator)``."""
    return draws(probs, 1, generator)[0]


def draws(probs: torch.Tensor, k: int, generator: torch.Generator) -> list[int]:
    """``k`` i.i.d. draws from a 1-D non-negative vector (CPU), proportional to it, by inverse CDF.

    The cumulative sum is taken in float64 and each draw is the first index whose cumulative mass
    exceeds ``u * total`` (``u`` a float64 uniform), so a token of zero mass is never drawn and the
    law is ``probs / probs.sum()`` up to float64 rounding. One uniform per draw: ``torch.multinomial``
    draws one exponential per vocabulary entry for a single sample (about 5x slower at 4096 tokens).
    """
    cdf = probs.double().cumsum(-1)
    u = torch.rand(k, generator=generator, dtype=torch.float64) * cdf[-1]
    picks = torch.searchsorted(cdf, u, right=True).tolist()
    last = len(cdf) - 1
    if max(picks) > last or probs[min(max(picks), last)] <= 0:  # u * total rounded up to the total
        top = int(torch.nonzero(probs > 0).max())
        picks = [min(i, top) for i in picks]
    return picks


def uniform(generator: torch.Generator) -> float:
    """One U(0, 1) draw from the run's generator."""
    return float(torch.rand((), generator=generator, dtype=torch.float64).item())


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """``norm(max(0, p - q))``: the distribution to resample from after a rejection.

    Leviathan et al. 2023, Algorithm 1 / theory paper Algorithm 1. If ``p <= q`` everywhere (only
    possible when p == q up to rounding) the rejection had probability 0; return ``p`` so the caller
    still gets a valid distribution.
    """
    r = torch.clamp(p - q, min=0.0)
    total = r.sum()
    if total <= 0:
        return p
    return r / total


def tv_distance(p: torch.Tensor, q: torch.Tensor) -> float:
    """Total variation distance ``0.5 * sum |p - q|``; the SD rejection probability (theory paper Thm 1)."""
    return 0.5 * float((p - q).abs().sum().item())
