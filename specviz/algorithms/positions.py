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


_FORMAT = f"{{:.{DIGITS}g}}".format


def rounded(values: list[float]) -> list[float]:
    """``values`` rounded to ``DIGITS`` significant digits, as the trace stores probabilities."""
    return list(map(float, map(_FORMAT, values)))


def _top(probs: torch.Tensor, k: int) -> list[int]:
    """The ``k`` likeliest tokens with positive probability (fewer under a one-hot or truncated law)."""
    values, ids = torch.topk(probs, min(k, probs.shape[-1]))
    return [t for v, t in zip(values.tolist(), ids.tolist()) if v > 0]


def position_record(parent: int | None, p: torch.Tensor, q: torch.Tensor | None, tested: list[int],
                    produced: int | None, final_residual: torch.Tensor | None, k: int,
                    root: int = 0, text: Callable[[int], str] | None = None,
                    mass: float | None = None) -> PositionRecord:
    """The ``PositionRecord`` of a position whose target law is ``p`` (warped), draft law ``q``
    (``None`` if nothing was drafted there), candidates ``tested`` in draw order, ``produced`` the
    token this position produced (accepted candidate or resampled/bonus draw, ``None`` if the step
    stopped before), and ``final_residual`` the law drawn from after every candidate was rejected.
    ``mass``: TV(p, q) when the caller has it already (else summed here).

    Each law is read at the shown ids in one gather; sorting, the residual on the shown ids and the
    rounding run on those few Python floats (the recording's cost is per-call overhead, not arithmetic)."""
    chosen = set(tested)
    if produced is not None:
        chosen.add(produced)
    chosen.update(_top(p, k))
    if q is not None:
        chosen.update(_top(q, k))
    index = sorted(chosen)
    at = torch.tensor(index, dtype=torch.long)
    p_at = p[at].tolist()
    order = sorted(range(len(index)), key=lambda j: -p_at[j])  # by p, descending; ties by id (stable)
    ids = [index[j] for j in order]
    p_shown = [p_at[j] for j in order]
    record = PositionRecord(parent, ids, rounded(p_shown), root=root,
                            texts=[text(t) for t in ids] if text is not None else None)
    if q is not None:
        q_at = q[at].tolist()
        q_shown = [q_at[j] for j in order]
        if mass is None:
            mass = float(torch.clamp(p - q, min=0.0).sum())
        record.q = rounded(q_shown)
        record.residual_mass = float(f"{mass:.{DIGITS + 2}g}")
        record.residual = rounded([max(a - b, 0.0) / mass for a, b in zip(p_shown, q_shown)]) if mass > 0 else list(record.p)
    if final_residual is not None:
        final_at = final_residual[at].tolist()
        record.final_residual = rounded([final_at[j] for j in order])
    return record
