"""Plotly figures of the theory paper's simulations (Figs. 2-5 of arXiv 2411.00841), each with the exact
theory of ``specviz.core.theory`` next to the Monte Carlo of ``specviz.theory.simulate``.
specviz's letters in every label: p = target, q = draft."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.theory.simulate import BatchRuns
from specviz.viz.style import axis, base_layout, series_color

BAND_NOTE = "band: ±1.96 standard errors of the running mean"


def _label(m: int | None) -> str:
    return "SD (M = 1)" if m == 1 else ("M → ∞ (Prop. 1)" if m is None else f"batch SD, M = {m}")


def _rgba(hex_color: str, alpha: float) -> str:
    h = hex_color.lstrip("#")
    return f"rgba({int(h[0:2], 16)},{int(h[2:4], 16)},{int(h[4:6], 16)},{alpha})"


def running_mean(values: np.ndarray, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
    """Running mean of ``values`` and ``z`` standard errors of it (0 for the first value)."""
    v = values.astype(np.float64)
    k = np.arange(1, len(v) + 1)
    mean = np.cumsum(v) / k
    var = np.maximum(np.cumsum(v * v) / k - mean * mean, 0.0) * k / np.maximum(k - 1, 1)
    return mean, z * np.sqrt(var / k)


def running_mean_figure(series: Mapping[int, tuple[BatchRuns, float]], title: str) -> go.Figure:
    """Figs. 2(a), 2(b), 5: running mean of N_rej over runs (x in hundreds of runs, as in the paper)
    with its band, and Thm 1 / Thm 3's exact value as a flat line. ``series``: M -> (runs, theory)."""
    fig = go.Figure()
    for i, (m, (runs, theory)) in enumerate(series.items()):
        mean, half = running_mean(runs.rejections)
        x = (np.arange(1, len(mean) + 1) / 100.0).tolist()
        c = series_color(i + 1)
        fig.add_trace(
            go.Scatter(
                x=x + x[::-1],
                y=(mean + half).tolist() + (mean - half)[::-1].tolist(),
                fill="toself",
                fillcolor=_rgba(c, 0.15),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x, y=mean.tolist(), mode="lines", line={"color": c, "width": 1.5}, name=f"{_label(m)}: empirical mean"
            )
        )
        fig.add_trace(
            go.Scatter(
                x=[x[0], x[-1]],
                y=[theory, theory],
                mode="lines",
                line={"color": c, "dash": "dash", "width": 2},
                name=f"{_label(m)}: theory {theory:.3f}",
            )
        )
    fig.update_layout(**base_layout(title, height=380), xaxis=axis("runs (× 100)"), yaxis=axis("mean rejections N_rej"))
    fig.add_annotation(
        text=BAND_NOTE,
        x=1,
        y=0,
        xref="paper",
        yref="paper",
        xanchor="right",
        yanchor="bottom",
        showarrow=False,
        font={"size": 10, "color": "#6b7280"},
    )
    return fig


def cumulative_figure(
    per_position: Mapping[int | None, np.ndarray], measured: Mapping[int, BatchRuns], title: str
) -> go.Figure:
    """Expected rejections among the first n positions vs n (Thm 1 / Thm 3 summed to n), lines, with
    the Monte Carlo mean of the same count as markers."""
    fig = go.Figure()
    for i, (m, per) in enumerate(per_position.items()):
        c = series_color(i + 1)
        n = list(range(1, len(per) + 1))
        fig.add_trace(
            go.Scatter(x=n, y=np.cumsum(per).tolist(), mode="lines", line={"color": c}, name=f"{_label(m)}: theory")
        )
        if m in measured:
            emp = measured[m].rejected.cumsum(1).mean(0)
            fig.add_trace(
                go.Scatter(
                    x=n,
                    y=emp.tolist(),
                    mode="markers",
                    marker={"color": c, "size": 5, "symbol": "circle-open"},
                    name=f"{_label(m)}: Monte Carlo",
                )
            )
    fig.update_layout(
        **base_layout(title, height=380), xaxis=axis("position n (horizon)"), yaxis=axis("expected rejections up to n")
    )
    return fig


