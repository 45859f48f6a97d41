"""Controller views: the figures of the typed state a step carries (``specviz.step_state``), chosen by
the state's **type** (``viz.registry``: ``@register_view(ThompsonState)``).

``controller_figure(trace, step)`` draws the view registered for the state's type, or, when there is
none or it has nothing to draw (a round with no posterior yet), the ``generic_view``: numeric scalars
over steps and numeric lists at the step, read from the state's JSON, so a kind added later, or one
this specviz does not know (``UnknownState``, with a note), shows its state with no change here. A view
reads typed fields (checked once, when the trace was read), so it needs no type checks. The modules
below import the other views so that every one is registered once this module is.
"""

from __future__ import annotations

import math
from typing import Any

import plotly.graph_objects as go

from specviz.step_state import UnknownState
from specviz.trace import RunTrace
from specviz.viz import beam_story, beams, sequoia, theory, thompson  # noqa: F401 - they register their views
from specviz.viz.registry import ABSENT, VIEWS, controller_kind, register_view, state_type, view_for
from specviz.viz.state_plots import mark, states_of, tick_step, two_panels
from specviz.viz.style import (
    MESSAGE_CHARS,
    axis,
    base_layout,
    figure,
    message_figure,
    series_color,
    title_lines,
    titled,
    wrap_html,
)
from specviz.viz.thompson import (
    STOP_WORDS,
    curve,
    draft_lengths_figure,
    parameters_figure,
    posterior_figure,
    thompson_figures,
)

CONTROLLER_VIEWS = VIEWS  # the registry (``viz.registry``), under its old name
__all__ = [  # the EESD views (``viz.thompson``) and ``tick_step`` stay importable from here
    "CONTROLLER_VIEWS",
    "STOP_WORDS",
    "column_figure",
    "controller_figure",
    "controller_kind",
    "curve",
    "draft_lengths_figure",
    "generic_view",
    "parameters_figure",
    "posterior_figure",
    "register_view",
    "thompson_figures",
    "tick_step",
]


def controller_figure(trace: RunTrace | None, step: int, height: int = 280) -> go.Figure | None:
    """The controller view of step ``step`` (0-based), or ``None`` if the trace carries no state."""
    kind = state_type(trace)
    if kind is None:
        return None
    step = max(0, min(step, len(trace.steps) - 1))
    view = view_for(kind, "controller")
    fig = view(trace, step) if view is not ABSENT and view is not None else None
    if fig is None:
        fig = generic_view(trace, step)
    fig.layout.height = fig.layout.height or height
    return fig


def column_figure(trace: RunTrace | None, step: int) -> go.Figure | None:
    """The controller plot of the app's column: the ``"column"`` view, else ``controller_figure``."""
    view = view_for(state_type(trace), "column")
    if view is None:
        return None
    if view is ABSENT:
        return controller_figure(trace, step)
    return view(trace, max(0, min(step, len(trace.steps) - 1)))


def _is_num(v: Any) -> bool:
    """A finite JSON number (the generic view reads a state's untyped JSON object)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _generic_fields(states: list[dict[str, Any] | None], cur: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The numeric scalars to draw over steps (the step's own first, then any other step's; six at
    most) and the numeric lists to draw at the step (three at most)."""
    scalars = [k for k, v in cur.items() if _is_num(v)]
    for st in states:
        for k, v in (st or {}).items():
            if _is_num(v) and k not in scalars:
                scalars.append(k)
    lists = [k for k, v in cur.items() if isinstance(v, list) and v and all(_is_num(x) for x in v)][:3]
    return scalars[:6], lists


def _generic_traces(
    states: list[dict[str, Any] | None], cur: dict[str, Any], step: int, scalars: list[str], lists: list[str]
) -> list[dict[str, Any]]:
    """A line per scalar over steps (left plot) and a bar chart per list at ``step`` (right plot)."""
    data: list[dict[str, Any]] = []
    xs = list(range(1, len(states) + 1))
    for i, k in enumerate(scalars):
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": k,
                "x": xs,
                "y": [(st or {}).get(k) if _is_num((st or {}).get(k)) else None for st in states],
                "line": {"color": series_color(i + 1), "width": 2},
                "marker": {"size": 4},
            }
        )
    for i, k in enumerate(lists):
        data.append(
            {
                "type": "bar",
                "name": f"{k} (step {step + 1})",
                "x": list(range(len(cur[k]))),
                "y": cur[k],
                "xaxis": "x2",
                "yaxis": "y2",
                "marker": {"color": series_color(i + 4)},
            }
        )
    return data


def _generic_layout(kind: Any, step: int, two: bool) -> dict[str, Any]:
    """Steps on x (and, ``two``, the lists' index on a second plot at the right); ``step`` marked."""
    layout = base_layout(f"Controller state: {kind}")
    if two:
        two_panels(layout, 0.55)
        layout["xaxis2"]["title"] = {"text": "index", "font": {"size": 11}}
    else:
        layout["xaxis"] = axis("step")
        layout["yaxis"] = axis(None)
    layout["xaxis"]["title"] = {"text": "step", "font": {"size": 11}}
    layout["shapes"] = []
    mark(layout, step, "x", "paper")
    return layout


def generic_view(trace: RunTrace, step: int) -> go.Figure:
    """Numeric scalars of the controller state over steps (left) and numeric lists at ``step`` (right),
    read from each state's JSON object (any kind, known or not); an ``UnknownState`` says why it is
    drawn this way under the title."""
    states = [s.to_json() if s is not None else None for s in states_of(trace)]
    cur = states[step] or {}
    scalars, lists = _generic_fields(states, cur)
    data = _generic_traces(states, cur, step, scalars, lists)
    kind = cur.get("kind", controller_kind(trace))
    state = trace.steps[step].controller
    note = [state.note] if isinstance(state, UnknownState) and state.note else []
    if not data:
        return _state_message(cur, kind, note)
    layout = _generic_layout(kind, step, bool(lists))
    titled(layout, title_lines(f"Controller state: {kind}", note), data, 210)
    return figure(data, layout)


def _state_message(state: dict[str, Any], kind: Any, note: list[str] = (), limit: int = 200) -> go.Figure:
    """A state with nothing to plot, as text: its first ``limit`` characters of ``key=value`` items on
    lines that fit the narrowest column (a word longer than a line is cut short with "…"), after ``note``."""
    text = ", ".join(f"{k}={v}" for k, v in state.items() if k != "kind") or "no numeric state"
    text = f"controller {kind}: " + (text if len(text) <= limit else text[: limit - 1] + "…")
    words = [w if len(w) < MESSAGE_CHARS else w[: MESSAGE_CHARS - 2] + "…" for w in text.split(" ")]
    lines = wrap_html(" ".join(words), MESSAGE_CHARS)
    said = wrap_html(" ".join(note), MESSAGE_CHARS) if note else ""
    rows = lines.count("<br>") + 1 + (said.count("<br>") + 2 if said else 0)
    fig = message_figure(lines, height=max(240, 100 + 18 * rows), title=f"Controller: {kind}")
    if said:  # why the state is drawn this way, under it
        fig.layout.annotations[0].y = 0.6
        fig.add_annotation(
            text=said, x=0.5, y=0.15, xref="paper", yref="paper", showarrow=False, font={"size": 12, "color": "#6b7280"}
        )
    return fig
