"""The distribution view's bottom panel (axes ``x2`` / ``y2``): the uniform draw ``u`` against the
acceptance probability ``a`` on [0, 1], the node accepted iff u lands left of a (Leviathan et al. 2023,
Algorithm 1), and under it the node's test or decision in words."""

from __future__ import annotations

from specviz.trace import TESTED, TreeNode
from specviz.viz.explain import StepIndex, describe_test, node_decision
from specviz.viz.style import MONO, STATUS_COLORS, fmt_prob, wrap_html

ACCEPT_FILL = "rgba(31, 157, 85, 0.16)"
REJECT_FILL = "rgba(214, 69, 69, 0.13)"


def _band_shapes(a: float) -> list[dict]:
    """The [0, 1] line, [0, a) shaded accept and [a, 1] shaded reject, and a's tick."""
    return [
        {
            "type": "line",
            "xref": "x2",
            "yref": "y2",
            "x0": 0,
            "x1": 1,
            "y0": 0,
            "y1": 0,
            "line": {"color": "#9ca3af", "width": 1},
        },
        {
            "type": "rect",
            "xref": "x2",
            "yref": "y2",
            "x0": 0,
            "x1": a,
            "y0": -0.5,
            "y1": 0.5,
            "fillcolor": ACCEPT_FILL,
            "line": {"width": 0},
            "layer": "below",
        },
        {
            "type": "rect",
            "xref": "x2",
            "yref": "y2",
            "x0": a,
            "x1": 1,
            "y0": -0.5,
            "y1": 0.5,
            "fillcolor": REJECT_FILL,
            "line": {"width": 0},
            "layer": "below",
        },
        {
            "type": "line",
            "xref": "x2",
            "yref": "y2",
            "x0": a,
            "x1": a,
            "y0": -0.7,
            "y1": 0.7,
            "line": {"color": "#111827", "width": 2},
        },
    ]


def _band_notes(a: float, u: float | None) -> list[dict]:
    """``a = ...`` above a's tick, and the words accept / reject in their parts of the line where they
    have room (not under the draw)."""
    notes = [
        {
            "xref": "x2",
            "yref": "y2",
            "x": a,
            "y": 0.7,
            "text": f"a = {fmt_prob(a)}",
            "showarrow": False,
            "xanchor": "left" if a < 0.1 else "right" if a > 0.9 else "center",
            "yanchor": "bottom",
            "font": {"size": 11, "family": MONO},
        }
    ]
    if a >= 0.2 and (u is None or u > 0.14):
        notes.append(
            {
                "xref": "x2",
                "yref": "y2",
                "x": 0.01,
                "y": 0,
                "text": "accept",
                "showarrow": False,
                "xanchor": "left",
                "font": {"size": 10, "color": STATUS_COLORS["accepted"]},
            }
        )
    if a <= 0.8 and (u is None or u < 0.86):
        notes.append(
            {
                "xref": "x2",
                "yref": "y2",
                "x": 0.99,
                "y": 0,
                "text": "reject",
                "showarrow": False,
                "xanchor": "right",
                "font": {"size": 10, "color": STATUS_COLORS["rejected"]},
            }
        )
    return notes


def _draw_trace(node: TreeNode, a: float, u: float) -> dict:
    """The draw ``u`` as a diamond on the line, in the colour of the node's outcome."""
    color = STATUS_COLORS[node.status]
    return {
        "type": "scatter",
        "mode": "markers+text",
        "x": [u],
        "y": [0],
        "xaxis": "x2",
        "yaxis": "y2",
        "meta": "u",
        "name": "uniform draw u",
        "showlegend": False,
        "text": [f"u = {fmt_prob(u)}"],
        "textposition": "bottom left" if u > 0.85 else "bottom right" if u < 0.15 else "bottom center",
        "textfont": {"family": MONO, "size": 11, "color": color},
        "marker": {"symbol": "diamond", "size": 14, "color": color, "line": {"color": "white", "width": 1}},
        "hovertemplate": f"u = {fmt_prob(u)} {'<' if u < a else '≥'} a = {fmt_prob(a)} → {node.status}<extra></extra>",
    }


def _caption(node: TreeNode, idx: StepIndex, greedy: bool, tested: bool) -> dict:
    """The node's test (or, untested, its decision) in words, at the figure's bottom left."""
    caption = node_decision(node, idx, greedy) if not tested else describe_test(node, idx, greedy)
    return {
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 0.25 if tested else 0.02,
        "xanchor": "left",
        "yanchor": "bottom",
        "showarrow": False,
        "text": wrap_html(caption, 56),
        "align": "left",
        "font": {"size": 11, "color": "#374151"},
    }


def number_line(node: TreeNode, idx: StepIndex, greedy: bool) -> tuple[list[dict], list[dict], list[dict]]:
    """Traces, shapes and annotations of the u-against-a panel (axes x2 / y2)."""
    data: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    a, u = node.accept_prob, node.draw
    tested = node.status in TESTED and a is not None
    if tested:
        shapes += _band_shapes(a)
        notes += _band_notes(a, u)
        if u is not None:
            data.append(_draw_trace(node, a, u))
    notes.append(_caption(node, idx, greedy, tested))
    return data, shapes, notes
