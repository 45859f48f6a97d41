"""Serving metrics as figures: acceptance by draft position and the per-step latency timeline.

What a serving engine reports per request (vLLM's ``SpecDecodingStats.num_accepted_tokens_per_pos``,
its step times), drawn from the trace: ``runs`` is a list of ``(label, RunTrace)`` as in
``viz.compare``, each run in its algorithm's colour, a repeat told apart by its dash. The numbers
come from ``specviz.metrics`` (``acceptance_per_position``, ``step_latencies``); nothing here
recomputes an algorithm or loads a model.
"""

from __future__ import annotations

from typing import Any, Sequence

import plotly.graph_objects as go

from specviz import metrics
from specviz.trace import RunTrace
from specviz.viz.compare import DASHES, TOP, _int_ticks, _marker_shape, run_styles
from specviz.viz.style import axis, base_layout, figure, html_escape, message_figure, title_lines, titled

Runs = Sequence[tuple[str, RunTrace]]
FEW_SAMPLES = 10  # a position tested fewer times than this is drawn open and its hover says so
Z = 1.96  # the error bars: Wilson's 95% interval of the rate
SPREAD = 0.08  # runs' points at one position are this far apart (draft positions), centred on it
PART_NAMES = {"draft_ms": "draft", "verify_ms": "verify", "bookkeeping_ms": "bookkeeping"}
OFF_SCALE = 2.0  # the shared ms scale's top: this times the largest run's 90th-percentile step (a warm-up
# or set-up step far above it is drawn to the top, marked, its value in the hover)
PART_COLORS = {"draft_ms": "#93c5fd", "verify_ms": "#1e3a8a", "bookkeeping_ms": "#d1d5db"}  # as time_breakdown


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def position_hover(label: str, pa: metrics.PositionAcceptance) -> str:
    """One point's hover: the counts behind the rate, its interval, and a warning when they are few."""
    head = f"<b>{html_escape(label)}</b><br>draft position {pa.position}"
    if pa.rate is None:
        return f"{head}: drafted in {pa.drafted} steps, never reached"
    low, high = pa.interval(Z)
    few = f"<br>few samples (fewer than {FEW_SAMPLES} tests)" if pa.reached < FEW_SAMPLES else ""
    return (
        f"{head}: {_pct(pa.rate)}<br>accepted in {pa.accepted} of the {pa.reached} steps that reached it"
        f"<br>95% interval {_pct(low)}–{_pct(high)}<br>drafted this deep in {pa.drafted} steps{few}"
    )


def acceptance_per_position_figure(runs: Runs, height: int = 300) -> go.Figure:
    """P(draft position i accepted | position i reached) against i, one line per run that drafted
    (``metrics.acceptance_per_position``), with Wilson 95% bars; a point tested fewer than
    ``FEW_SAMPLES`` times is drawn open. A position drafted but never reached has no point (the axis
    ends at the deepest position any run reached)."""
    vectors = []
    for (label, trace), (color, rep) in zip(runs, run_styles(runs)):
        vec = metrics.acceptance_per_position(trace)
        while vec and not vec[-1].reached:  # drafted this deep but never tested: no point to draw
            vec = vec[:-1]
        if vec:
            vectors.append((label, vec, color, rep))
    data: list[dict[str, Any]] = []
    deepest = max((len(v[1]) for v in vectors), default=0)
    for k, (label, vec, color, rep) in enumerate(vectors):
        gap = min(SPREAD, 0.6 / max(1, len(vectors) - 1))  # side by side, so the runs' bars do not hide each other
        shift = gap * (k - (len(vectors) - 1) / 2)
        ys = [pa.rate for pa in vec]
        bands = [pa.interval(Z) if pa.rate is not None else (None, None) for pa in vec]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label,
                "y": ys,
                "x": [pa.position + shift for pa in vec],
                "line": {"color": color, "width": 2, "dash": DASHES[rep % len(DASHES)]},
                "marker": {
                    "size": 8,
                    "color": color,
                    "line": {"color": color, "width": 1.5},
                    "symbol": ["circle" if pa.reached >= FEW_SAMPLES else "circle-open" for pa in vec],
                },
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "color": color,
                    "thickness": 1,
                    "width": 3,
                    "array": [None if hi is None else hi - y for (_, hi), y in zip(bands, ys)],
                    "arrayminus": [None if lo is None else y - lo for (lo, _), y in zip(bands, ys)],
                },
                "text": [position_hover(label, pa) for pa in vec],
                "hovertemplate": "%{text}<extra></extra>",
                "connectgaps": False,
            }
        )
    if not data:
        return message_figure(
            "Acceptance by draft position appears once a run has verified a draft (ar and beam draft nothing).",
            height=height,
        )
    layout = base_layout("Acceptance by draft position", height=height)
    layout["xaxis"] = axis("draft position", range=[0.5, deepest + 0.5], **_int_ticks(deepest))
    layout["yaxis"] = axis("P(accepted | reached)", range=[0, 1.05], tickformat=".0%")
    details = ["accepted / reached, per position", f"open: fewer than {FEW_SAMPLES} tests", "bars: 95% interval"]
    titled(layout, title_lines("Acceptance by draft position", details), data, height - TOP)
    return figure(data, layout)


ROW_PX, ROW_GAP_PX, BOTTOM_PX = 92, 26, 40  # a run's plot, the gap above it (its label), the x axis under the last


