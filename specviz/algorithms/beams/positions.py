"""Position records of a beam layer: the candidate space (beams x V) of one layer of ``beam`` or
``dsbd`` ("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560, Eq 1; Algorithm 1), one
``PositionRecord`` per parent row, on the joint scale (``layer_positions``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import torch

from specviz.algorithms.positions import Site, position_records, rounded
from specviz.core import beams as B
from specviz.trace import PositionRecord

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


def layer_positions(
    dec: "Decoder",
    scores: torch.Tensor,
    p_beam: torch.Tensor,
    q_beam: torch.Tensor | None,
    rows: Sequence[tuple[int | None, int]],
    tested: dict[int, list[int]],
    produced: dict[int, list[int]],
    final_residual: torch.Tensor | None = None,
) -> list[PositionRecord]:
    """The ``PositionRecord`` of each row (parent) of one layer's candidate space (beams x V) that the
    target scored (a finite row of ``scores``) or whose drafts were tested; none if
    ``dec.record_top_k`` is 0. ``rows[j]``: the parent's node id (None: a root) and its beam;
    ``tested[j]`` / ``produced[j]``: tokens tested there in draw order / kept there.

    A layer is tested as a whole against the joint (Eq 1; Algorithm 1), so every value is on its
    scale, as ``TreeNode.p`` / ``.q``: ``p`` / ``q`` are ``p_beam`` / ``q_beam`` on the row (``q`` None
    when nothing was drafted); ``residual`` the layer's first residual norm(max(p_beam - q_beam, 0))
    on the row; ``final_residual`` the residual a failed layer's repair beam was drawn from.
    ``residual_mass`` stays None: TV(p, q) of one row is no rejection probability here (a draft's is
    the layer's TV(p_beam, q_beam)), so the chain-SD theory views leave these positions out."""
    k = dec.record_top_k
    if not k:
        return []
    width = len(rows)
    live = torch.isfinite(scores.reshape(width, -1)).any(dim=1)
    p_rows = p_beam.reshape(width, -1)
    q_rows = q_beam.reshape(width, -1) if q_beam is not None else None
    final = final_residual.reshape(width, -1) if final_residual is not None else None
    first = None
    if q_beam is not None:
        gap = torch.clamp(p_beam.double() - q_beam.double(), min=0.0)
        mass = float(gap.sum())
        first = (gap / mass if mass > 0 else p_beam.double()).reshape(width, -1)
    shown = [j for j in range(width) if bool(live[j]) or tested.get(j)]
    made = {j: produced.get(j, []) for j in shown}  # the first kept token is "produced"; the rest count as tested
    sites = [
        Site(
            parent=rows[j][0],
            p=p_rows[j],
            q=None if q_rows is None else q_rows[j],
            tested=tested.get(j, []) + made[j][1:],
            produced=made[j][0] if made[j] else None,
            final_residual=None if final is None else final[j],
            root=rows[j][1],
        )
        for j in shown
    ]
    out = position_records(sites, k, dec.text)
    if first is not None:
        for j, rec in zip(shown, out):
            rec.residual = rounded(first[j][torch.tensor(rec.ids)].tolist())
            rec.residual_mass = None
    return out


def by_row(candidates: Sequence[int], vocab: int) -> dict[int, list[int]]:
    """Flat candidates (beam x V) grouped by row: {row: [tokens in order]}."""
    out: dict[int, list[int]] = {}
    for c in candidates:
        r, t = B.split_candidate(c, vocab)
        out.setdefault(r, []).append(t)
    return out
