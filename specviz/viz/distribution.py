"""The distribution view: why one node's test went as it did, the picture of why speculative
sampling is exact.

For the selected node, the top panel draws the target ``p`` and the draft ``q`` over the tokens the
trace recorded at the node's parent position (``PositionRecord``: the top tokens of p and q, the
candidates tested there and the token produced there), and the residual ``norm(max(0, p − q))`` a
rejection resamples from (Leviathan et al. 2023, Algorithm 1; its mass Σ max(0, p − q) = TV(p, q) is
the chance one draft is rejected, theory paper Thm 1). When every candidate there was rejected, the
law actually resampled from is drawn too, named by the step's rule (``core.rule_words``): the final
residual after the multi-candidate updates (MCSD Eq. 3 / Eq. 10), the target itself (over-acceptance
with ``residual=target``), a DSBD layer's residual. The drafted
candidates are marked above their bars in draw order, the selected one with an arrow. The bottom
panel (``viz.number_line``) puts the uniform draw ``u`` against the acceptance probability ``a`` on
[0, 1]: the node is accepted iff u lands left of a.

Trace contract (tests rely on it): bar traces have ``meta`` ``"p"``, ``"q"``, ``"residual"``,
``"final_residual"`` (drawn only when it differs from the residual, i.e. after two or more
rejections) with ``customdata`` = token ids; each with one bar for the rest of its mass, outside the
recorded tokens (``meta`` its law's + ``"_rest"``, ``customdata`` ``[-1]``, at the last x, the tick
"the rest"; none when the recorded tokens hold all but ``REST_MIN``); the candidates' markers ``meta == "candidates"``
(``customdata`` = node ids); the draw ``meta == "u"``; ``layout.meta`` = ``{"node": id, "a": a,
"u": u, "status": status}``.
"""

from __future__ import annotations

from typing import Any, Callable

import plotly.graph_objects as go

from specviz.trace import DRAFTED, TESTED, PositionRecord, StepRecord, TreeNode
from specviz.viz.explain import StepIndex, is_greedy_step, node_decision, position_of, produced_source
from specviz.viz.number_line import number_line
from specviz.viz.style import (
    MONO,
    STATUS_COLORS,
    STATUS_LABELS,
    STATUS_SYMBOLS,
    axis,
    base_layout,
    figure,
    fmt_prob,
    html_escape,
    message_figure,
    visible_text,
    wrap_html,
)

P_COLOR = "#1e3a8a"
Q_COLOR = "#93c5fd"
RESIDUAL_COLOR = STATUS_COLORS["resampled"]
NO_POSITIONS = (
    "No distributions in this trace: it was recorded without per-position data "
    "(a schema v1 trace, or recording was off).<br>Re-run it to see p, q and the residual here."
)


