"""Figures comparing several runs on the same prompt: one line / bar group per run.

``runs`` is a list of ``(label, RunTrace)``; a run's colour is its algorithm's (``style.algorithm_color``),
the same in every figure, column header and replay; a second run of the same algorithm is told apart
by a dashed line / hatched bars. ``current_step`` (0-based) marks the selected step in the time series.
All counts come from ``specviz.metrics``; nothing here recomputes an algorithm.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from specviz import metrics
from specviz.trace import RunTrace
from specviz.viz.style import (
    CURRENT_COLOR,
    algorithm_color,
    axis,
    base_layout,
    figure,
    message_figure,
    title_lines,
    titled,
)

Runs = Sequence[tuple[str, RunTrace]]
DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
PATTERNS = ("", "/", ".", "x", "-")


def run_styles(runs: Runs) -> list[tuple[str, int]]:
    """Per run: its colour (its label's ``color`` where it has one, as the app's columns do, else its
    algorithm's) and how many earlier runs had the same algorithm (0 for the first), which picks the
    dash / bar pattern that tells repeats apart."""
    seen: dict[str, int] = {}
    out = []
    for label, trace in runs:
        k = seen.get(trace.algorithm, 0)
        seen[trace.algorithm] = k + 1
        out.append((getattr(label, "color", "") or algorithm_color(trace.algorithm), k))
    return out


def _marker_shape(x: float) -> dict[str, Any]:
    return {
        "type": "line",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "yref": "paper",
        "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
    }


# The top margin these figures had with a title and one legend row: their plots keep the height under it.
# ``style.titled`` lays out the top from the title lines and legend rows (a fixed number of entries a
# row), so a legend never wraps into the title at a narrow width.
TOP = 70


def _int_ticks(n: int) -> dict[str, Any]:
    """Whole-number ticks: every step for short runs, plotly's choice (integers only) beyond."""
    return {"dtick": 1} if n <= 12 else {"tickformat": "d"}


def tokens_per_step_figure(runs: Runs, current_step: int | None = None, height: int = 300) -> go.Figure:
    """Tokens committed per step (accepted drafts + the resampled or bonus token) against step number."""
    if not any(t.steps for _, t in runs):
        return message_figure("Tokens per step appear here once a run has steps.", height=height)
    data = []
    for (label, trace), (color, rep) in zip(runs, run_styles(runs)):
        ys = metrics.tokens_per_step(trace)
        acc = metrics.accepted_per_step(trace)
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers" if len(ys) <= 80 else "lines",
                "name": label,
                "x": list(range(1, len(ys) + 1)),
                "y": ys,
                "customdata": acc,
                "line": {"color": color, "width": 2, "shape": "hvh", "dash": DASHES[rep % len(DASHES)]},
                "marker": {"size": 5, "color": color},
                "opacity": 0.9,
                "hovertemplate": f"<b>{label}</b><br>step %{{x}}<br>+%{{y}} tokens "
                "(%{customdata} accepted drafts)<extra></extra>",
            }
        )
    layout = base_layout("Tokens per step", height=height)
    n_max = max(len(t.steps) for _, t in runs)
    layout["xaxis"] = axis("step (target call)", rangemode="tozero", **_int_ticks(n_max))
    layout["yaxis"] = axis("tokens", rangemode="tozero", dtick=1)
    titled(layout, title_lines("Tokens per step", ["accepted drafts + 1 resampled/bonus"]), data, height - TOP)
    if current_step is not None:
        layout["shapes"] = [_marker_shape(current_step + 1)]
    return figure(data, layout)


def cumulative_figure(runs: Runs, current_step: int | None = None, height: int = 300) -> go.Figure:
    """Tokens generated against target calls; ``ar`` is the diagonal, steeper is better."""
    if not any(t.steps for _, t in runs):
        return message_figure("Cumulative tokens appear here once a run has steps.", height=height)
    data = []
    xmax = 0
    for (label, trace), (color, rep) in zip(runs, run_styles(runs)):
        ys = metrics.cumulative_tokens(trace)
        calls = metrics.cumulative_target_calls(trace)
        xmax = max(xmax, calls[-1] if calls else 0)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": [0, *calls],
                "y": [0, *ys],
                "line": {"color": color, "width": 2.2, "dash": DASHES[rep % len(DASHES)]},
                "hovertemplate": f"<b>{label}</b><br>%{{x}} target calls → %{{y}} tokens<extra></extra>",
            }
        )
        if current_step is not None and trace.steps:
            k = min(current_step, len(trace.steps) - 1)
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "x": [calls[k]],
                    "y": [ys[k]],
                    "showlegend": False,
                    "marker": {"size": 10, "color": color, "line": {"color": CURRENT_COLOR, "width": 2}},
                    "hovertemplate": f"<b>{label}</b> at step {k + 1}: %{{y}} tokens<extra></extra>",
                    "meta": "current",
                }
            )
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": [0, xmax],
            "y": [0, xmax],
            "name": "1 token / call",
            "line": {"color": "#d1d5db", "width": 1, "dash": "dash"},
            "hoverinfo": "skip",
        }
    )
    layout = base_layout("Cumulative tokens vs target calls", height=height)
    layout["xaxis"] = axis("target calls", rangemode="tozero", **_int_ticks(xmax))
    layout["yaxis"] = axis("tokens generated", rangemode="tozero")
    titled(layout, title_lines("Cumulative tokens vs target calls", []), data, height - TOP)
    if current_step is not None:
        layout["shapes"] = [_marker_shape(current_step + 1)]
    return figure(data, layout)


