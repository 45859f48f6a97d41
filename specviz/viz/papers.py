"""The Papers view's figure: one paper's claims, each in its own strip with its own scale, specviz's
number as a dot with its spread as a bar, coloured by the verdict, and the paper's own number as a
diamond where it is on the same scale (rows of ``python -m specviz papers``, read as plain dicts)."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.viz.template import TEMPLATE

VERDICT_COLORS = {
    "holds": "#1f9d55",
    "holds at small scale": "#65a30d",
    "does not hold": "#d64545",
    "not comparable": "#6b7280",
    "unresolved": "#e08a00",
}
STRIP_PX = 74


def _short(text: str, n: int = 70) -> str:
    """``text`` cut to ``n`` characters, ending "…" where it was cut."""
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


def _titles(rows: list[dict[str, Any]], names: dict[str, str]) -> list[str]:
    """Each strip's title: its number, the claim (cut short), the pair it was measured on, the verdict."""
    return [
        f"{i}. {_short(r['claim'])}"
        + (f" · {names.get(r['pair'], r['pair'])}" if r.get("pair") else "")
        + f" · {r['verdict']}"
        for i, r in enumerate(rows, 1)
    ]


def _specviz_point(r: dict[str, Any], first: bool) -> go.Scatter:
    """specviz's value as a dot in the verdict's colour, its spread as an error bar."""
    color = VERDICT_COLORS.get(r["verdict"], "#6b7280")
    spread = r.get("spread")
    return go.Scatter(
        x=[r["value"]],
        y=[0],
        mode="markers",
        marker=dict(size=12, color=color, symbol="circle"),
        error_x=dict(type="data", array=[spread], color=color, thickness=2, width=6) if spread else None,
        name="specviz",
        showlegend=first,
        legendgroup="specviz",
        hovertemplate=f"specviz: {r['measured']}<br>({r['spread_kind']})<extra></extra>".replace("%", "%%"),
    )


def _paper_point(r: dict[str, Any], paper: float, first: bool) -> go.Scatter:
    """The paper's own number as an open diamond."""
    return go.Scatter(
        x=[paper],
        y=[0],
        mode="markers",
        marker=dict(size=12, color="#111827", symbol="diamond-open", line=dict(width=2)),
        name="paper",
        showlegend=first,
        legendgroup="paper",
        hovertemplate=f"paper: {r['paper_value']}<extra></extra>".replace("%", "%%"),
    )


def claims_figure(rows: list[dict[str, Any]], pair_names: dict[str, str] | None = None) -> go.Figure:
    """One strip per row: specviz's value ± spread (a dot coloured by the verdict), the paper's number
    (a diamond) where the row's ``extra["paper"]`` gives one on the same scale."""
    n = max(len(rows), 1)
    fig = make_subplots(
        rows=n, cols=1, vertical_spacing=min(0.5 / n, 0.12), subplot_titles=_titles(rows, pair_names or {})
    )
    shown_paper = False
    for i, r in enumerate(rows, 1):
        fig.add_trace(_specviz_point(r, i == 1), row=i, col=1)
        paper = (r.get("extra") or {}).get("paper")
        if isinstance(paper, (int, float)):
            fig.add_trace(_paper_point(r, paper, not shown_paper), row=i, col=1)
            shown_paper = True
        fig.update_yaxes(visible=False, range=[-1, 1], row=i, col=1)
    fig.update_annotations(font_size=11, xanchor="left", x=0)
    fig.update_layout(
        template=TEMPLATE,
        height=STRIP_PX * n + 94,
        margin=dict(l=16, r=16, t=30, b=64),  # the last strip's ticks, then the legend under them
        legend=dict(orientation="h", y=0, yanchor="bottom", x=0, xanchor="left", yref="container"),
    )
    return fig
