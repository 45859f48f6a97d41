"""``position_records``: the distributions behind each verified position of a step, for trace v2.

Kept small on purpose: only the ``k`` likeliest tokens of p and of q, the candidates tested there and
the token produced there are stored (sorted by p, descending), with every probability rounded to
``DIGITS`` significant digits; ``residual_mass`` (= TV(p, q), the chain rejection probability of
"A Theoretical Perspective for Speculative Decoding", Theorem 1) is summed over the whole vocabulary
before rounding.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import torch

from specviz.trace import PositionRecord

DIGITS = 5


_FORMAT = f"{{:.{DIGITS}g}}".format


def rounded(values: list[float]) -> list[float]:
    """``values`` rounded to ``DIGITS`` significant digits, as the trace stores probabilities."""
    return list(map(float, map(_FORMAT, values)))


class Site(NamedTuple):
    """One verified position to record (the walks build it by name): the target law ``p`` (warped),
    the draft law ``q`` (``None`` if nothing was drafted there), the candidates ``tested`` in draw
    order, the token ``produced`` there (accepted candidate or resampled/bonus draw, ``None`` if the
    step stopped before), ``final_residual`` the law drawn from after every candidate was rejected,
    the tree / beam ``root`` and ``mass`` = TV(p, q) when the caller has it already (else summed here)."""

    parent: int | None
    p: torch.Tensor
    q: torch.Tensor | None
    tested: list[int]
    produced: int | None
    final_residual: torch.Tensor | None = None
    root: int = 0
    mass: float | None = None


def _laws(site: Site) -> list[tuple[str, torch.Tensor]]:
    """The site's laws that are present, in the order their values are gathered."""
    named = (("p", site.p), ("q", site.q), ("final", site.final_residual))
    return [(name, law) for name, law in named if law is not None]


def position_records(sites: list[Site], k: int, text: Callable[[int], str] | None = None) -> list[PositionRecord]:
    """The ``PositionRecord`` of every site (module docstring), computed together: one ``topk`` over
    all their laws and one gather of every value shown, then sorting, the residual on the shown ids
    and the rounding on those few Python floats (the recording's cost is per-call overhead, not
    arithmetic, so a step's positions share their calls)."""
    if not sites:
        return []
    laws = [law for s in sites for law in (s.p, s.q) if law is not None]
    vocab = laws[0].shape[-1]
    top_values, top_ids = (t.tolist() for t in torch.topk(torch.stack(laws), min(k, vocab)))
    tops = iter(zip(top_values, top_ids))
    shown, rows, flat = [], [], []
    for s in sites:
        chosen = set(s.tested)
        if s.produced is not None:
            chosen.add(s.produced)
        for law in (s.p, s.q):
            if law is not None:
                values, ids = next(tops)
                chosen.update(t for v, t in zip(values, ids) if v > 0)  # fewer under a one-hot or truncated law
        index = sorted(chosen)
        shown.append(index)
        for _, law in _laws(s):
            flat += [len(rows) * vocab + t for t in index]
            rows.append(law)
    values = iter(torch.stack(rows).reshape(-1)[torch.tensor(flat, device=rows[0].device)].tolist())
    out = []
    for s, index in zip(sites, shown):
        read = {name: [next(values) for _ in index] for name, _ in _laws(s)}
        order = sorted(range(len(index)), key=lambda j: -read["p"][j])  # by p, descending; ties by id (stable)
        at = {name: [vals[j] for j in order] for name, vals in read.items()}
        ids = [index[j] for j in order]
        record = PositionRecord(
            s.parent, ids, rounded(at["p"]), root=s.root, texts=[text(t) for t in ids] if text is not None else None
        )
        if s.q is not None:
            excess = float(torch.clamp(s.p - s.q, min=0.0).sum())  # the residual's own normaliser
            mass = excess if s.mass is None else s.mass  # TV(p, q) as the engine computed it
            record.q = rounded(at["q"])
            record.residual_mass = float(f"{mass:.{DIGITS + 2}g}")
            record.residual = (
                rounded([max(a - b, 0.0) / excess for a, b in zip(at["p"], at["q"])]) if excess > 0 else list(record.p)
            )
        if "final" in at:
            record.final_residual = rounded(at["final"])
        out.append(record)
    return out
