"""Toy draft/target pairs of the theory paper's simulations (App. F): non-stationary first-order
Markov chains on a few tokens. specviz's letters: ``target`` is the paper's q, ``draft`` its p."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MarkovPair:
    """``target[n]``, ``draft[n]``: ``[V, V]`` transition matrices for output position ``n + 1`` (row =
    previous token); ``prompt``: the law of ``x_0``. Float64, rows sum to 1."""

    target: np.ndarray
    draft: np.ndarray
    prompt: np.ndarray

    def __post_init__(self) -> None:
        if self.target.shape != self.draft.shape or self.target.ndim != 3:
            raise ValueError("target and draft must both be [T, V, V].")
        if self.prompt.shape != self.target.shape[-1:]:
            raise ValueError("prompt must be [V].")

    @property
    def horizon(self) -> int:
        return self.target.shape[0]

    @property
    def vocab(self) -> int:
        return self.target.shape[-1]


def _rows(x: np.ndarray) -> np.ndarray:
    return x / x.sum(-1, keepdims=True)


def paper_pair(horizon: int = 50, vocab: int = 7, seed: int = 10) -> MarkovPair:
    """The App. F setting: 7 states, seed 10, uniform prompt, one random matrix per position.

    The paper does not name its generator. Uniform entries from numpy's legacy ``RandomState(seed)``,
    rows normalised, the draft's ``T`` matrices drawn before the target's, give Thm 1's value 16.405 at
    T = 50, the paper's reported 16.41; we use that construction.
    """
    rs = np.random.RandomState(seed)
    draft = _rows(rs.rand(horizon, vocab, vocab))
    target = _rows(rs.rand(horizon, vocab, vocab))
    return MarkovPair(target=target, draft=draft, prompt=np.full(vocab, 1.0 / vocab))