def _ordinal(i: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ... ``11th``, ``21st``."""
    return f"{i}{'th' if 10 <= i % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(i % 10, 'th')}"


def _labels(pos: PositionRecord, step: StepRecord, decode: Callable[[int], str] | None) -> list[str]:
    """The position's tokens as tick labels: the text recorded for them, else ``decode``'s, else the id."""
    texts = {n.token_id: n.token_text for n in step.forest}
    if pos.texts is not None:
        texts.update(zip(pos.ids, pos.texts))
    out = []
    for tid in pos.ids:
        text = texts.get(tid)
        if text is None and decode is not None:
            try:
                text = decode(tid)
            except Exception:  # an id the decoder cannot read: fall back to the id
                text = None
        out.append(html_escape(visible_text(text, 12)) if text is not None else f"id {tid}")
    return out


BAR_MEANING = {
    "q": "draft q",
    "p": "target p",
    "residual": "residual norm(max(0, p − q)) after one rejection; its mass Σ max(0, p − q) = TV(p, q)",
    "final_residual": "final residual after every candidate here was rejected",
}


def _bar(
    name: str,
    meta: str,
    xs: list[int],
    ys: list[float],
    ids: list[int],
    labels: list[str],
    color: str,
    meaning: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    meaning = html_escape(meaning) if meaning is not None else BAR_MEANING[meta]
    return {
        "type": "bar",
        "name": name,
        "meta": meta,
        "x": xs,
        "y": ys,
        "customdata": ids,
        "marker": {"color": color, **extra.pop("marker", {})},
        "text": labels,
        "hovertemplate": f"%{{text}} (id %{{customdata}})<br>{meaning}: %{{y:.3g}}<extra></extra>",
        "textposition": "none",
        **extra,
    }


REST_LABEL = "the rest"
REST_MIN = 1e-4  # a law whose recorded tokens hold all but this much of its mass gets no rest bar


def rest_bars(bars: list[dict[str, Any]], x: int) -> list[dict[str, Any]]:
    """One bar at ``x`` per law in ``bars`` for the mass outside the recorded tokens (the rest of a
    vocabulary of tens of thousands): ``1 − Σ`` of the law there, in the law's colour, hatched, in its
    bar's slot (``offsetgroup``); none when every law's recorded tokens hold nearly all of its mass."""
    out = []
    for bar in bars:
        bar["offsetgroup"] = bar["meta"]
        if sum(bar["y"]) <= REST_MIN:  # no law recorded (a one-hot drafter's q): nothing to complete
            continue
        mass = max(0.0, 1.0 - sum(bar["y"]))
        out.append(
            {
                "type": "bar",
                "name": f"{bar['name']}: the rest",
                "meta": f"{bar['meta']}_rest",
                "x": [x],
                "y": [mass],
                "customdata": [-1],
                "offsetgroup": bar["meta"],
                "legendgroup": bar["meta"],
                "showlegend": False,
                "textposition": "none",
                "marker": {"color": bar["marker"]["color"], "opacity": 0.55, "pattern": {"shape": ".", "size": 4}},
                "hovertemplate": f"every other token of the vocabulary together<br>{bar['name']}: "
                "%{y:.3g}<extra></extra>",
            }
        )
    return out if any(r["y"][0] > REST_MIN for r in out) else []


def _chosen_note(step: StepRecord) -> str:
    """The q bars' caveat under a rule whose siblings are chosen (``core.rules.CHOSEN``): at temperature 0
    they are the one-hot law (the argmax; later siblings are the draft's next picks), under EAGLE-2's tree
    the draft's law the siblings were picked from, each verified as a point mass (its node's q = 1)."""
    name = (step.rule or {}).get("name")
    if name == "exact_match":
        return " (one-hot at T = 0: its argmax; later siblings are its next picks)"
    if name == "point_mass":
        return " (siblings picked from it; each verified as a point mass, q = 1)"
    return ""


def _no_distribution(step: StepRecord, node_id: int, height: int) -> tuple[TreeNode | None, go.Figure | None]:
    """The selected node, or a figure that says why there is nothing to draw: no such node, no
    positions recorded in the trace, or none at the node's parent position."""
    node = next((n for n in step.forest if n.id == node_id), None)
    if node is None:
        return None, message_figure(
            f"Step {step.index + 1} has no node {node_id}: select a node of the tree.", height=height
        )
    if not step.positions:
        return None, message_figure(NO_POSITIONS, height=height)
    pos = position_of(step, node)
    if pos is None or not pos.ids:
        label = html_escape(visible_text(node.token_text))
        decision = node_decision(node, StepIndex(step), is_greedy_step(step))
        return None, message_figure(
            f"Node {node_id} ({label}): its position was never verified, so no distribution was "
            f"recorded there.<br>{wrap_html(decision, 90)}",
            height=height,
        )
    return node, None


def _produced(step: StepRecord, node: TreeNode) -> list[TreeNode]:
    """The tokens produced at the node's position (resampled or bonus)."""
    return [
        n
        for n in step.forest
        if n.status in ("resampled", "bonus")
        and n.parent == node.parent
        and (n.parent is not None or n.root == node.root)
    ]


def _law_bars(
    step: StepRecord, node: TreeNode, pos: PositionRecord, produced: list[TreeNode], hover: list[str]
) -> list[dict[str, Any]]:
    """The bars of q, p, the residual and, when the rule resampled from another law here, that law (in
    its words), over the position's recorded tokens."""
    idx, greedy = StepIndex(step), is_greedy_step(step)
    xs = list(range(len(pos.ids)))
    data: list[dict[str, Any]] = []
    if pos.q is not None:
        name = "q draft" + (" (one-hot drafter: no distribution)" if not any(pos.q) else _chosen_note(step))
        data.append(_bar(name, "q", xs, list(pos.q), pos.ids, hover, Q_COLOR))
    data.append(_bar("p target", "p", xs, list(pos.p), pos.ids, hover, P_COLOR))
    final = pos.final_residual
    same = (
        final is not None and pos.residual is not None and all(abs(a - b) <= 1e-6 for a, b in zip(final, pos.residual))
    )
    if pos.residual is not None:
        name = "residual" + (" (resampled from)" if same else "")
        data.append(_bar(name, "residual", xs, list(pos.residual), pos.ids, hover, RESIDUAL_COLOR, opacity=0.85))
    if final is not None and not same:  # what the step's rule resampled from here, in its words
        resampled = next((n for n in produced if n.status == "resampled"), None)
        source = (
            produced_source(resampled, idx, greedy)
            if resampled is not None
            else idx.words.resample(sum(1 for n in idx.drafted_at(node) if n.status == "rejected"))
        )
        data.append(
            _bar(
                f"{source.label} (resampled from)",
                "final_residual",
                xs,
                list(final),
                pos.ids,
                hover,
                "#fbbf24",
                meaning=source.words,
                marker={"pattern": {"shape": "/", "fgcolor": RESIDUAL_COLOR, "size": 6}},
            )
        )
    return data


def _candidates(here: list[TreeNode], col: dict[int, int], top: float) -> tuple[dict[str, Any] | None, dict[int, int]]:
    """The candidates drafted at the position (in draw order) and the token produced there, as markers
    above their bars (stacked where one token was drafted more than once); with how many stand above
    each token."""
    stacked: dict[int, int] = {}
    cx, cy, ctext, csym, ccol, cids, chover = [], [], [], [], [], [], []
    for rank, n in enumerate(here, 1):
        if n.token_id not in col:
            continue
        k = stacked.get(n.token_id, 0)
        stacked[n.token_id] = k + 1
        cx.append(col[n.token_id])
        cy.append(top * (1.1 + 0.14 * k))
        drafted = n.status in DRAFTED
        ctext.append(_ordinal(rank) if drafted else n.status)
        csym.append(STATUS_SYMBOLS.get(n.status, "circle"))
        ccol.append(STATUS_COLORS.get(n.status, "#6b7280"))
        cids.append(n.id)
        chover.append(f"node {n.id} {html_escape(repr(n.token_text))}: {STATUS_LABELS.get(n.status, n.status)}")
    if not cx:
        return None, stacked
    trace = {
        "type": "scatter",
        "mode": "markers+text",
        "x": cx,
        "y": cy,
        "meta": "candidates",
        "name": "drafted here (draw order)",
        "customdata": cids,
        "text": ctext,
        "textposition": "middle right",
        "textfont": {"size": 9, "color": "#4b5563"},
        "marker": {"symbol": csym, "color": ccol, "size": 11, "line": {"color": ccol, "width": 1.5}},
        "hovertext": chover,
        "hoverinfo": "text",
        "showlegend": False,
    }
    return trace, stacked


def _node_note(node: TreeNode, col: dict[int, int], stacked: dict[int, int], top: float) -> dict[str, Any]:
    """An arrow to the selected node's marker, or, its token outside the recorded ones, a note saying so
    with its q and p."""
    if node.token_id in col:
        return {
            "x": col[node.token_id],
            "y": top * (1.1 + 0.14 * max(stacked.get(node.token_id, 1) - 1, 0)),
            "xref": "x",
            "yref": "y",
            "text": f"<b>node {node.id}</b>",
            "showarrow": True,
            "arrowhead": 2,
            "ax": 0,
            "ay": -26,
            "font": {"size": 11, "color": STATUS_COLORS.get(node.status, "#111827")},
            "arrowcolor": STATUS_COLORS.get(node.status, "#111827"),
        }
    return {
        "x": 1,
        "y": 1,
        "xref": "paper",
        "yref": "paper",
        "xanchor": "right",
        "yanchor": "top",
        "showarrow": False,
        "align": "right",
        "font": {"size": 11, "color": "#6b7280"},
        "text": f"node {node.id} {html_escape(visible_text(node.token_text))} (q = {fmt_prob(node.q)}, "
        f"p = {fmt_prob(node.p)})<br>is outside the recorded tokens of this position",
    }


def _title(node: TreeNode, idx: StepIndex, pos: PositionRecord) -> str:
    """The node, its outcome, what it followed and the position's TV(p, q)."""
    parent = idx.nodes.get(node.parent) if node.parent is not None else None
    where = (
        "the committed text"
        if node.parent is None
        else f"node {node.parent} {html_escape(visible_text(parent.token_text)) if parent is not None else ''}"
    )
    status = STATUS_LABELS.get(node.status, node.status)
    title = f"node {node.id} {html_escape(visible_text(node.token_text))} · {status}<br>after {where}"
    if pos.residual_mass is not None:
        title += f" · TV(p, q) = {fmt_prob(pos.residual_mass)}"
    return title


def _axes(layout: dict[str, Any], labels: list[str], rest: bool, top: float, stacked: dict[int, int]) -> None:
    """The bars' axes (a tick per recorded token, and "the rest") over the number line's axes."""
    xs = list(range(len(labels)))
    many = len(xs) > 14
    ticks, texts = (xs + [len(xs)], labels + [REST_LABEL]) if rest else (xs, labels)
    layout["xaxis"] = axis(
        None,
        tickmode="array",
        tickvals=ticks,
        ticktext=texts,
        domain=[0, 1],
        tickfont={"family": MONO, "size": 9 if many else 11},
        tickangle=-45 if many else 0,
        range=[-0.6, len(ticks) - 0.4],
        showgrid=False,
        zeroline=False,
    )
    layout["yaxis"] = axis(
        "probability",
        domain=[0.47 if many else 0.42, 1],
        rangemode="tozero",
        range=[0, top * (1.3 + 0.14 * max(list(stacked.values()) + [1]))],
    )
    layout["xaxis2"] = axis(
        "u against a (accepted iff u < a)",
        anchor="y2",
        domain=[0, 1],
        range=[-0.02, 1.02],
        tickvals=[0, 0.25, 0.5, 0.75, 1],
        showgrid=False,
        zeroline=False,
    )
    layout["yaxis2"] = {"anchor": "x2", "domain": [0, 0.13], "range": [-1, 1.4], "visible": False, "fixedrange": True}
    layout["xaxis2"]["title"]["standoff"] = 2


def _layout(title: str, height: int) -> dict[str, Any]:
    """The figure's frame: margins for the title and the legend in a row above the bars."""
    layout = base_layout(title, height=height, barmode="group", bargap=0.25, bargroupgap=0.05)
    layout["margin"] = {"l": 52, "r": 20, "t": 96, "b": 20}
    layout["legend"] = {
        "orientation": "h",
        "yanchor": "bottom",
        "y": 1.0,
        "xanchor": "left",
        "x": 0,
        "font": {"size": 11},
    }
    return layout


def distribution_figure(
    step: StepRecord, node_id: int, decode: Callable[[int], str] | None = None, height: int = 460
) -> go.Figure:
    """p, q and the residual at the parent position of node ``node_id`` of ``step``, and u against a.

    ``decode`` (optional) names token ids that no node of the step carries; without it they read
    ``id 123``. A step without positions (v1 trace, or recording off) gets a figure that says so."""
    node, message = _no_distribution(step, node_id, height)
    if node is None:
        return message
    idx, greedy = StepIndex(step), is_greedy_step(step)
    pos = position_of(step, node)
    labels = _labels(pos, step, decode)
    produced = _produced(step, node)
    data = _law_bars(step, node, pos, produced, [repr(t) for t in labels])
    rest = rest_bars(data, len(pos.ids))
    data += rest
    col = {tid: i for i, tid in enumerate(pos.ids)}
    top = max(
        [*pos.p, *(pos.q or []), *(pos.residual or []), *(pos.final_residual or []), *(r["y"][0] for r in rest), 0.05]
    )
    candidates, stacked = _candidates(idx.drafted_at(node) + produced, col, top)
    data += [candidates] if candidates is not None else []
    nl_data, shapes, notes = number_line(node, idx, greedy)
    data += nl_data
    notes.append(_node_note(node, col, stacked, top))
    layout = _layout(_title(node, idx, pos), height)
    _axes(layout, labels, bool(rest), top, stacked)
    if not (node.status in TESTED and node.accept_prob is not None):
        layout["xaxis2"]["visible"] = False  # no test at this node: the bars take the room, the caption says why
        layout["yaxis"]["domain"] = [0.24, 1]
    layout["shapes"] = shapes
    layout["annotations"] = notes
    layout["hovermode"] = "closest"
    layout["plot_bgcolor"] = "white"
    layout["meta"] = {"node": node.id, "a": node.accept_prob, "u": node.draw, "status": node.status}
    return figure(data, layout)
