"""Sequoia's view (arXiv 2402.12374): tokens per step, the DP's prediction against what each step
produced; the chosen tree's shape; and, when the state has them, the acceptance vector p_k and the
hardware-aware choice (verify time t(n), best predicted speed-up per tree size). Registered for
``SequoiaState``."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from specviz.step_state import ControllerState, SequoiaState
from specviz.trace import RunTrace
from specviz.viz.registry import register_view
from specviz.viz.state_plots import mark_line, series, states_of, tick_step, two_panels
from specviz.viz.style import CURRENT_COLOR, STATUS_COLORS, axis, base_layout, figure, title_lines, titled


def _tokens_traces(trace: RunTrace, states: list[ControllerState | None]) -> list[dict[str, Any]]:
    """Top left: tokens per step, the DP's ``predicted_tokens`` (dashed) and what each step produced
    (``measured_tokens``; a step without a Sequoia state, its committed tokens)."""
    xs = list(range(1, len(states) + 1))
    predicted = series(states, SequoiaState, lambda s: s.predicted_tokens)
    measured = [
        s.measured_tokens if isinstance(s, SequoiaState) else len(trace.steps[i].committed)
        for i, s in enumerate(states)
    ]
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "predicted (DP)",
            "x": xs,
            "y": predicted,
            "line": {"color": "#7c3aed", "width": 2, "dash": "dash", "shape": "hvh"},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "measured",
            "x": xs,
            "y": measured,
            "line": {"color": STATUS_COLORS["accepted"], "width": 1.5, "shape": "hvh"},
            "marker": {"size": 4},
        },
    ]


def _shape_traces(run: Any) -> tuple[list[dict[str, Any]], str, str]:
    """Top right: the chosen tree's nodes per level (``tree.level_widths``) or, failing that, the
    acceptance vector by sibling rank; with the right plot's x and y titles."""
    widths = list(run.tree.level_widths)
    if widths:
        bar = {
            "type": "bar",
            "name": "chosen tree: nodes per level",
            "x": list(range(len(widths))),
            "y": widths,
            "xaxis": "x2",
            "yaxis": "y2",
            "marker": {"color": "#c4b5fd"},
            "hovertemplate": "level %{x}: %{y} nodes<extra></extra>",
        }
        return [bar], "level (depth)", "nodes"
    acc = list(run.acceptance)
    if not acc:
        return [], "level (depth)", "nodes"
    bar = {
        "type": "bar",
        "name": "acceptance vector p_k",
        "x": list(range(1, len(acc) + 1)),
        "y": acc,
        "xaxis": "x2",
        "yaxis": "y2",
        "marker": {"color": "#db2777"},
    }
    return [bar], "sibling rank k", "P(k-th child accepted)"


def _top_layout(run: Any, step: int, right_title: str, right_y: str) -> dict[str, Any]:
    """The top row's axes (tokens per step; the tree's shape) and the selected step's line."""
    widths = list(run.tree.level_widths)
    layout = base_layout("Sequoia")
    # the right plot's y title and ticks need about 36 px left of it: at phone width (plots about 250 px
    # wide) 0.11 of the width left them over the left plot
    two_panels(layout, 0.58, right_gap=0.1)
    layout["xaxis"]["title"] = {"text": "step", "font": {"size": 11}}
    layout["yaxis"]["title"] = {"text": "tokens per step", "font": {"size": 11}}
    layout["yaxis"]["rangemode"] = "tozero"
    layout["xaxis2"]["title"] = {"text": right_title, "font": {"size": 11}}
    layout["xaxis2"]["dtick"] = tick_step(len(widths) if widths else len(run.acceptance), 8)
    layout["yaxis2"]["title"] = {"text": right_y, "font": {"size": 11}}
    layout["shapes"] = [mark_line(step + 1, "x", "y domain")]
    return layout


