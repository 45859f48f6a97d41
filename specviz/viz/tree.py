"""The draft tree / forest of one step as a Plotly figure.

Layout: networkx holds the graph (a virtual *context* node, the committed text, is the parent of
every root, so chains, trees and DSBD/batch forests are drawn the same way); a tidy layered layout
puts depth on x (text reads left to right) and gives every leaf its own row, each parent centred on
its children. Nodes are coloured and shaped by status; the path of committed tokens is drawn as a
thick dark line through nodes with a dark outline. Hover shows the token text, ids, q, p, the
acceptance probability used, the p it was computed against, the uniform draw and the decision in
words (``specviz.viz.explain``). A ``dyntree`` step (controller ``cum_q``) also shows each node's
cumulative draft probability, the value its tree was built by, in the hover, and under the node
where the rows have room for it (at most about 18 leaves).

Trace naming contract (tests rely on it): one scatter trace per node status, ``meta`` = the status and
``customdata`` = node ids; the committed path is the trace with ``meta == "path"`` and its
``customdata`` lists the node ids it passes through, context first as ``-1``.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import plotly.graph_objects as go

from specviz.step_state import DynTreeState
from specviz.trace import NODE_STATUSES, StepRecord, TreeNode
from specviz.viz.explain import TESTED, StepIndex, is_greedy_step, node_decision
from specviz.viz.style import (
    CONTEXT_COLOR,
    EDGE_COLOR,
    HOVER_CHARS,
    MONO,
    PATH_COLOR,
    STATUS_COLORS,
    STATUS_LABELS,
    STATUS_SYMBOLS,
    base_layout,
    figure,
    fmt_prob,
    html_escape,
    message_figure,
    title_lines,
    titled,
    visible_text,
    wrap_html,
    wrap_markup,
)
from specviz.viz.template import UNMEASURED

CONTEXT_ID = -1
MAX_LABELLED_NODES = 96
MAX_HEIGHT = 796  # pixels under the title and legend, at most
# The legend's names: a status in a word or two (the hover says it in full) and the count, so that two
# fit a row of the narrowest tree, a column at phone width: half its plot (about 133 px) holds 16
# characters at the legend's 10 px.
LEGEND_NAMES = {
    "accepted": "accepted",
    "rejected": "rejected",
    "not_reached": "not reached",
    "resampled": "resampled",
    "bonus": "bonus",
}
LEGEND_CHARS = 16


def tree_layout(forest: list[TreeNode]) -> tuple[nx.DiGraph, dict[int, tuple[float, float]], int]:
    """Graph of the forest under a context node, positions ``id -> (x, y)`` and the number of leaves.

    x is the depth below the context (roots at 1); leaves take consecutive rows top to bottom in
    draft order; a parent sits midway between its first and last child. Unknown parent ids (a
    malformed trace) make the node a root rather than failing.
    """
    g = nx.DiGraph()
    g.add_node(CONTEXT_ID)
    ids = {n.id for n in forest}
    for n in forest:
        g.add_node(n.id)
    for n in forest:
        parent = n.parent if n.parent in ids and n.parent != n.id else CONTEXT_ID
        g.add_edge(parent, n.id)
    if not nx.is_arborescence(g):  # cycles from a malformed parent chain: hang everything off the context
        g = nx.DiGraph()
        g.add_node(CONTEXT_ID)
        g.add_edges_from((CONTEXT_ID, n.id) for n in forest)
    depth = nx.single_source_shortest_path_length(g, CONTEXT_ID)
    pos: dict[int, tuple[float, float]] = {}
    row = 0
    for v in nx.dfs_postorder_nodes(g, CONTEXT_ID):
        children = list(g.successors(v))
        if children:
            y = (pos[children[0]][1] + pos[children[-1]][1]) / 2
        else:
            y = -float(row)
            row += 1
        pos[v] = (float(depth[v]), y)
    return g, pos, max(row, 1)


def committed_path(step: StepRecord, g: nx.DiGraph) -> list[int]:
    """Node ids of the committed tokens in order, preceded by the context node (``-1``)."""
    ids = [c.node_id for c in step.committed if c.node_id is not None and c.node_id in g]
    return [CONTEXT_ID, *ids]


def cumulative_draft_probs(step: StepRecord) -> dict[int, float]:
    """Node id -> cumulative draft probability (the product of q along its path) for a step whose
    controller records it (``step_state.DynTreeState.cum_q``, one per drafted node, checked on reading
    by ``trace_check``); {} otherwise."""
    c = step.controller
    return {i: float(x) for i, x in enumerate(c.cum_q)} if isinstance(c, DynTreeState) else {}


def feature_source(n: TreeNode) -> str:
    """Where a feature drafter's node came from: the target's own hidden states for a node drafted right
    after the committed text, the head's own output feature for a deeper one (EAGLE's recurrence)."""
    if n.parent is None:
        return "drafted from: the target's own features at the last verified position"
    return "drafted from: the draft head's own feature at its parent (EAGLE's recurrence)"


def q_lines(n: TreeNode) -> list[str]:
    """The hover's q: the law the rule verified against, and the draft's own probability beside it when the
    proposal was chosen, not drawn (``TreeNode.q_draft``: the distribution view's q bars are the same law)."""
    if n.q_draft is None:
        return [f"q draft = {fmt_prob(n.q)}"]
    return [f"q = {fmt_prob(n.q)} (chosen, so a point mass); draft's own = {fmt_prob(n.q_draft)}"]


def node_hover(
    n: TreeNode,
    idx: StepIndex | None = None,
    greedy: bool | None = None,
    cum: float | None = None,
    feature: bool = False,
) -> str:
    """Hover text of a node: token, status, q, its cumulative draft probability ``cum`` when given
    (``dyntree``), where a feature drafter drafted it from (``feature``), the original p, and for tested
    nodes the p their ``a`` was computed against (``p_residual``, labelled), ``a``, ``u`` and the
    decision in words (``explain.node_decision``)."""
    idx = idx or StepIndex(StepRecord(0, 0, forest=[n]))
    lines = [
        f"<b>{html_escape(repr(n.token_text))}</b>  id {n.token_id}",
        f"status: <b>{STATUS_LABELS.get(n.status, n.status)}</b>  (node {n.id}, depth {n.depth}, root {n.root})",
        *q_lines(n),
        *(
            [
                f"cumulative draft probability = {fmt_prob(cum)}  (q multiplied along its path: the tree keeps the "
                f"highest)"
            ]
            if cum is not None
            else []
        ),
        *([feature_source(n)] if feature else []),
        f"p target = {fmt_prob(n.p)}" + ("  (original, before any residual)" if n.status in TESTED else ""),
    ]
    if n.status in TESTED:
        earlier = idx.earlier_rejected(n)
        if n.p_residual is not None:
            what = (
                f"after {len(earlier)} earlier sibling{'s' if len(earlier) != 1 else ''} rejected"
                if earlier
                else "= p: first candidate here"
            )
            lines.append(f"p residual = {fmt_prob(n.p_residual)}  (a uses this; {what})")
        elif earlier:
            lines.append(
                f"p residual: not recorded in this trace (a uses it: {len(earlier)} earlier sibling"
                f"{'s' if len(earlier) != 1 else ''} rejected)"
            )
    if n.accept_prob is not None:
        lines.append(f"accept prob a = {fmt_prob(n.accept_prob)}")
    if n.draw is not None:
        lines.append(f"uniform draw u = {fmt_prob(n.draw)}")
    return "<br>".join([*map(wrap_markup, lines), wrap_html(node_decision(n, idx, greedy), HOVER_CHARS)])


def _elbow(xs: list[Any], ys: list[Any], a: tuple[float, float], b: tuple[float, float]) -> None:
    """Append the edge a -> b as an elbow (across half way, down, across) to ``xs`` / ``ys``."""
    xm = (a[0] + b[0]) / 2
    xs.extend((a[0], xm, xm, b[0], None))
    ys.extend((a[1], a[1], b[1], b[1], None))


def _edge_traces(g: nx.DiGraph, pos: dict[int, tuple[float, float]], path: list[int]) -> list[dict[str, Any]]:
    """The thin grey edges, then the committed path drawn on top of them (``meta`` ``"path"``)."""
    path_edges = set(zip(path, path[1:]))
    ex: list[Any] = []
    ey: list[Any] = []
    for u, v in g.edges:
        if (u, v) not in path_edges:
            _elbow(ex, ey, pos[u], pos[v])
    px: list[Any] = []
    py: list[Any] = []
    for u, v in zip(path, path[1:]):
        _elbow(px, py, pos[u], pos[v])
    edges = {
        "type": "scatter",
        "x": ex,
        "y": ey,
        "mode": "lines",
        "hoverinfo": "skip",
        "line": {"color": EDGE_COLOR, "width": 1.5},
        "showlegend": False,
        "meta": "edges",
    }
    committed = {
        "type": "scatter",
        "x": px,
        "y": py,
        "mode": "lines",
        "hoverinfo": "skip",
        "line": {"color": PATH_COLOR, "width": 3.5},
        "name": "committed path",
        "showlegend": bool(px),
        "meta": "path",
        "customdata": path,
    }
    return [edges, committed]


def _context_trace(step: StepRecord, pos: dict[int, tuple[float, float]], context: str) -> dict[str, Any]:
    """The context node (the committed text), its tail on hover cut into lines of the box's width."""
    tail = context[-60:] if context else ""
    shown = "…" + repr(tail) if tail else ""  # cut into lines of the box's width, as it is, spaces and all
    ctx_hover = "<br>".join(
        [
            wrap_markup(f"<b>context</b> ({step.n_before} tokens generated before this step)"),
            *(html_escape(shown[i : i + HOVER_CHARS]) for i in range(0, len(shown), HOVER_CHARS)),
        ]
    )
    return {
        "type": "scatter",
        "x": [pos[CONTEXT_ID][0]],
        "y": [pos[CONTEXT_ID][1]],
        "mode": "markers+text",
        "text": ["ctx"],
        "textposition": "middle left",
        "cliponaxis": False,  # the label may reach into the left margin in a narrow column
        "textfont": {"size": 10, "color": CONTEXT_COLOR},
        "marker": {"symbol": "square", "size": 14, "color": CONTEXT_COLOR},
        "hovertext": [ctx_hover],
        "hoverinfo": "text",
        "showlegend": False,
        "meta": "context",
        "customdata": [CONTEXT_ID],
    }


def _status_trace(
    status: str,
    nodes: list[TreeNode],
    pos: dict[int, tuple[float, float]],
    on_path: set[int],
    hover: list[str],
    show_text: bool,
    font_size: int,
    marker_size: int,
) -> dict[str, Any]:
    """The nodes of one status: its symbol and colour, outlined dark on the committed path, their tokens
    above them (``show_text``) and ``hover`` on hover; named in the legend with their count."""
    color = STATUS_COLORS[status]
    return {
        "type": "scatter",
        "mode": "markers+text" if show_text else "markers",
        "x": [pos[n.id][0] for n in nodes],
        "y": [pos[n.id][1] for n in nodes],
        "text": [html_escape(visible_text(n.token_text)) for n in nodes] if show_text else None,
        "textposition": "top center",
        "textfont": {
            "family": MONO,
            "size": font_size,
            "color": "#9ca3af" if status == "not_reached" else "#111827",
        },
        "hovertext": hover,
        "hoverinfo": "text",
        "marker": {
            "symbol": STATUS_SYMBOLS[status],
            "size": marker_size,
            "color": color,
            "line": {
                "color": [
                    PATH_COLOR if n.id in on_path else ("white" if status != "not_reached" else color) for n in nodes
                ],
                "width": [2.5 if n.id in on_path else 1.5 for n in nodes],
            },
        },
        "name": f"{LEGEND_NAMES[status]} ({len(nodes)})",
        "meta": status,
        "customdata": [n.id for n in nodes],
    }


def _cum_trace(shown: list[TreeNode], pos: dict[int, tuple[float, float]], cum: dict[int, float], size: int) -> dict:
    """dyntree: each node's cumulative draft probability under it (an invisible marker of the node's
    size, so the text clears the node's own)."""
    return {
        "type": "scatter",
        "mode": "markers+text",
        "x": [pos[n.id][0] for n in shown],
        "y": [pos[n.id][1] for n in shown],
        "text": [fmt_prob(cum[n.id]) for n in shown],
        "marker": {"size": size, "opacity": 0},  # the text clears the node's marker
        "textposition": "bottom center",
        "textfont": {"size": 9, "color": "#6b7280"},
        "hoverinfo": "skip",
        "showlegend": False,
        "meta": "cum_q",
        "customdata": [n.id for n in shown],
    }


NO_DRAFT_NOTE = {
    "type": "scatter",
    "x": [1],
    "y": [0],
    "mode": "text",
    "text": ["no draft tokens this step"],
    "textposition": "middle right",
    "hoverinfo": "skip",
    "showlegend": False,
    "meta": "note",
}


def _title_lines(step: StepRecord, title: str | None) -> list[str]:
    """``title``, or the step on the title line and what it drafted, accepted and committed under it."""
    if title is not None:
        return title_lines(title, [])
    n = len(step.committed)
    details = [f"drafted {step.n_drafted}", f"accepted {step.n_accepted}", f"+{n} token{'s' if n != 1 else ''}"]
    return title_lines(f"step {step.index + 1}", details)


def _layout(lines: list[str], data: list[dict[str, Any]], height: int, max_depth: float, leaves: int) -> dict:
    """Title lines and legend over the plot; depth on x (ticks ``+1``, ``+2``, ...), a row per leaf."""
    layout = base_layout(lines[0])
    layout["margin"] = {"l": 30, "r": 20, "b": 30}
    layout["legend"] = {"orientation": "h", "xanchor": "left", "x": 0, "font": {"size": 10}, "itemsizing": "constant"}
    titled(layout, lines, data, height, legend_chars=LEGEND_CHARS)
    layout["xaxis"] = {
        "range": [-0.6, max_depth + 0.7],
        "showgrid": False,
        "zeroline": False,
        "tickmode": "array",
        "tickvals": list(range(1, int(max_depth) + 1)),
        "ticktext": [f"+{d}" for d in range(1, int(max_depth) + 1)],
        "tickfont": {"size": 9, "color": "#9ca3af"},
        "fixedrange": False,
    }
    layout["yaxis"] = {"visible": False, "range": [-leaves + 0.4, 0.9], "fixedrange": False}
    layout["hovermode"] = "closest"
    layout["meta"] = {"svTop": True}  # the page draws the title and legend as HTML (ui.plotbox), not Plotly
    layout["template"] = UNMEASURED  # fixed margins, no axis title: nothing for Plotly to measure per draw
    return layout


def _marker_size(n_nodes: int) -> int:
    """A node's marker in pixels: smaller in a tree of more than 64 nodes."""
    return 15 if n_nodes <= 64 else 11


def _node_traces(
    step: StepRecord,
    pos: dict[int, tuple[float, float]],
    on_path: set[int],
    leaves: int,
    feature: bool,
    cum: dict[int, float],
) -> list[dict[str, Any]]:
    """One trace per node status (labelled while the tree is small enough; in a dense tree only the
    verified nodes), each node's facts and decision on hover."""
    forest = step.forest
    idx, greedy = StepIndex(step), is_greedy_step(step)
    by_status: dict[str, list[TreeNode]] = {}
    for n in forest:
        by_status.setdefault(n.status if n.status in STATUS_COLORS else "not_reached", []).append(n)
    labelled, dense = len(forest) <= MAX_LABELLED_NODES, leaves > 24
    font_size = 12 if not dense else 9
    marker_size = _marker_size(len(forest))
    data = []
    for status in NODE_STATUSES:
        nodes = by_status.get(status)
        if not nodes:
            continue
        hover = [node_hover(n, idx, greedy, cum.get(n.id), feature) for n in nodes]
        # in a dense tree only the verified nodes are labelled; the rest keep their hover text
        show_text = labelled and not (dense and status == "not_reached")
        data.append(_status_trace(status, nodes, pos, on_path, hover, show_text, font_size, marker_size))
    return data


def _row_px(step: StepRecord, leaves: int, cum: dict[int, float]) -> tuple[int, bool]:
    """Pixels a leaf's row takes, and whether each node's cumulative draft probability is written under
    it (dyntree, while the rows have room for it)."""
    row_px = 34 if leaves <= 24 else 24
    labelled = len(step.forest) <= MAX_LABELLED_NODES
    cum_rows = bool(cum) and labelled and 32 + (row_px + 8) * leaves <= MAX_HEIGHT  # c under each node: room for it
    return row_px + (8 if cum_rows else 0), cum_rows


def tree_figure(
    step: StepRecord | None,
    *,
    context: str = "",
    title: str | None = None,
    height: int | None = None,
    feature: bool = False,
) -> go.Figure:
    """The forest of ``step`` (see module docstring). ``context`` is the committed text before the
    step (its tail is shown on the context node's hover); ``height``: pixels under the title and legend
    (by default from the number of leaves); ``feature``: the run's drafter read the target's features
    (each node's hover says where it came from)."""
    if step is None:
        return message_figure("No step yet: run an algorithm or load a trace.", title=title)
    forest = step.forest
    g, pos, leaves = tree_layout(forest)
    path = committed_path(step, g)
    cum = cumulative_draft_probs(step)
    row_px, cum_rows = _row_px(step, leaves, cum)
    if height is None:
        height = int(min(max(32 + row_px * leaves, 166), MAX_HEIGHT))
    max_depth = max((p[0] for p in pos.values()), default=1)
    data = [*_edge_traces(g, pos, path), _context_trace(step, pos, context)]
    data += _node_traces(step, pos, set(path[1:]), leaves, feature, cum)
    shown = [n for n in forest if n.id in cum] if cum_rows else []
    if shown:  # dyntree: each node's cumulative draft probability under it
        data.append(_cum_trace(shown, pos, cum, _marker_size(len(forest))))
    if not forest:
        data.append(dict(NO_DRAFT_NOTE))
    return figure(data, _layout(_title_lines(step, title), data, height, max_depth, leaves))
