"""The theory view's panels as Plotly traces, each from a trace alone (``specviz.metrics`` theory
section; Yin et al. 2024, arXiv:2411.00841): TV(p, q) per drafted position, Thm 1's expected rejections
(and the run's own expectation, with its 95% band) against the measured ones, a tree's first drafts,
Thm 3's batch improvement, Thms 4-5's rejection-bias trade-off and Sequoia's tokens per step.
``PANELS`` lists them with their titles; ``viz.theory`` draws them alone or stacked."""

from __future__ import annotations

from typing import Any

from specviz import metrics
from specviz.step_state import DynTreeState, TheoryState, TradeoffProbe
from specviz.trace import RunTrace
from specviz.viz.style import series_color

BAND = "rgba(37,99,235,0.15)"


def band(x: list[int], low: list[float], high: list[float], group: str, name: str | None = None) -> dict:
    """A 95% band as one filled, hover-less scatter that shares ``group``'s legend entry."""
    band = dict(type="scatter", x=x + x[::-1], y=high + low[::-1], fill="toself", fillcolor=BAND, mode="lines")
    band.update(line={"width": 0}, hoverinfo="skip", showlegend=False, legendgroup=group)
    return band if name is None else {**band, "name": name}


def line(x: list, y: list, name: str, color: str, **extra: Any) -> dict:
    """A line trace (``dash``, ``shape`` go into its line; any other key onto the trace)."""
    style = {k: extra.pop(k) for k in ("dash", "shape") if k in extra}
    return dict(type="scatter", x=x, y=y, mode="lines", name=name, line={**style, "color": color}, **extra)


def expected_and_measured(
    x: list[int], ov: dict, expected: tuple[str, str, str], measured: tuple[str, str], band_name: str | None = None
) -> list[dict]:
    """A theorem's expected count (``ov["expected"]``; ``expected`` = legend name, colour, legend group)
    with its 95% band, which shares its legend entry (one click hides both), and the measured count
    (``ov["measured"]``; ``measured`` = legend name, colour) as a step line."""
    name, color, group = expected
    return [
        band(x, ov["low"], ov["high"], group, name=band_name),
        line(x, ov["expected"], name, color, legendgroup=group),
        line(x, ov["measured"], measured[0], measured[1], shape="hv"),
    ]


def overlay(trace: RunTrace) -> dict[str, list[float]]:
    """The per-position overlay: ``metrics.rejection_overlay``, or for a multi-draft tree (where it is
    empty) ``metrics.first_draft_overlay``, Thm 1 on each position's first candidate."""
    ov = metrics.rejection_overlay(trace)
    return ov if ov["tv"] else (metrics.first_draft_overlay(trace) or ov)


def first_draft_traces(trace: RunTrace) -> list[dict[str, Any]]:
    """A multi-draft tree: Thm 1 on each verified position's first candidate (drawn from q, rejected
    with chance TV(p, q) exactly) against the rejected first candidates, and the positions where
    every candidate was rejected (fewer: the later candidates' chances are not recorded)."""
    if metrics.rejection_overlay(trace)["tv"]:
        return []
    ov = metrics.first_draft_overlay(trace)
    if ov is None:
        return []
    x = list(range(1, len(ov["tv"]) + 1))
    why = (
        "each position's first draft is drawn from q and tested by min(1, p/q): rejected with chance "
        "TV(p, q) exactly (Thm 1)"
    )
    first, measured = expected_and_measured(
        x, ov, ("Thm 1 ± 95%", series_color(0), "expected"), ("1st draft rejected", "#dc2626")
    )[1:]
    first["hovertemplate"] = "position %{x}: ΣTV = %{y:.2f}<br>" + why + "<extra></extra>"
    measured["hovertemplate"] = "position %{x}: %{y} first drafts rejected<extra></extra>"
    every = line(
        x,
        ov["measured_all"],
        "all rejected",
        "#6b7280",
        shape="hv",
        dash="dot",
        hovertemplate="position %{x}: %{y} positions with every draft rejected<br>(its chance, the product of "
        "the TVs of the successive residuals, is not recorded; at most Thm 1's)<extra></extra>",
    )
    return [band(x, ov["low"], ov["high"], "expected"), first, measured, every]


def _own_expectation(trace: RunTrace) -> str | None:
    """The legend of the run's own expected rejections, told by its step state: a batch probe's Thm 3
    (``batch_sd``), an over-acceptance probe's Z (``biased_sd``), a chosen tree's 1 − Σp(c)
    (``dyntree``); ``None`` for a run whose expectation is Thm 1's."""
    for s in trace.steps:
        c = s.controller
        if isinstance(c, TheoryState) and c.positions:
            return "expected Z ± 95%" if isinstance(c.positions[0], TradeoffProbe) else "Thm 3 ± 95%"
        if isinstance(c, DynTreeState):
            return "1 − Σp(c) ± 95%"
    return None


