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
panel puts the uniform draw ``u`` against the acceptance probability ``a`` on [0, 1]: the node is
accepted iff u lands left of a.

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
from specviz.viz.explain import StepIndex, describe_test, is_greedy_step, node_decision, position_of, produced_source
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
ACCEPT_FILL = "rgba(31, 157, 85, 0.16)"
REJECT_FILL = "rgba(214, 69, 69, 0.13)"
NO_POSITIONS = (
    "No distributions in this trace: it was recorded without per-position data "
    "(a schema v1 trace, or recording was off).<br>Re-run it to see p, q and the residual here."
)


def _ordinal(i: int) -> str:
    return f"{i}{'th' if 10 <= i % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(i % 10, 'th')}"


def _labels(pos: PositionRecord, step: StepRecord, decode: Callable[[int], str] | None) -> list[str]:
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


def _number_line(node: TreeNode, idx: StepIndex, greedy: bool) -> tuple[list[dict], list[dict], list[dict]]:
    """Traces, shapes and annotations of the u-against-a panel (axes x2 / y2)."""
    data: list[dict] = []
    shapes: list[dict] = []
    notes: list[dict] = []
    a, u = node.accept_prob, node.draw
    tested = node.status in TESTED and a is not None
    if tested:
        shapes += [
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
        notes.append(
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
        )
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
        if u is not None:
            color = STATUS_COLORS[node.status]
            data.append(
                {
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
                    "hovertemplate": f"u = {fmt_prob(u)} {'<' if u < a else '≥'} a = {fmt_prob(a)} → "
                    f"{node.status}<extra></extra>",
                }
            )
    caption = node_decision(node, idx, greedy) if not tested else describe_test(node, idx, greedy)
    notes.append(
        {
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
    )
    return data, shapes, notes


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


def distribution_figure(
    step: StepRecord, node_id: int, decode: Callable[[int], str] | None = None, height: int = 460
) -> go.Figure:
    """p, q and the residual at the parent position of node ``node_id`` of ``step``, and u against a.

    ``decode`` (optional) names token ids that no node of the step carries; without it they read
    ``id 123``. A step without positions (v1 trace, or recording off) gets a figure that says so."""
    node = next((n for n in step.forest if n.id == node_id), None)
    if node is None:
        return message_figure(f"Step {step.index + 1} has no node {node_id}: select a node of the tree.", height=height)
    if not step.positions:
        return message_figure(NO_POSITIONS, height=height)
    idx, greedy = StepIndex(step), is_greedy_step(step)
    pos = position_of(step, node)
    if pos is None or not pos.ids:
        label = html_escape(visible_text(node.token_text))
        return message_figure(
            f"Node {node_id} ({label}): its position was never verified, so no distribution was "
            f"recorded there.<br>{wrap_html(node_decision(node, idx, greedy), 90)}",
            height=height,
        )
    xs = list(range(len(pos.ids)))
    labels = _labels(pos, step, decode)
    hover_labels = [repr(t) for t in labels]
    data: list[dict[str, Any]] = []
    if pos.q is not None:
        name = "q draft" + (" (one-hot drafter: no distribution)" if not any(pos.q) else _chosen_note(step))
        data.append(_bar(name, "q", xs, list(pos.q), pos.ids, hover_labels, Q_COLOR))
    data.append(_bar("p target", "p", xs, list(pos.p), pos.ids, hover_labels, P_COLOR))
    produced = [
        n
        for n in step.forest
        if n.status in ("resampled", "bonus")
        and n.parent == node.parent
        and (n.parent is not None or n.root == node.root)
    ]
    final = pos.final_residual
    same = (
        final is not None and pos.residual is not None and all(abs(a - b) <= 1e-6 for a, b in zip(final, pos.residual))
    )
    if pos.residual is not None:
        name = "residual" + (" (resampled from)" if same else "")
        data.append(_bar(name, "residual", xs, list(pos.residual), pos.ids, hover_labels, RESIDUAL_COLOR, opacity=0.85))
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
                hover_labels,
                "#fbbf24",
                meaning=source.words,
                marker={"pattern": {"shape": "/", "fgcolor": RESIDUAL_COLOR, "size": 6}},
            )
        )

    rest = rest_bars(data, len(xs))
    data += rest

    # candidates drafted at this position (draw order), and the token produced here, above their bars
    col = {tid: i for i, tid in enumerate(pos.ids)}
    top = max(
        [*pos.p, *(pos.q or []), *(pos.residual or []), *(pos.final_residual or []), *(r["y"][0] for r in rest), 0.05]
    )
    here = idx.drafted_at(node) + produced
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
    if cx:
        data.append(
            {
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
        )

    nl_data, shapes, notes = _number_line(node, idx, greedy)
    data += nl_data
    if node.token_id in col:
        notes.append(
            {
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
        )

    else:
        notes.append(
            {
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
        )

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
    if not (node.status in TESTED and node.accept_prob is not None):
        layout["xaxis2"]["visible"] = False  # no test at this node: the bars take the room, the caption says why
        layout["yaxis"]["domain"] = [0.24, 1]
    layout["shapes"] = shapes
    layout["annotations"] = notes
    layout["hovermode"] = "closest"
    layout["plot_bgcolor"] = "white"
    layout["meta"] = {"node": node.id, "a": node.accept_prob, "u": node.draw, "status": node.status}
    return figure(data, layout)