def versus_m_figure(
    ms: Sequence[int], theory: Sequence[float], limit: float, measured: Mapping[int, tuple[float, float]], title: str
) -> go.Figure:
    """Fig. 2(c) / 5 right: E[N_rej] of batch SD vs M (Thm 3), the M -> infinity limit (Prop. 1),
    and Monte Carlo means with 1.96 s.e. error bars; M = 1 is SD."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=list(ms),
            y=list(theory),
            mode="lines+markers",
            name="Thm 3 (exact)",
            line={"color": series_color(1)},
            marker={"size": 5},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[ms[0], ms[-1]],
            y=[limit, limit],
            mode="lines",
            line={"color": series_color(2), "dash": "dash"},
            name=f"limit M → ∞ (Prop. 1): {limit:.3f}",
        )
    )
    if measured:
        ks = sorted(measured)
        fig.add_trace(
            go.Scatter(
                x=ks,
                y=[measured[k][0] for k in ks],
                mode="markers",
                error_y={"type": "data", "array": [measured[k][1] for k in ks]},
                marker={"color": series_color(3), "size": 8, "symbol": "diamond"},
                name="Monte Carlo (±1.96 s.e.)",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[1],
            y=[theory[0]],
            mode="markers",
            marker={"color": "black", "size": 9},
            name=f"SD: ({ms[0]}, {theory[0]:.3f})",
        )
    )
    fig.update_layout(
        **base_layout(title, height=380),
        xaxis=axis("number of drafts M", type="log"),
        yaxis=axis("expected rejections E[N_rej]"),
    )
    return fig


def _closed_and_direct(
    ms: Sequence[int], sym: str, key: float, curves: tuple[list[float], list[float]], row: int, i: int
) -> tuple[go.Scatter, go.Scatter]:
    """One setting's closed form (a line, in the legend) and its residual chain computed directly
    (open markers in the same colour)."""
    closed, direct = curves
    c = series_color(i + 1)
    line = go.Scatter(
        x=list(ms),
        y=closed,
        mode="lines",
        line={"color": c},
        name=f"{sym} = {key:g}: closed form",
        legendgroup=f"{row}{i}",
    )
    markers = go.Scatter(
        x=list(ms),
        y=direct,
        mode="markers",
        marker={"color": c, "size": 6, "symbol": "circle-open"},
        name=f"{sym} = {key:g}: residual chain",
        legendgroup=f"{row}{i}",
        showlegend=False,
    )
    return line, markers


def batch_improvement_figure(
    ms: Sequence[int],
    bernoulli: Mapping[float, tuple[list[float], list[float]]],
    uniform: Mapping[float, tuple[list[float], list[float]]],
) -> go.Figure:
    """Fig. 3 right: single-token batch improvement vs M. Lines: the paper's closed forms; markers:
    the residual chain computed directly. Upper: target Ber(0.5), draft Ber(u); lower: target uniform
    on V', draft uniform on V, r = |V|/|V'|."""
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.08,
        subplot_titles=("target Ber(0.5), draft Ber(u)", "target Unif(V'), draft Unif(V)"),
    )
    for row, (sym, groups) in enumerate((("u", bernoulli), ("r", uniform)), start=1):
        for i, (key, curves) in enumerate(groups.items()):
            for trace in _closed_and_direct(ms, sym, key, curves, row, i):
                fig.add_trace(trace, row=row, col=1)
    markers_note = go.Scatter(
        x=[None],
        y=[None],
        mode="markers",
        marker={"color": "#6b7280", "symbol": "circle-open"},
        name="markers: residual chain, computed directly",
    )
    fig.add_trace(markers_note, row=1, col=1)
    layout = base_layout("Batch improvement vs batch size M (Fig. 3 right)", height=560)
    layout["legend"] = {"font": {"size": 10}}
    fig.update_layout(**layout)
    fig.update_xaxes(**axis(), row=1, col=1)
    fig.update_xaxes(**axis("number of drafts M"), row=2, col=1)
    fig.update_yaxes(**axis("BI = TV − Π TV(p^m, q)"), row=1, col=1)
    fig.update_yaxes(**axis("BI"), row=2, col=1)
    return fig


def _decoding_traces(
    pts: Sequence[tuple[float, float, float]], mc: Sequence[tuple[float, float]], name: str, c: str, sym: str
) -> list[go.Scatter]:
    """One decoding's exact (bias, rejection) curve over eps, and its sampled points where there are any."""
    out = [
        go.Scatter(
            x=[b for _, b, _ in pts],
            y=[r for _, _, r in pts],
            mode="lines+markers",
            line={"color": c},
            marker={"symbol": sym, "size": 6},
            text=[f"eps = {e:.3g}" for e, _, _ in pts],
            name=f"{name}: exact",
        )
    ]
    if mc:
        out.append(
            go.Scatter(
                x=[b for b, _ in mc],
                y=[r for _, r in mc],
                mode="markers",
                marker={"color": c, "symbol": sym + "-open", "size": 11},
                name=f"{name}: sampled",
            )
        )
    return out