def acceptance_histogram_figure(runs: Runs, height: int = 300) -> go.Figure:
    """Share of steps that accepted j draft tokens (vLLM's acceptance histogram), per run."""
    if not any(t.steps for _, t in runs):
        return message_figure("The acceptance histogram appears here once a run has steps.", height=height)
    data = []
    for (label, trace), (color, rep) in zip(runs, run_styles(runs)):
        hist = metrics.acceptance_histogram(trace)
        n = sum(hist.values()) or 1
        xs = sorted(hist)
        data.append(
            {
                "type": "bar",
                "name": label,
                "x": xs,
                "y": [hist[j] / n for j in xs],
                "customdata": [hist[j] for j in xs],
                "marker": {"color": color, "pattern": {"shape": PATTERNS[rep % len(PATTERNS)]}},
                "hovertemplate": f"<b>{label}</b><br>%{{x}} accepted: "
                "%{customdata} steps (%{y:.0%})<extra></extra>",
            }
        )
    layout = base_layout("Acceptance-length histogram", height=height, barmode="group", bargap=0.25)
    layout["xaxis"] = axis("draft tokens accepted in a step", dtick=1)
    layout["yaxis"] = axis("share of steps", tickformat=".0%", rangemode="tozero")
    titled(layout, title_lines("Acceptance-length histogram", []), data, height - TOP)
    return figure(data, layout)


def time_breakdown_figure(runs: Runs, height: int = 300) -> go.Figure:
    """Wall milliseconds per generated token, split into draft, verify and bookkeeping.

    Acceptance alone misleads: a long accepted length with an expensive draft can still be slower
    than ``ar`` (Leviathan et al. 2023, "Fast Inference from Transformers via Speculative Decoding",
    arXiv 2211.17192, Theorem 3.8: the walltime gain is the expected tokens per step over ``gamma c + 1``,
    ``c`` the draft's cost relative to the target's). This puts the cost next to the acceptance."""
    rows = [(label, t) for label, t in runs if t.steps]
    if not rows:
        return message_figure("Time per token appears here once a run has steps.", height=height)
    labels = [label for label, _ in rows]
    parts = {"draft": [], "verify": [], "other": []}
    for _, t in rows:
        n = max(len(t.output_ids), 1)
        draft = sum(s.timings.get("draft_ms", 0.0) for s in t.steps)
        verify = sum(s.timings.get("verify_ms", 0.0) for s in t.steps)
        total = sum(s.timings.get("total_ms", 0.0) for s in t.steps)
        parts["draft"].append(draft / n)
        parts["verify"].append(verify / n)
        parts["other"].append(max(total - draft - verify, 0.0) / n)
    colors = {"draft": "#93c5fd", "verify": "#1e3a8a", "other": "#d1d5db"}
    names = {"draft": "draft model", "verify": "target verify", "other": "bookkeeping"}
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": names[k],
            "y": labels,
            "x": v,
            "marker": {"color": colors[k]},
            "hovertemplate": f"%{{y}}: %{{x:.2f}} ms/token ({names[k]})<extra></extra>",
        }
        for k, v in parts.items()
    ]
    layout = base_layout("Wall time per generated token", barmode="stack")
    layout["xaxis"] = axis("ms per token", rangemode="tozero")
    layout["yaxis"] = axis(None, autorange="reversed")
    layout["margin"] = {"l": 110, "r": 16, "t": TOP, "b": 40}
    titled(
        layout,
        title_lines("Wall time per generated token", ["lower is faster"]),
        data,
        max(height, 80 + 36 * len(rows)) - TOP,
    )
    return figure(data, layout)
