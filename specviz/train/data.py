"""Deterministic batches of fixed-length windows from a token stream."""

from __future__ import annotations

import numpy as np
import torch


class WindowSampler:
    """Random windows of ``seq_len + 1`` tokens (inputs and next-token labels) from one stream.

    Order is fixed by ``seed``: a ``torch.Generator`` draws the window starts, so a run with the same
    seed, stream and batch size sees exactly the same batches.
    """

    def __init__(self, stream: np.ndarray, seq_len: int, batch_size: int, seed: int):
        if len(stream) < seq_len + 2:
            raise ValueError(f"token stream of {len(stream)} tokens is shorter than one window of {seq_len + 1}")
        self.stream = torch.from_numpy(np.asarray(stream, dtype=np.int64))
        self.seq_len = seq_len
        self.batch_size = batch_size
        self.gen = torch.Generator().manual_seed(seed)

    def next(self) -> torch.Tensor:
        """A (batch, seq_len + 1) LongTensor."""
        hi = len(self.stream) - self.seq_len - 1
        starts = torch.randint(0, hi, (self.batch_size,), generator=self.gen)
        idx = starts[:, None] + torch.arange(self.seq_len + 1)[None, :]
        return self.stream[idx]


def sequential_windows(stream: np.ndarray, seq_len: int, max_windows: int | None = None) -> torch.Tensor:
    """Non-overlapping windows of ``seq_len + 1`` tokens in order (for evaluation)."""
    stream = torch.from_numpy(np.asarray(stream, dtype=np.int64))
    if len(stream) < 2:
        raise ValueError("the held-out stream is too short to evaluate on")
    seq_len = min(seq_len, len(stream) - 1)  # a tiny held-out split gives one shorter window
    n = (len(stream) - 1) // seq_len
    if max_windows is not None:
        n = min(n, max_windows)
    return torch.stack([stream[i * seq_len : i * seq_len + seq_len + 1] for i in range(n)])


class MixedSampler:
    """Alternates between a corpus ``WindowSampler`` and a fixed bank of generated sequences.

    ``generated_fraction`` of the batches come from ``bank`` (rows of equal length), the rest from the
    corpus, in an order fixed by ``seed``.
    """

    def __init__(self, corpus: WindowSampler, bank: torch.Tensor | None, generated_fraction: float, seed: int):
        self.corpus = corpus
        self.bank = bank
        self.fraction = generated_fraction if bank is not None and len(bank) else 0.0
        self.gen = torch.Generator().manual_seed(seed + 7919)

    def next(self) -> torch.Tensor:
        if self.fraction > 0 and torch.rand((), generator=self.gen).item() < self.fraction:
            rows = torch.randint(0, len(self.bank), (self.corpus.batch_size,), generator=self.gen)
            return self.bank[rows]
        return self.corpus.next()