def _quantile(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` by the lower rank (below the largest of two or more values for q < 1)."""
    ys = sorted(xs)
    return ys[int(q * (len(ys) - 1))]


def _part_bars(label: str, lat: dict[str, list[float]], i: int, where: dict[str, str]) -> list[dict[str, Any]]:
    """One run's stacked bars, a trace per part (draft, verify, bookkeeping; in the legend once, from the
    first run), the step's total on hover."""
    data = []
    for part in metrics.LATENCY_PARTS:
        name = PART_NAMES[part]
        data.append(
            {
                "type": "bar",
                "name": name,
                "legendgroup": part,
                "showlegend": i == 0,
                "x": lat["step"],
                "y": lat[part],
                "customdata": lat["total_ms"],
                **where,
                "marker": {"color": PART_COLORS[part]},
                "hovertemplate": (
                    f"<b>{html_escape(label)}</b><br>step %{{x}}: {name} %{{y:.2f}} ms"
                    "<br>step total %{customdata:.2f} ms<extra></extra>"
                ),
            }
        )
    return data


def _over_scale(label: str, over: list[tuple[float, float]], cap: float, where: dict[str, str]) -> dict[str, Any]:
    """The steps above the shared scale, marked ▲ at its top, their totals on hover."""
    return {
        "type": "scatter",
        "mode": "markers",
        "showlegend": False,
        **where,
        "x": [x for x, _ in over],
        "y": [cap] * len(over),
        "customdata": [t for _, t in over],
        "marker": {"symbol": "triangle-up", "size": 9, "color": "#111827"},
        "cliponaxis": False,
        "hovertemplate": (
            f"<b>{html_escape(label)}</b><br>step %{{x}}: %{{customdata:.1f}} ms, above the scale<extra></extra>"
        ),
    }


def _run_label(label: str, lat: dict[str, list[float]], color: str, y: float) -> dict[str, Any]:
    """A run's name and mean step time above its plot, in its colour."""
    total = sum(lat["total_ms"])
    return {
        "text": f"<b>{html_escape(label)}</b> · mean {total / len(lat['step']):.1f} ms a step",
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": y,
        "xanchor": "left",
        "yanchor": "bottom",
        "showarrow": False,
        "font": {"size": 11, "color": color},
    }


def _run_axes(layout: dict[str, Any], i: int, last: bool, steps: int, domain: list[float], cap: float | None) -> None:
    """Run ``i``'s axes: the step axis (matching the first run's, labelled under the last run only) and
    its ms axis over ``domain`` (up to ``cap`` on the shared scale)."""
    suffix = "" if i == 0 else str(i + 1)
    layout[f"xaxis{suffix}"] = axis(
        "step" if last else None,
        range=[0.5, steps + 0.5],
        anchor=f"y{suffix}",
        showticklabels=last,
        **({} if i == 0 else {"matches": "x"}),
        **_int_ticks(steps),
    )
    yax = axis("ms", domain=domain, anchor=f"x{suffix}", rangemode="tozero", nticks=4)
    if cap is not None:
        yax["range"] = [0, cap]
    layout[f"yaxis{suffix}"] = yax


def step_latency_figure(
    runs: Runs, current_step: int | None = None, shared_y: bool = True, row_px: int = ROW_PX
) -> go.Figure:
    """Per-step draft / verify / bookkeeping milliseconds (``metrics.step_latencies``), stacked, one
    small plot per run that recorded step times, one above the other on a shared step axis. Paced
    waiting between steps is never in a step's time. With ``shared_y`` the runs share one ms scale,
    topped at ``OFF_SCALE`` times the largest run's 90th-percentile step so one slow step (a warm-up,
    Sequoia's set-up) does not flatten the rest: a step above it reaches the top and is marked ▲ with
    its total in the hover. ``current_step`` (0-based) marks the selected step."""
    rows = [(label, t, color, metrics.step_latencies(t)) for (label, t), (color, _) in zip(runs, run_styles(runs))]
    rows = [r for r in rows if r[3]["step"]]
    if not rows:
        return message_figure(
            "Step times appear here once a run has steps (a trace saved without step times has none).", height=220
        )
    n = len(rows)
    paper_h = n * (row_px + ROW_GAP_PX)  # the plots' area; the step axis sits in the bottom margin
    body = paper_h + BOTTOM_PX
    data: list[dict[str, Any]] = []
    layout = base_layout("Step latency", height=body + TOP, barmode="stack", bargap=0.15)
    layout["margin"]["b"] = BOTTOM_PX
    annotations = []
    cap = OFF_SCALE * max(_quantile(r[3]["total_ms"], 0.9) for r in rows) or 1.0
    steps = max(len(r[3]["step"]) for r in rows)
    clipped_any = False
    for i, (label, _, color, lat) in enumerate(rows):
        suffix = "" if i == 0 else str(i + 1)
        top_frac = 1 - (i * (row_px + ROW_GAP_PX) + ROW_GAP_PX) / paper_h
        bot_frac = max(0.0, top_frac - row_px / paper_h)
        where = {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}
        data += _part_bars(label, lat, i, where)
        over = [(x, t) for x, t in zip(lat["step"], lat["total_ms"]) if shared_y and t > cap]
        if over:
            clipped_any = True
            data.append(_over_scale(label, over, cap, where))
        annotations.append(_run_label(label, lat, color, top_frac))
        _run_axes(layout, i, i == n - 1, steps, [bot_frac, top_frac], cap if shared_y else None)
    layout["annotations"] = annotations
    if current_step is not None:
        layout["shapes"] = [_marker_shape(current_step + 1)]
    details = ["ms per step, stacked", "paced waits excluded"] + (["▲ above the scale"] if clipped_any else [])
    titled(layout, title_lines("Step latency", details), data, body)
    return figure(data, layout)
