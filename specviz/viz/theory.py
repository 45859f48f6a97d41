"""The theory view: "A Theoretical Perspective for Speculative Decoding Algorithm" (Yin et al. 2024,
arXiv:2411.00841) next to what a run measured, from its trace alone (``specviz.metrics`` theory
section). specviz's letters: p = target, q = draft (the paper swaps them).

* ``rejection_figure``: per drafted position TV(p, q) (bars) and, over the run, Thm 1's expected
  rejections (running sum of TVs), the run's own expectation (Thm 3 for ``batch_sd``, ``Z`` for
  ``biased_sd``, ``1 − Σ p(c)`` over the chosen children for ``dyntree``) with its 95% band, and the
  measured rejections.
* ``batch_improvement_figure``: Thm 3's batch improvement next to the measured one (``batch_sd``).
* ``tradeoff_figure``: Thm 5's line ``rejection + bias = TV`` with the run's OPT point on it and the
  UNO point above it, and the measured rejection rate (``biased_sd``).
* ``sequoia_figure``: Sequoia's predicted tokens per step next to the measured ones.

``theory_figures(trace)`` returns the ones a trace supports; ``theory_view(trace, step)`` stacks those
that say something (the per-position ones only for a run that left rejections to chance, T > 0) in
one figure and is the controller view of a ``step_state.TheoryState`` (the step is marked; in the app
the theory panel draws it, so a theory column shows no controller plot); ``theory_panel`` is the app's
per-column theory panel (``None`` when nothing would be said).
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from specviz import metrics
from specviz.step_state import SequoiaState, TheoryState
from specviz.trace import RunTrace
from specviz.viz.registry import hide_panel, register_view, state_type
from specviz.viz.style import CURRENT_COLOR, LEGEND_CHARS, axis, base_layout, figure, message_figure
from specviz.viz.theory_panels import (
    PANELS,
    batch_traces,
    first_draft_traces,
    rejection_traces,
    sequoia_traces,
    tradeoff_traces,
    tv_traces,
)
from specviz.viz.theory_panels import overlay as _overlay  # the name ``ui.stepcache`` imports

CHANCE = 1e-6  # a rejection probability within this of 0 or 1 was not left to chance


def _single(traces: list[dict[str, Any]], title: str, xt: str, yt: str, height: int) -> go.Figure:
    legend = {"orientation": "h", "x": 0, "y": -0.22, "yanchor": "top", "font": {"size": 11}}
    return go.Figure(
        traces,
        base_layout(
            title,
            height,
            xaxis=axis(xt),
            yaxis=axis(yt),
            barmode="overlay",
            legend=legend,
            margin={"l": 48, "r": 48, "t": 44, "b": 110},
        ),
    )


def rejection_figure(trace: RunTrace, height: int = 320) -> go.Figure:
    traces = rejection_traces(trace)
    if not traces:
        return message_figure("No drafted positions with a known rejection probability (T = 0 or no position records).")
    bars = [{**b, "yaxis": "y2", "opacity": 0.5} for b in tv_traces(trace)]
    fig = _single(bars + traces, *PANELS[1][1:], height)
    fig.update_layout(
        yaxis2=axis("TV per position", overlaying="y", side="right", range=[0, 1], showgrid=False, tickvals=[0, 0.5, 1])
    )
    return fig


def batch_improvement_figure(trace: RunTrace, height: int = 300) -> go.Figure | None:
    traces = batch_traces(trace)
    return _single(traces, *PANELS[3][1:], height) if traces else None


def first_draft_figure(trace: RunTrace, height: int = 320) -> go.Figure | None:
    traces = first_draft_traces(trace)
    return _single(traces, *PANELS[2][1:], height) if traces else None


def tradeoff_figure(trace: RunTrace, height: int = 320) -> go.Figure | None:
    traces = tradeoff_traces(trace)
    if not traces:
        return None
    fig = _single(traces, *PANELS[4][1:], height)
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(rangemode="tozero", scaleanchor="x")
    return fig


def sequoia_figure(trace: RunTrace, height: int = 280) -> go.Figure | None:
    traces = sequoia_traces(trace)
    return _single(traces, *PANELS[5][1:], height) if traces else None


def theory_figures(trace: RunTrace) -> dict[str, go.Figure]:
    """The theory figures this trace supports, by name."""
    figs = {
        "rejections": rejection_figure(trace) if rejection_traces(trace) else None,
        "batch_improvement": batch_improvement_figure(trace),
        "first_drafts": first_draft_figure(trace) if left_to_chance(trace) else None,
        "tradeoff": tradeoff_figure(trace),
        "sequoia": sequoia_figure(trace),
    }
    return {k: v for k, v in figs.items() if v is not None}


PerPanel = tuple[list[dict[str, Any]], str, str, str]  # (traces, title, x title, y title)
# the stacked view's vertical budget per panel, in pixels: title, one legend row and the legend's own
# padding, x ticks and title, gap between panels (a legend box is 19 px a row plus 10 as drawn)
TITLE_PX, LEGEND_ROW_PX, LEGEND_PAD_PX, AXIS_PX, GAP_PX, MARGIN_PX = 24, 19, 12, 46, 10, 8
LEGEND_COLUMNS = 2  # legend entries a row at any column width where each name is at most style.LEGEND_CHARS, else 1


def left_to_chance(trace: RunTrace) -> bool:
    """Whether some drafted position's rejection was left to chance (``0 < P(reject) < 1``). Not at
    temperature 0 (or top-k = 1): p and q are one-hot, every TV is 0 or 1 and the expected
    rejections are the measured ones exactly, so the per-position panels would say nothing."""
    return any(
        CHANCE < (d.tv if d.reject_prob is None else d.reject_prob) < 1 - CHANCE
        for d in metrics.drafted_positions(trace)
    )


def _panels(trace: RunTrace, sequoia: bool = True) -> list[PerPanel]:
    """The panels this trace supports that say something: Sequoia's always (unless ``sequoia`` is
    false), the per-position ones (TV, rejections or a tree's first drafts, batch improvement,
    trade-off) only when ``left_to_chance``."""
    chance = left_to_chance(trace)
    return [
        (traces, title, xt, yt)
        for build, title, xt, yt in PANELS
        if (chance or build is sequoia_traces) and (sequoia or build is not sequoia_traces) and (traces := build(trace))
    ]


def theory_panel(trace: RunTrace, step: int | None = None) -> go.Figure | None:
    """The app's per-column theory panel: ``theory_view``, or ``None`` (no panel) when it would say
    nothing. It is shown when the run left some rejection to chance (``left_to_chance``: sampled,
    T > 0, with drafted positions whose probabilities it recorded): Thm 1 for a chain, Thm 1 on each
    position's first draft for a multi-draft tree (``specinfer``, ``mcsd``, ``sequoia``); so never
    for ``ar`` (nothing drafted) nor for a greedy (T = 0) run, whose TVs are all 0 or 1. Sequoia's
    predicted-vs-measured tokens per step are left out: its controller view draws them (each
    figure once)."""
    kind = state_type(trace)
    panels = _panels(trace, sequoia=not (kind is not None and issubclass(kind, SequoiaState)))
    return theory_view(trace, step, panels=panels) if panels else None


def _blocks(panels: list[PerPanel], panel_height: int) -> tuple[list[tuple[int, int, int]], int]:
    """Each panel's block (its top in pixels from the top of the plotting area, its legend rows and
    entries a row) and the plotting area's height."""
    blocks = []
    y = 0
    for traces, *_ in panels:
        names = [str(tr.get("name", "")) for tr in traces if tr.get("showlegend", True)]
        # two a row where every name fits half a phone's plot (style.LEGEND_CHARS), else one: at 400 px
        # "1st draft rejected" ran past the figure's edge as the second of a row
        columns = LEGEND_COLUMNS if all(len(n) <= LEGEND_CHARS for n in names) else 1
        rows = -(-len(names) // columns)
        blocks.append((y, rows, columns))
        y += TITLE_PX + _legend_px(rows) + panel_height + AXIS_PX + GAP_PX
    return blocks, y - GAP_PX


def _legend(y: float, columns: int) -> dict[str, Any]:
    """A panel's own legend under its title (paper ``y``), ``columns`` entries a row."""
    return {
        "orientation": "h",
        "x": 0,
        "xanchor": "left",
        "y": y,
        "yanchor": "top",
        "entrywidth": 1 / columns,
        "entrywidthmode": "fraction",
        "font": {"size": 11},
        "bgcolor": "rgba(0,0,0,0)",
        "traceorder": "normal",
    }


def _title_note(title: str, y: float) -> dict[str, Any]:
    """A panel's title, at its block's top (paper ``y``)."""
    return {
        "text": title,
        "x": 0,
        "xref": "paper",
        "xanchor": "left",
        "y": y,
        "yref": "paper",
        "yanchor": "top",
        "showarrow": False,
        "font": {"size": 13},
    }


def _step_shade(marked: list[int], sfx: str) -> dict[str, Any]:
    """The selected step's drafted positions shaded on a per-position panel (axes ``x{sfx}``)."""
    return {
        "type": "rect",
        "xref": f"x{sfx}",
        "yref": f"y{sfx} domain",
        "x0": marked[0] - 0.5,
        "x1": marked[-1] + 0.5,
        "y0": 0,
        "y1": 1,
        "fillcolor": CURRENT_COLOR,
        "opacity": 0.12,
        "line": {"width": 0},
        "layer": "below",
    }


@register_view(TheoryState)
def theory_view(
    trace: RunTrace, step: int | None = None, panel_height: int = 170, panels: list[PerPanel] | None = None
) -> go.Figure:
    """Every panel of ``_panels`` stacked in one figure, ``panel_height`` pixels of plot each; ``step``
    (0-based) is marked on the per-position panels. Laid out in pixels so nothing overlaps at any
    column width: each panel is its title, its own legend (``LEGEND_COLUMNS`` entries a row, under the
    title), its plot and its x axis. Built from plain dicts (``style.figure``: no per-property
    validation, it is redrawn on every scrub)."""
    panels = _panels(trace) if panels is None else panels
    if not panels:
        return message_figure(
            "Nothing left to chance in this run (temperature 0, or no drafted position "
            "with a known rejection probability): no theory to compare with."
        )
    blocks, inner = _blocks(panels, panel_height)
    frac = lambda px: 1 - px / inner  # noqa: E731 - pixels from the top -> paper y
    layout = base_layout(
        None, inner + 2 * MARGIN_PX, barmode="overlay", margin={"l": 52, "r": 16, "t": MARGIN_PX, "b": MARGIN_PX}
    )
    data, notes, shapes = [], [], []
    marked = _step_positions(trace, step)
    for r, ((traces, title, xt, yt), (top, rows, columns)) in enumerate(zip(panels, blocks)):
        sfx = "" if r == 0 else str(r + 1)
        plot_top = top + TITLE_PX + _legend_px(rows)
        layout[f"xaxis{sfx}"] = axis(xt, anchor=f"y{sfx}", domain=[0, 1])
        layout[f"yaxis{sfx}"] = axis(yt, anchor=f"x{sfx}", domain=[frac(plot_top + panel_height), frac(plot_top)])
        layout[f"legend{sfx}"] = _legend(frac(top + TITLE_PX), columns)
        data += [{**tr, "xaxis": f"x{sfx}", "yaxis": f"y{sfx}", "legend": f"legend{sfx}"} for tr in traces]
        notes.append(_title_note(title, frac(top)))
        if marked and title in (PANELS[0][1], PANELS[1][1], PANELS[2][1]):
            shapes.append(_step_shade(marked, sfx))
    layout["annotations"], layout["shapes"] = notes, shapes
    return figure(data, layout)


def _legend_px(rows: int) -> int:
    """The height of a legend of ``rows`` rows, with its padding (none for no rows)."""
    return rows * LEGEND_ROW_PX + LEGEND_PAD_PX if rows else 0


def _step_positions(trace: RunTrace, step: int | None) -> list[int]:
    """1-based drafted-position numbers of step ``step`` (empty for None)."""
    if step is None:
        return []
    return [i + 1 for i, s in enumerate(_overlay(trace)["step"]) if s == step]


hide_panel(TheoryState, "column")  # the column's theory panel draws it (``theory_panel``), not twice
