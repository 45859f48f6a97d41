"""The verdict in words under a timing (issue 34): which column was fastest, by how much over ``ar``
with its spread, which were slower than ``ar``, what the cost model (``bench.costs``) predicted for
the fastest on this machine, and what the same model predicts on a GPU, said to be a prediction.

Plain data in, sentences out: the app's Measure and ``python -m specviz compare`` build the same
``VerdictRow``s from their timings and print what ``verdict`` says.
"""

from __future__ import annotations

from dataclasses import dataclass

BASE = "ar"  # the column every speed-up is over


@dataclass(frozen=True)
class VerdictRow:
    """One timed column: its label and algorithm, median tokens/s, the measured speed-up over ``ar``
    (median and its range over the timed rounds; None without an ``ar`` column), and the cost model's
    predictions over ``ar``: on this machine (``predicted``) and on a GPU (``predicted_gpu``, with the
    draft call's assumed share of a target call, ``gpu_draft_cost``), ``tau`` its tokens per target call,
    ``target_ms`` and ``draft_ms`` the one-token target and draft calls the model timed here."""

    label: str
    algorithm: str
    tokens_per_s: float
    speedup: float | None = None
    speedup_lo: float | None = None
    speedup_hi: float | None = None
    predicted: float | None = None
    predicted_gpu: float | None = None
    tau: float | None = None
    gpu_draft_cost: float | None = None
    target_ms: float | None = None
    draft_ms: float | None = None


def _x(value: float) -> str:
    return f"{value:.2f}x"


def _measured(row: VerdictRow) -> str:
    """``1.42x ar (1.31–1.55 over the timed rounds)``, the range left out where it is one value."""
    text = f"{_x(row.speedup)} {BASE}"
    lo, hi = row.speedup_lo, row.speedup_hi
    if lo is not None and hi is not None and f"{lo:.2f}" != f"{hi:.2f}":
        text += f" ({lo:.2f}–{hi:.2f} over the timed rounds)"
    return text


def _same_speed(a: VerdictRow, b: VerdictRow) -> bool:
    return f"{a.tokens_per_s:.3g}" == f"{b.tokens_per_s:.3g}"


def _names(rows: list[VerdictRow]) -> str:
    names = [r.label for r in rows]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _fastest(rows: list[VerdictRow], base: VerdictRow | None) -> list[str]:
    ranked = sorted(rows, key=lambda r: -r.tokens_per_s)
    tied = [r for r in ranked if _same_speed(r, ranked[0])]
    top = tied[0]
    if base is None:
        lead = (
            f"Fastest: {_names(tied)}, tied at {top.tokens_per_s:.1f} tokens/s"
            if len(tied) > 1
            else f"Fastest: {top.label} at {top.tokens_per_s:.1f} tokens/s"
        )
        return [
            f"{lead}. There is no {BASE} column, so no speed-up over plain decoding was measured: add {BASE} "
            "to get one."
        ]
    if len(tied) > 1:
        with_base = " (as fast as plain decoding)" if base in tied else ""
        return [f"Fastest: {_names(tied)}, tied at {top.tokens_per_s:.1f} tokens/s{with_base}."]
    if top is base:
        return [f"{BASE} (plain decoding) was fastest: no other column beat it here."]
    out = [f"Fastest: {top.label}, {_measured(top)}."]
    if top.speedup_lo is not None and top.speedup_lo <= 1:
        out.append(f"Its range reaches 1x, so in some rounds it was no faster than {BASE}.")
    runner = next((r for r in ranked[1:] if r is not base and r.speedup is not None), None)
    if (
        runner is not None
        and runner.speedup_hi is not None
        and top.speedup_lo is not None
        and runner.speedup_hi >= top.speedup_lo
    ):
        out.append(
            f"{runner.label}'s range ({runner.speedup_lo:.2f}–{runner.speedup_hi:.2f}x, median "
            f"{_x(runner.speedup)}) overlaps it, so their order may not hold."
        )
    return out


def _slower(rows: list[VerdictRow], base: VerdictRow | None) -> list[str]:
    if base is None:
        return []
    slow = [  # slower as said: a median shown as 1.00x is a tie, not a loss
        r
        for r in rows
        if r is not base and r.speedup is not None and round(r.speedup, 2) < 1 and not _same_speed(r, base)
    ]
    if not slow:
        return []
    listed = "; ".join(f"{r.label} {_measured(r)}" for r in sorted(slow, key=lambda r: r.speedup))
    return [f"Slower than {BASE} here: {listed}."]


def _predicted(focus: VerdictRow) -> list[str]:
    if focus.predicted is None:
        return []
    facts = [f"tau {focus.tau:.2f}"] if focus.tau is not None else []
    if focus.target_ms is not None:
        facts.append(f"a one-token target call {focus.target_ms:.1f} ms")
    if focus.draft_ms is not None:
        facts.append(f"a draft call {focus.draft_ms:.1f} ms")
    text = (
        f"The cost model predicted {_x(focus.predicted)} for {focus.label} on this machine (its run priced "
        f"call by call at t(n) timed here{': ' + ', '.join(facts) if facts else ''})"
    )
    if focus.speedup is not None and focus.predicted > 0:
        text += f"; measured over predicted {focus.speedup / focus.predicted:.2f}"
    return [text + "."]


def _gpu(rows: list[VerdictRow], focus: VerdictRow, base: VerdictRow | None) -> list[str]:
    if focus.predicted_gpu is None:
        return []
    text = f"On a GPU the same cost model predicts {_x(focus.predicted_gpu)} for {focus.label}"
    best = max((r for r in rows if r is not base and r.predicted_gpu is not None), key=lambda r: r.predicted_gpu)
    if best is not focus and best.predicted_gpu > focus.predicted_gpu:
        text += f", and most for {best.label} ({_x(best.predicted_gpu)})"
    if focus.gpu_draft_cost is None:
        cost = "its drafting calls no model"
    else:
        cost = (
            f"a draft call costs {focus.gpu_draft_cost:.2f} of a target call (the larger of the drafter's share "
            "of the layers and of the weights)"
        )
    return [
        f"{text}. That is a prediction, not a measurement: it assumes a call on n tokens costs what a "
        f"one-token call does (at batch 1 a GPU reads the weights once per call), that {cost}, and that "
        "switching models costs nothing."
    ]


def verdict(rows: list[VerdictRow]) -> str:
    """The verdict on ``rows`` in a few sentences (empty for no rows). The fastest column is the one
    of the highest median tokens/s (equal to 3 significant figures: tied); the predictions are said of
    the fastest column other than ``ar``."""
    if not rows:
        return ""
    base = next((r for r in rows if r.algorithm == BASE), None)
    others = [r for r in rows if r is not base]
    if base is not None and not others:
        return f"Only {BASE} was measured: add another column to compare it with."
    focus = max(others, key=lambda r: r.tokens_per_s)
    return " ".join(_fastest(rows, base) + _slower(rows, base) + _predicted(focus) + _gpu(rows, focus, base))