def rejection_traces(trace: RunTrace) -> list[dict[str, Any]]:
    ov = metrics.rejection_overlay(trace)
    if not ov["tv"]:
        return []
    x = list(range(1, len(ov["tv"]) + 1))
    own_label = _own_expectation(trace)
    own = own_label is not None
    label = own_label or "Thm 1 ± 95%"
    out = expected_and_measured(
        x, ov, (label, series_color(0), "expected"), ("measured", "#dc2626"), "95% band of the rejection count"
    )
    if own:  # its own expectation, beside SD's ΣTV
        out.insert(2, line(x, ov["tv_sum"], "ΣTV (Thm 1, SD)", "#6b7280", dash="dot"))
    return out


def tv_traces(trace: RunTrace) -> list[dict[str, Any]]:
    ov = overlay(trace)
    if not ov["tv"]:
        return []
    x = list(range(1, len(ov["tv"]) + 1))
    return [
        dict(
            type="bar",
            x=x,
            y=ov["tv"],
            name="TV(p, q) per drafted position",
            marker={"color": "#94a3b8"},
            showlegend=False,
            customdata=[s + 1 for s in ov["step"]],
            hovertemplate="position %{x} (step %{customdata})<br>TV %{y:.3f}<extra></extra>",
        )
    ]


def batch_traces(trace: RunTrace) -> list[dict[str, Any]]:
    bi = metrics.batch_improvement_overlay(trace)
    if bi is None:
        return []
    x = list(range(1, len(bi["theory"]) + 1))
    return expected_and_measured(
        x, {**bi, "expected": bi["theory"]}, ("Thm 3 ± 95%", series_color(2), "thm3"), ("measured", "#ea580c")
    )


def tradeoff_traces(trace: RunTrace) -> list[dict[str, Any]]:
    pt = metrics.tradeoff_point(trace)
    if pt is None:
        return []
    tv, kind = pt["tv"], trace.params.get("residual", "opt")
    mark = lambda k: {"size": 13 if kind == k else 9, "line": {"width": 2 if kind == k else 0, "color": "#111827"}}  # noqa: E731
    return [
        dict(type="scatter", x=[0, tv], y=[tv, 0], mode="lines", name="rej. + bias = TV", line={"color": "#6b7280"}),
        dict(
            type="scatter",
            x=[pt["bias_opt"]],
            y=[pt["rejection"]],
            mode="markers",
            name="OPT (SD residual)",
            marker={**mark("opt"), "color": series_color(0)},
        ),
        dict(
            type="scatter",
            x=[pt["bias_uno"]],
            y=[pt["rejection"]],
            mode="markers",
            name="UNO (target)",
            marker={**mark("target"), "color": "#dc2626", "symbol": "diamond"},
        ),
        dict(
            type="scatter",
            x=[pt[f"bias_{'opt' if kind == 'opt' else 'uno'}"]],
            y=[pt["measured_rejection"]],
            mode="markers",
            name="measured ± 95%",
            marker={"color": "#111827", "symbol": "x"},
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [pt["measured_high"] - pt["measured_rejection"]],
                "arrayminus": [pt["measured_rejection"] - pt["measured_low"]],
            },
        ),
    ]


def sequoia_traces(trace: RunTrace) -> list[dict[str, Any]]:
    pm = metrics.predicted_vs_measured_tokens(trace)
    if pm is None:
        return []
    x = [s + 1 for s in pm["step"]]
    return [
        dict(type="bar", x=x, y=pm["measured"], name="measured", marker={"color": "#cbd5e1"}),
        dict(
            type="scatter",
            x=x,
            y=pm["predicted"],
            mode="lines+markers",
            name="predicted (DP)",
            line={"color": series_color(3)},
        ),
    ]


PANELS = (  # (builder, title, x title, y title)
    (tv_traces, "TV(p, q) per drafted position", "drafted position", "TV"),
    (rejection_traces, "Rejections: theory vs measured", "drafted position", "rejections"),
    (first_draft_traces, "First drafts: Thm 1 vs measured", "verified position", "rejections"),
    (batch_traces, "Batch improvement (Thm 3)", "drafted position", "rejections saved"),
    (tradeoff_traces, "Rejection vs bias (Thms 4-5)", "TV bias of one token", "rejection probability"),
    (sequoia_traces, "Sequoia: tokens per step", "step", "tokens"),
)
