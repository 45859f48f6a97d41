"""The draft-length race: how far each column drafted against how far it should have, step by step.

Per run and step (``race``): the **drafted** length, the depth the draft reached (for a chain the
number of drafted tokens: the length its controller planned or stopped at, cut to the budget); the
**ideal** length in hindsight, the accepted length + 1 (drafting exactly up to the first token the
target rejects; after a fully accepted draft the ideal is at least that, so under-drafting shows as
the ideal above the drafted length); and the **waste**, drafted tokens that were not accepted,
cumulated over the run (for a chain drafted by a model each is one draft forward call spent for
nothing). One figure (``race_figure``): the drafted length as a line and the ideal as rings in the
run's colour on top, the cumulative waste below.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import plotly.graph_objects as go

from specviz.trace import DRAFTED, RunTrace
from specviz.viz.compare import DASHES, TOP, Runs, run_styles
from specviz.viz.style import CURRENT_COLOR, axis, base_layout, figure, message_figure, title_lines, titled


@dataclass(frozen=True)
class Race:
    """One run's race, one entry per step: ``drafted`` (deepest drafted level), ``ideal`` (accepted
    length + 1), ``wasted`` (drafted tokens not accepted, cumulative)."""

    drafted: list[int]
    ideal: list[int]
    wasted: list[int]


def race(trace: RunTrace) -> Race:
    """``trace``'s race (see the module docstring); a step that drafted nothing has length 0."""
    drafted, ideal, waste = [], [], []
    for s in trace.steps:
        nodes = [n for n in s.forest if n.status in DRAFTED]
        drafted.append(max((n.depth + 1 for n in nodes), default=0))
        accepted = sum(1 for n in nodes if n.status == "accepted")
        ideal.append(accepted + 1)
        waste.append(len(nodes) - accepted)
    return Race(drafted, ideal, list(accumulate(waste)))


def _run_traces(label: str, r: Race, color: str, dash: str) -> list[dict[str, Any]]:
    """One run: its drafted depth per step (a line, the ideal on hover), the ideal as rings, and its
    cumulative waste in the bottom plot; one legend entry for the three."""
    xs = list(range(1, len(r.drafted) + 1))
    drafted = {
        "type": "scatter",
        "mode": "lines",
        "name": f"{label}",
        "legendgroup": str(label),
        "x": xs,
        "y": r.drafted,
        "customdata": r.ideal,
        "xaxis": "x",
        "yaxis": "y",
        "line": {"color": color, "width": 2, "shape": "hvh", "dash": dash},
        "hovertemplate": f"<b>{label}</b><br>step %{{x}}: drafted to depth %{{y}}, "
        "ideal %{customdata}<extra></extra>",
    }
    ideal = {
        "type": "scatter",
        "mode": "markers",
        "name": f"{label}: ideal",
        "legendgroup": str(label),
        "showlegend": False,
        "x": xs,
        "y": r.ideal,
        "xaxis": "x",
        "yaxis": "y",
        "marker": {"color": color, "size": 8, "symbol": "circle-open", "line": {"width": 1.5}},
        "hoverinfo": "skip",
    }
    waste = {
        "type": "scatter",
        "mode": "lines",
        "name": f"{label}: waste",
        "legendgroup": str(label),
        "showlegend": False,
        "x": xs,
        "y": r.wasted,
        "xaxis": "x2",
        "yaxis": "y2",
        "line": {"color": color, "width": 2, "dash": dash},
        "hovertemplate": f"<b>{label}</b><br>after step %{{x}}: %{{y}} drafted tokens not accepted<extra></extra>",
    }
    return [drafted, ideal, waste]


def _step_lines(step: int) -> list[dict[str, Any]]:
    """The selected step (0-based) as a dotted line through both plots."""
    return [
        {
            "type": "line",
            "x0": step + 1,
            "x1": step + 1,
            "y0": 0,
            "y1": 1,
            "xref": ax,
            "yref": "paper",
            "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
        }
        for ax in ("x", "x2")
    ]


def race_figure(runs: Runs, current_step: int | None = None, height: int = 380) -> go.Figure:
    """Drafted against ideal draft length per step (top) and cumulative wasted draft tokens (bottom)."""
    drafting = [(label, t) for label, t in runs if any(n.status in DRAFTED for s in t.steps for n in s.forest)]
    if not drafting:
        return message_figure("The draft-length race appears here once a run drafts.", height=height)
    data: list[dict[str, Any]] = []
    for (label, trace), (color, rep) in zip(runs, run_styles(runs)):
        if (label, trace) in drafting:
            data += _run_traces(label, race(trace), color, DASHES[rep % len(DASHES)])
    layout = base_layout("Draft-length race", height=height)
    layout["xaxis"] = axis(None, anchor="y", matches="x2", showticklabels=False, rangemode="tozero")
    layout["yaxis"] = axis("draft length", domain=[0.45, 1.0], rangemode="tozero")
    layout["xaxis2"] = axis("step (target call)", anchor="y2", rangemode="tozero")
    layout["yaxis2"] = axis("wasted (cum.)", domain=[0.0, 0.33], rangemode="tozero")
    details = ["line: drafted depth", "○: ideal = accepted + 1", "below: drafted tokens not accepted, cumulative"]
    titled(layout, title_lines("Draft-length race", details), data, height - TOP)
    if current_step is not None:
        layout["shapes"] = _step_lines(current_step)
    return figure(data, layout)
