"""The generated tokens as a table, one row per token with how it was produced: ``tokens_csv``.

A pure function of the trace (no model): each committed token's step, its position in the output,
id and text, ``kind`` (``draft``: drafted and accepted; ``resampled``: drawn from the residual after
a rejection; ``bonus``: drawn from the target after the whole draft was accepted, or the one token
of a step that drafted nothing), the drafter that proposed a ``draft`` token (``RunTrace.drafter``'s
name; empty for the target's resampled and bonus tokens, and in traces written before schema v5),
and, where the trace records the token's node, its draft position (``depth`` + 1), ``p``, ``q``,
``accept_prob`` and ``draw`` (empty where unknown: a bonus token has no ``q``, a certain outcome no
draw, a beam forest's committed tokens no node).
"""

from __future__ import annotations

import csv
import io
from typing import Any

from specviz.trace import RunTrace

TOKEN_COLUMNS: tuple[str, ...] = (
    "run",
    "algorithm",
    "step",
    "position",
    "token_id",
    "text",
    "kind",
    "drafter",
    "draft_position",
    "node_id",
    "p",
    "q",
    "accept_prob",
    "draw",
)


def drafter_name(trace: RunTrace) -> str:
    """The name of what drafted ``trace``'s tokens; "" when nothing did or the trace does not say."""
    d = trace.drafter
    return str(d.get("name", "")) if isinstance(d, dict) else ""


def token_rows(trace: RunTrace, run: int = 0) -> list[dict[str, Any]]:
    """One dict per committed token of ``trace`` in output order (keys ``TOKEN_COLUMNS``; ``None`` where unknown)."""
    name = drafter_name(trace)
    rows = []
    for step in trace.steps:
        nodes = {n.id: n for n in step.forest}
        for j, tok in enumerate(step.committed):
            node = nodes.get(tok.node_id) if tok.node_id is not None else None
            rows.append(
                {
                    "run": run,
                    "algorithm": trace.algorithm,
                    "step": step.index,
                    "position": step.n_before + j,
                    "token_id": tok.token_id,
                    "text": tok.text,
                    "kind": tok.kind,
                    "drafter": name if tok.kind == "draft" and name else None,
                    "draft_position": None if node is None else node.depth + 1,
                    "node_id": tok.node_id,
                    "p": None if node is None else node.p,
                    "q": None if node is None else node.q,
                    "accept_prob": None if node is None else node.accept_prob,
                    "draw": None if node is None else node.draw,
                }
            )
    return rows


def tokens_csv(*traces: RunTrace) -> str:
    """The committed tokens of ``traces`` as CSV text with a header (``TOKEN_COLUMNS``); ``run`` is a
    trace's index among those given. Floats are written in full (``repr``), unknown values empty."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=TOKEN_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for i, trace in enumerate(traces):
        for row in token_rows(trace, i):
            writer.writerow({k: "" if v is None else repr(v) if isinstance(v, float) else v for k, v in row.items()})
    return out.getvalue()
