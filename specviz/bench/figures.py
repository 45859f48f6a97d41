"""Plotly figures of a ``bench.json``: speedup per method and category, the cost model's t(n), and
measured against predicted speedup. Pure functions of the report's plain data."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go


def speedup_figure(rows: list[dict[str, Any]]) -> go.Figure:
    """Grouped bars: tokens/s relative to ``ar`` per method, one colour per prompt category."""
    fig = go.Figure()
    for cat in dict.fromkeys(r["category"] for r in rows):
        sub = [r for r in rows if r["category"] == cat]
        fig.add_bar(
            name=cat,
            x=[r["method"] for r in sub],
            y=[r["speedup_vs_ar"] for r in sub],
            customdata=[[r["tau"], r["tokens_per_s"]] for r in sub],
            hovertemplate="%{x}: %{y:.2f}x ar<br>tau %{customdata[0]:.2f}, %{customdata[1]:.1f} tokens/s",
        )
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="ar")
    fig.update_layout(
        barmode="group",
        title="Speedup over ar (same process, greedy)",
        yaxis_title="tokens/s / tokens/s of ar",
        xaxis_title="method",
    )
    return fig


def cost_figure(
    t_target: dict[int, float],
    t_draft: dict[int, float] | None,
    device: str,
    t_early_exit: dict[int, float] | None = None,
) -> go.Figure:
    """t(n) / t(1) of target, draft and early-exit drafter: how much a call of n tokens costs relative to
    one token. A flat curve (memory-bound GPU) makes verifying a wide tree nearly free; a rising one
    (CPU) does not."""
    fig = go.Figure()
    for name, times in (("target", t_target), ("draft", t_draft), ("early-exit drafter", t_early_exit)):
        if times:
            xs = sorted(times)
            fig.add_scatter(
                x=xs,
                y=[times[n] / times[xs[0]] for n in xs],
                mode="lines+markers",
                name=name,
                customdata=[times[n] for n in xs],
                hovertemplate="n=%{x}: %{y:.2f} t(1), %{customdata:.2f} ms",
            )
    fig.add_hline(y=1.0, line_dash="dot", annotation_text="memory-bound ideal: n tokens cost one")
    fig.update_layout(
        title=f"Forward time of n tokens in one pass on {device}",
        xaxis_title="n (tokens per call)",
        yaxis_title="t(n) / t(1)",
        xaxis_type="log",
    )
    return fig


def efficiency_figure(rows: list[dict[str, Any]]) -> go.Figure:
    """Measured against cost-model speedup, one point per method and category; the diagonal is
    efficiency 1."""
    pts = [r for r in rows if r.get("predicted_speedup")]
    fig = go.Figure()
    fig.add_scatter(
        x=[r["predicted_speedup"] for r in pts],
        y=[r["speedup_vs_ar"] for r in pts],
        mode="markers+text",
        text=[f"{r['method']} ({r['category']})" for r in pts],
        textposition="top center",
        name="runs",
    )
    top = max([1.0] + [max(r["predicted_speedup"], r["speedup_vs_ar"] or 0) for r in pts])
    fig.add_scatter(x=[0, top], y=[0, top], mode="lines", line_dash="dot", name="efficiency 1")
    fig.update_layout(
        title="Measured vs predicted speedup", xaxis_title="predicted (cost model)", yaxis_title="measured"
    )
    return fig


def write_html(figures: list[go.Figure], path: str) -> None:
    """All figures in one self-contained HTML file (plotly.js embedded once)."""
    parts = [fig.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, fig in enumerate(figures)]
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(
            "<html><head><meta charset='utf-8'><title>specviz bench</title></head><body>\n"
            + "\n".join(parts)
            + "\n</body></html>\n"
        )