@register_view(SequoiaState)
def sequoia_view(trace: RunTrace, step: int) -> go.Figure | None:
    """Top left: tokens per step, the DP's prediction for the tree used (``predicted_tokens``) against
    what the step produced (``measured_tokens``). Top right: the chosen tree's shape (nodes per level,
    ``tree.level_widths``) or, failing that, the acceptance vector by sibling rank. Bottom row, when the
    state has them: the acceptance vector p_k, and the hardware-aware choice: measured verify time
    t(n) and the best predicted speed-up per tree size that the optimiser maximised (``timing``,
    ``speedup``), the chosen n marked."""
    states = states_of(trace)
    st = states[step]
    if not isinstance(st, SequoiaState):
        return None
    run = st.run
    shape, right_title, right_y = _shape_traces(run)
    data = _tokens_traces(trace, states) + shape
    bits = [
        f"n={run.n}",
        f"d={run.d}",
        f"E[tokens/step]={float(run.expected_tokens):.2f}",
        f"this step {float(st.predicted_tokens):.2f} → {st.measured_tokens}",
    ]
    layout = _top_layout(run, step, right_title, right_y)
    tuned = _sequoia_tuning_panels(st, data, layout, with_acceptance=bool(list(run.tree.level_widths)))
    if tuned:
        for ax in ("yaxis", "yaxis2"):
            layout[ax]["domain"] = [0.6, 1.0]
    titled(layout, title_lines(f"Sequoia · step {step + 1}", bits), data, 446 if tuned else 206)
    return figure(data, layout)


def _acceptance_panel(acc: list[float], data: list[dict[str, Any]], layout: dict[str, Any]) -> None:
    """Bottom left: the acceptance vector p_k by sibling rank."""
    data.append(
        {
            "type": "bar",
            "name": "acceptance vector p_k",
            "x": list(range(1, len(acc) + 1)),
            "y": acc,
            "xaxis": "x3",
            "yaxis": "y3",
            "marker": {"color": "#db2777"},
            "hovertemplate": "rank %{x}: P(k-th child accepted) = %{y:.3f}<extra></extra>",
        }
    )
    layout["xaxis3"] = axis("sibling rank k", domain=[0, 0.51], anchor="y3", dtick=tick_step(len(acc), 8))
    layout["yaxis3"] = axis("p_k", domain=[0, 0.4], anchor="x3", rangemode="tozero")


def _timing_panel(run: Any, data: list[dict[str, Any]], layout: dict[str, Any]) -> None:
    """Bottom right: the measured verify time t(n) per tree size (log n), the best predicted speed-up at
    each size on its own axis, and the chosen n marked."""
    sizes, verify = list(run.timing.sizes), list(run.timing.verify_ms)
    best_at = {b.n: b.speedup for b in run.speedup.best_per_size} if run.speedup else {}
    data.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "verify time t(n), ms",
            "x": sizes,
            "y": verify,
            "xaxis": "x4",
            "yaxis": "y4",
            "line": {"color": "#0f766e"},
        }
    )
    layout["xaxis4"] = axis("tree size n", domain=[0.68, 1], anchor="y4", type="log")
    layout["yaxis4"] = axis("t(n) ms", domain=[0, 0.4], anchor="x4", rangemode="tozero")
    best_x = [n for n in sizes if n in best_at]
    if best_x:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "best predicted speed-up at n",
                "x": best_x,
                "y": [best_at[int(n)] for n in best_x],
                "xaxis": "x4",
                "yaxis": "y5",
                "line": {"color": "#7c3aed", "dash": "dash"},
            }
        )
        layout["yaxis5"] = axis("speed-up", overlaying="y4", side="right", anchor="x4", rangemode="tozero")
    layout.setdefault("shapes", []).append(
        {
            "type": "line",
            "x0": run.n,
            "x1": run.n,
            "y0": 0,
            "y1": 1,
            "xref": "x4",
            "yref": "y4 domain",
            "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
        }
    )


def _sequoia_tuning_panels(
    st: SequoiaState, data: list[dict[str, Any]], layout: dict[str, Any], with_acceptance: bool
) -> bool:
    """Add the bottom row of ``sequoia_view`` (acceptance vector; t(n) and speed-up vs n): ``False``
    when the state has neither."""
    run = st.run
    acc = list(run.acceptance) if with_acceptance else None
    timed = bool(run.timing and list(run.timing.sizes) and list(run.timing.verify_ms))
    if not acc and not timed:
        return False
    if acc:
        _acceptance_panel(acc, data, layout)
    if timed:
        _timing_panel(run, data, layout)
    return True
