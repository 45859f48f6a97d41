"""The forest of a ``beam`` / ``dsbd`` step ("Dynamic-Width Speculative Beam Decoding", arXiv
2409.16560): one tree per input beam (the beam at the left, its drafted layers to the right), nodes and
edges coloured by beam, the node's verification status as its outline, named in the legend with its
count as the tree view's statuses are (one trace per beam and status, ``meta`` the status and
``customdata`` the node ids: a click opens the node's view, ``viz.beam_story.beam_node_story``), and
the beams kept at the end of the step (``controller["kept"]``, or every node of a ``beam`` step) drawn
as stars (the node's own marker, so the mark never falls on an edge or a label beside it).
``viz.beams.step_forest_figure`` draws it for a trace's step."""

from __future__ import annotations

from collections import Counter
from typing import Any

import plotly.graph_objects as go

from specviz.step_state import BeamStepState, DsbdState
from specviz.trace import StepRecord, TreeNode
from specviz.viz.explain import TESTED, StepIndex, describe_test, node_decision
from specviz.viz.style import (
    EDGE_COLOR,
    MONO,
    STATUS_COLORS,
    STATUS_LABELS,
    axis,
    base_layout,
    figure,
    fmt,
    html_escape,
    message_figure,
    series_color,
    title_lines,
    titled,
    visible_text,
    wrap_html,
)

# a forest node's marker (px, without its 3 px status outline) and a kept node's star: a star of the same
# size looks smaller than the circle, so it is drawn a little larger, still well within a row (26 px)
NODE_SIZE, KEPT_SIZE = 12, 15


def forest_layout(forest: list[TreeNode], n_beams: int) -> tuple[dict[int, tuple[float, float]], list[float]]:
    """Positions of the forest's nodes (x = depth + 1, leaves on consecutive rows, a parent midway
    between its children) and the y of each input beam (x = 0), trees stacked in beam order."""
    kids: dict[int | None, list[int]] = {}
    ids = {n.id for n in forest}
    by_root: dict[int, list[int]] = {}
    for n in forest:
        parent = n.parent if n.parent in ids else None
        if parent is None:
            by_root.setdefault(n.root, []).append(n.id)
        else:
            kids.setdefault(parent, []).append(n.id)
    depth = {n.id: n.depth for n in forest}
    pos: dict[int, tuple[float, float]] = {}
    row = [0]

    def place(v: int) -> float:
        ch = kids.get(v, [])
        y = sum(place(c) for c in ch) / len(ch) if ch else -float(row[0])
        if not ch:
            row[0] += 1
        pos[v] = (depth[v] + 1.0, y)
        return y

    beam_y = []
    for b in range(max(n_beams, max(by_root, default=-1) + 1)):
        tops = [place(v) for v in by_root.get(b, [])]
        if not tops:
            tops, row[0] = [-float(row[0])], row[0] + 1
        beam_y.append(sum(tops) / len(tops))
        row[0] += 0.5
    return pos, beam_y


def _said(n: TreeNode, idx: StepIndex | None) -> str:
    """The node's test, or what it was drawn from, in its step's rule's words (``core.rule_words``)."""
    if idx is None:
        return ""
    line = (
        describe_test(n, idx)
        if n.status in TESTED
        else node_decision(n, idx)
        if n.status in ("resampled", "bonus")
        else ""
    )
    return "<br>" + wrap_html(line, 64) if line else ""


def _kept(step: StepRecord) -> set[int]:
    """The nodes whose beams the step kept: ``dsbd``'s ``kept``, every node of a ``beam`` step."""
    st = step.controller if isinstance(step.controller, BeamStepState) else None
    return set(st.kept if isinstance(st, DsbdState) else [n.id for n in step.forest] if st is not None else [])


def _edges_trace(step: StepRecord, pos: dict[int, tuple[float, float]], beam_y: list[float]) -> dict[str, Any]:
    """Every edge, parent (or input beam) to child, as one line trace."""
    byid = {n.id: n for n in step.forest}
    ex: list[Any] = []
    ey: list[Any] = []
    for n in step.forest:
        a = pos[n.parent] if n.parent in byid else (0.0, beam_y[n.root])
        ex += [a[0], pos[n.id][0], None]
        ey += [a[1], pos[n.id][1], None]
    return {
        "type": "scatter",
        "mode": "lines",
        "x": ex,
        "y": ey,
        "hoverinfo": "skip",
        "showlegend": False,
        "line": {"color": EDGE_COLOR, "width": 1.2},
    }


