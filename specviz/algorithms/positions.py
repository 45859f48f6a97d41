"""``position_record``: the distributions behind one verified position, for trace v2.

Kept small on purpose: only the ``k`` likeliest tokens of p and of q, the candidates tested there and
the token produced there are stored (sorted by p, descending), with every probability rounded to
``DIGITS`` significant digits; ``residual_mass`` (= TV(p, q), the chain rejection probability of
"A Theoretical Perspective for Speculative Decoding", Theorem 1) is summed over the whole vocabulary
before rounding.
"""
from __future__ import annotations

from typing import Callable

import torch

from specviz.trace import PositionRecord

DIGITS = 5


def rounded(values: list[float]) -> list[float]:
    """``values`` rounded to ``DIGITS`` significant digits, as the trace stores probabilities."""
    return [float(f"{v:.{DIGITS}g}") for v in values]


def _round(values: torch.Tensor) -> list[float]:
    return rounded(values.tolist())


def _top(probs: torch.Tensor, k: int) -> list[int]:
    """The ``k`` likeliest tokens with positive probability (fewer under a one-hot or truncated law)."""
    values, ids = torch.topk(probs, min(k, probs.shape[-1]))
    return [int(t) for v, t in zip(values.tolist(), ids.tolist()) if v > 0]


def position_record(parent: int | None, p: torch.Tensor, q: torch.Tensor | None, tested: list[int],
                    produced: int | None, final_residual: torch.Tensor | None, k: int,
                    root: int = 0, text: Callable[[int], str] | None = None) -> PositionRecord:
    """The ``PositionRecord`` of a position whose target law is ``p`` (warped), draft law ``q``
    (``None`` if nothing was drafted there), candidates ``tested`` in draw order, ``produced`` the
    token this position produced (accepted candidate or resampled/bonus draw, ``None`` if the step
    stopped before), and ``final_residual`` the law drawn from after every candidate was rejected."""
    chosen = set(tested)
    if produced is not None:
        chosen.add(produced)
    chosen.update(_top(p, k))
    if q is not None:
        chosen.update(_top(q, k))
    index = torch.tensor(sorted(chosen), dtype=torch.long)
    index = index[torch.argsort(p[index], descending=True, stable=True)]  # by p, ties by id
    ids = index.tolist()
    record = PositionRecord(parent, ids, _round(p[index]), root=root,
                            texts=[text(t) for t in ids] if text is not None else None)
    if q is not None:
        gap = torch.clamp(p - q, min=0.0)
        mass = float(gap.sum())
        record.q = _round(q[index])
        record.residual_mass = float(f"{mass:.{DIGITS + 2}g}")
        record.residual = _round(gap[index] / mass) if mass > 0 else _round(p[index])
    if final_residual is not None:
        record.final_residual = _round(final_residual[index])
    return record