def _front_traces(total_tv: float) -> tuple[go.Scatter, go.Scatter]:
    """The unattainable triangle under Thm 5's front (rejection + bias < TV), and the front itself."""
    unattainable = go.Scatter(
        x=[0, total_tv, 0, 0],
        y=[0, 0, total_tv, 0],
        mode="lines",
        fill="toself",
        fillcolor="rgba(214,69,69,0.12)",
        line={"width": 0},
        hoverinfo="skip",
        name="unattainable (rejection + bias < TV)",
    )
    front = go.Scatter(
        x=[0, total_tv],
        y=[total_tv, 0],
        mode="lines",
        line={"color": "black", "dash": "dot", "width": 2},
        name="Pareto front (Thm 5)",
    )
    return unattainable, front


def pareto_figure(
    total_tv: float,
    opt: Sequence[tuple[float, float, float]],
    uno: Sequence[tuple[float, float, float]],
    opt_mc: Sequence[tuple[float, float]],
    uno_mc: Sequence[tuple[float, float]],
    title: str,
) -> go.Figure:
    """Fig. 4(a, b): rejection probability (y) vs TV bias from the target (x). The segment from SD
    (0, TV) to accept-all (TV, 0) is Thm 5's front; below it is unattainable. ``opt``/``uno``:
    (eps, bias, rejection) exact; ``*_mc``: (bias, rejection) measured by sampling."""
    unattainable, front = _front_traces(total_tv)
    fig = go.Figure()
    fig.add_trace(unattainable)
    for trace in _decoding_traces(opt, opt_mc, "Decoding-OPT", series_color(1), "circle"):
        fig.add_trace(trace)
    for trace in _decoding_traces(uno, uno_mc, "Decoding-UNO", series_color(2), "square"):
        fig.add_trace(trace)
    fig.add_trace(front)
    top = 1.08 * max([total_tv] + [b for _, b, _ in uno] + [b for b, _ in uno_mc])
    fig.update_layout(
        **base_layout(title, height=420),
        xaxis=axis("TV(output law, target p)", range=[-0.01, top]),
        yaxis=axis("rejection probability", range=[-0.01, top]),
    )
    return fig


def bias_vs_eps_figure(
    eps: Sequence[float],
    loss_star: Sequence[float],
    uno: Sequence[float],
    opt_mc: Sequence[tuple[float, float]],
    uno_mc: Sequence[tuple[float, float]],
    total_tv: float,
    title: str,
) -> go.Figure:
    """Fig. 4(c): bias vs the over-acceptance eps; Thm 4's Loss* (reached by OPT) and UNO's bias."""
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=list(eps),
            y=list(loss_star),
            mode="lines",
            line={"color": series_color(1)},
            name="Loss*_TV(b_eps) (Thm 4) = OPT",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=list(eps), y=list(uno), mode="lines", line={"color": series_color(2)}, name="UNO (rejection law = target)"
        )
    )
    for mc, name, c in ((opt_mc, "OPT sampled", series_color(1)), (uno_mc, "UNO sampled", series_color(2))):
        if mc:
            fig.add_trace(
                go.Scatter(
                    x=[e for e, _ in mc],
                    y=[b for _, b in mc],
                    mode="markers",
                    marker={"color": c, "size": 8, "symbol": "diamond-open"},
                    name=name,
                )
            )
    fig.add_trace(
        go.Scatter(
            x=[eps[0], eps[-1]],
            y=[total_tv, total_tv],
            mode="lines",
            line={"color": "#6b7280", "dash": "dot"},
            name=f"TV(p, q) = {total_tv:.3f}",
        )
    )
    fig.update_layout(
        **base_layout(title, height=380),
        xaxis=axis("eps (b = min(1, (p + eps) / q))"),
        yaxis=axis("TV(output law, target p)"),
    )
    return fig