def _beam_traces(beam_y: list[float], beam_texts: list[str] | None) -> list[dict[str, Any]]:
    """The input beams as squares at x = 0, named beside them, their texts' ends on hover."""
    data = []
    for b, y in enumerate(beam_y):
        text = beam_texts[b] if beam_texts and b < len(beam_texts) else ""
        # named beside its square (and coloured as in the beams table): no legend entry, so the legend
        # keeps one row however many beams there are
        data.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "x": [0.0],
                "y": [y],
                "name": f"beam {b}",
                "showlegend": False,
                "meta": "beam",
                "text": [f"beam {b}"],
                "textposition": "middle left",
                "cliponaxis": False,  # the label may reach into the left margin in a narrow column
                "hovertext": [html_escape(visible_text(text[-60:], 60)) or f"beam {b}"],
                "hoverinfo": "text",
                "marker": {"size": 14, "symbol": "square", "color": series_color(b + 1)},
            }
        )
    return data


def _node_traces(
    step: StepRecord, pos: dict[int, tuple[float, float]], kept: set[int], idx: StepIndex | None
) -> list[dict[str, Any]]:
    """One trace per beam and status: the nodes in their beam's colour, outlined in their status's,
    kept ones as stars; their facts and test on hover."""
    data = []
    for b, status in sorted({(n.root, n.status) for n in step.forest}):
        # one trace per beam and status: ``meta`` the status and ``customdata`` the node ids, the tree
        # view's contract, so a click on a node opens its view (``ui.style.PAGE_JS``)
        nodes = [n for n in step.forest if n.root == b and n.status == status]
        data.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "showlegend": False,
                "name": f"beam {b}",
                "meta": status,
                "customdata": [n.id for n in nodes],
                "x": [pos[n.id][0] for n in nodes],
                "y": [pos[n.id][1] for n in nodes],
                "text": [html_escape(visible_text(n.token_text, 8)) for n in nodes],
                "textposition": "top center",
                "textfont": {"family": MONO, "size": 10},
                "hovertext": [
                    f"node {n.id} · beam {b}{' · ★ kept' if n.id in kept else ''}<br>{html_escape(repr(n.token_text))}"
                    f"<br>status {n.status}"
                    f"<br>q {fmt(n.q)} · p {fmt(n.p)} · accept {fmt(n.accept_prob)}{_said(n, idx)}"
                    for n in nodes
                ],
                "hoverinfo": "text",
                # a kept node is drawn as a star, in its place: no mark of its own beside it, which would fall on
                # the edges to its children or its neighbours' labels at some widths
                "marker": {
                    "size": [KEPT_SIZE if n.id in kept else NODE_SIZE for n in nodes],
                    "symbol": ["star" if n.id in kept else "circle" for n in nodes],
                    "color": series_color(b + 1),
                    "line": {"width": 3, "color": [STATUS_COLORS.get(n.status, "#9ca3af") for n in nodes]},
                },
            }
        )
    return data


def _legend_traces(step: StepRecord, kept: set[int]) -> list[dict[str, Any]]:
    """Legend entries only (no points): the kept beams' star and each status's outline with its count."""
    data = []
    if any(n.id in kept for n in step.forest):  # the legend's entry only: the stars are the nodes themselves
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "kept beams",
                "x": [None],
                "y": [None],
                "hoverinfo": "skip",
                "marker": {"symbol": "star", "size": KEPT_SIZE, "color": "#6b7280"},
            }
        )
    counts = Counter(n.status for n in step.forest)
    for status, label in STATUS_LABELS.items():  # what a node's outline says (its fill is its beam's colour)
        if counts[status]:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"{label} ({counts[status]})",
                    "x": [None],
                    "y": [None],
                    "hoverinfo": "skip",
                    "marker": {
                        "symbol": "circle",
                        "size": NODE_SIZE,
                        "color": "white",
                        "line": {"width": 3, "color": STATUS_COLORS[status]},
                    },
                }
            )
    return data


def forest_figure(step: StepRecord | None, beam_texts: list[str] | None = None, height: int | None = None) -> go.Figure:
    """The forest of a ``beam``/``dsbd`` step (see module docstring). ``beam_texts``: the input
    beams' texts (hover), e.g. from ``beam_rows`` of the previous step; ``height``: pixels under the
    title and legend (by default from the number of rows)."""
    if step is None or not step.forest:
        return message_figure("No forest at this step.")
    kept = _kept(step)
    n_beams = len(beam_texts) if beam_texts else max(n.root for n in step.forest) + 1
    pos, beam_y = forest_layout(step.forest, n_beams)
    idx = StepIndex(step) if step.rule is not None else None  # a trace older than the rule record: numbers only
    data = [_edges_trace(step, pos, beam_y), *_beam_traces(beam_y, beam_texts)]
    data += _node_traces(step, pos, kept, idx) + _legend_traces(step, kept)
    rows = len({y for _, y in pos.values()}) + len(beam_y)
    title = f"Beam forest · step {step.index + 1}"
    layout = base_layout(title)
    layout["xaxis"] = axis("layer", dtick=1, range=[-0.9, max(x for x, _ in pos.values()) + 0.6], zeroline=False)
    layout["yaxis"] = axis(None, visible=False)
    titled(layout, title_lines(title, []), data, height or int(min(max(76 + 26 * rows, 196), 816)))
    return figure(data, layout)
