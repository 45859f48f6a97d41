"""Beam views for ``beam`` and ``dsbd`` traces ("Dynamic-Width Speculative Beam Decoding",
arXiv 2409.16560): pure functions of a ``RunTrace`` / ``StepRecord``.

* ``forest_figure(step)``: the step's draft forest, one tree per input beam (the beam at the left,
  its drafted layers to the right), nodes and edges coloured by beam, the node's verification
  status as its outline, named in the legend with its count as the tree view's statuses are (one
  trace per beam and status, ``meta`` the status and ``customdata`` the node ids: a click opens the
  node's view, ``viz.beam_story.beam_node_story``), and the beams kept
  at the end of the step (``controller["kept"]``, or every node of a ``beam`` step) drawn as stars
  (the node's own marker, so the mark never falls on an edge or a label beside it).
* ``width_figure(trace, step)``: left, the kept width W_L per layer (rows) and step (columns) as a
  heat map (the bonus layer included); right, for the selected step, the law P(m accepted) of each
  verified layer as bars and P(#accepted >= K) as markers, with the threshold t as a line: the
  width chosen is the largest K whose marker is on or above the line (floored at W_min).
* ``beam_rows(trace, step)`` / ``beams_html(trace, step)``: the beams after a step, full text
  rebuilt from the per-step beam lists (each beam's ``parent`` is an index into the previous
  step's list), with cumulative and mean target log-likelihood; the best beam (the output when the
  run ends there) and the carried beams flagged.

Read from ``StepRecord.controller``: a ``step_state.BeamStepState`` (``BeamSearchState`` for ``beam``,
``DsbdState`` for ``dsbd``), its ``beam_list`` (rows with ``parent``, ``tokens``, ``text``, ``loglik``;
``best``, ``carried``, ``length``); ``dsbd`` also ``levels`` and ``kept``. These views are registered
for those types (``viz.controller.register_view``): the forest as the ``"tree"`` panel, the beams'
table as ``"beams"``, the widths as ``dsbd``'s controller view; a ``beam`` column shows no controller
plot (its width is the same every step).
"""

from __future__ import annotations

import html
from collections import Counter
from typing import Any

import plotly.graph_objects as go

from specviz.step_state import BeamList, BeamSearchState, BeamStepState, DsbdState
from specviz.trace import RunTrace, StepRecord, TreeNode
from specviz.viz.explain import TESTED, StepIndex, describe_test, node_decision
from specviz.viz.registry import hide_panel, register_view
from specviz.viz.style import (
    CURRENT_COLOR,
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

# the widths heat map writes each cell's width in it up to this many steps (at phone width a cell is
# then about 10 px wide); beyond, the hover says it
CELL_TEXT_STEPS = 10
# a forest node's marker (px, without its 3 px status outline) and a kept node's star: a star of the same
# size looks smaller than the circle, so it is drawn a little larger, still well within a row (26 px)
NODE_SIZE, KEPT_SIZE = 12, 15


def _state(step: StepRecord | None) -> BeamStepState | None:
    c = step.controller if step is not None else None
    return c if isinstance(c, BeamStepState) else None


def _beams(step: StepRecord | None) -> BeamList | None:
    st = _state(step)
    return st.beam_list if st is not None else None


def is_beam_trace(trace: RunTrace | None) -> bool:
    return bool(trace and trace.steps and _state(trace.steps[0]))


# ---- beams and their texts -------------------------------------------------------------------


def beam_rows(trace: RunTrace, step: int) -> list[dict[str, Any]]:
    """The beams after step ``step``: ``text`` and ``tokens`` (generated so far), ``loglik``, ``mean_logprob`` (per
    token of that beam: a beam that finished early at EOS is shorter), ``best``, ``carried`` and
    ``finished`` flags, ``parent`` (index in the previous step's beams)."""
    texts: list[str] = [""]
    toks: list[list[int]] = [[]]
    rows: list[dict[str, Any]] = []
    for s in trace.steps[: step + 1]:
        st = _beams(s)
        if st is None:
            continue
        beams = st.beams
        known = [0 <= b.parent < len(texts) for b in beams]
        texts = [(texts[b.parent] if k else "") + b.text for b, k in zip(beams, known)]
        toks = [(toks[b.parent] if k else []) + list(b.tokens) for b, k in zip(beams, known)]
        carried = set(st.carried)
        rows = [
            {
                "index": i,
                "parent": b.parent,
                "text": t,
                "tokens": ids,
                "new": b.text,
                "loglik": b.loglik,
                "mean_logprob": b.loglik / max(b.length, 1),
                "best": i == st.best,
                "carried": i in carried,
                "finished": b.finished,
            }
            for i, (b, t, ids) in enumerate(zip(beams, texts, toks))
        ]
    return rows


def beams_html(trace: RunTrace | None, step: int) -> str:
    """The beams after ``step`` as an HTML table: colour swatch, text (new tokens in bold), scores."""
    if not is_beam_trace(trace):
        return "<p>No beams: this run is not a beam algorithm.</p>"
    step = max(0, min(step, len(trace.steps) - 1))
    body = []
    for r in sorted(beam_rows(trace, step), key=lambda r: -r["loglik"]):
        old = html.escape(r["text"][: len(r["text"]) - len(r["new"])])
        flags = " ".join(
            f for f, on in (("best", r["best"]), ("carried", r["carried"]), ("finished (EOS)", r["finished"])) if on
        )
        body.append(
            f"<tr><td><span style='display:inline-block;width:10px;height:10px;border-radius:5px;"
            f"background:{series_color(r['index'] + 1)}'></span> {r['index']}</td>"
            f"<td style='font-family:{MONO};white-space:pre-wrap'>{old}<b>{html.escape(r['new'])}</b></td>"
            f"<td>{fmt(r['loglik'])}</td><td>{fmt(r['mean_logprob'])}</td><td>{flags}</td></tr>"
        )
    head = "<tr><th>beam</th><th>text</th><th>log-lik</th><th>mean log p</th><th></th></tr>"
    return f"<table class='beams'>{head}{''.join(body)}</table>"


# ---- the forest ---------------------------------------------------------------------------------


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


def forest_figure(step: StepRecord | None, beam_texts: list[str] | None = None, height: int | None = None) -> go.Figure:
    """The forest of a ``beam``/``dsbd`` step (see module docstring). ``beam_texts``: the input
    beams' texts (hover), e.g. from ``beam_rows`` of the previous step; ``height``: pixels under the
    title and legend (by default from the number of rows)."""
    if step is None or not step.forest:
        return message_figure("No forest at this step.")
    st = _state(step)
    kept = set(st.kept if isinstance(st, DsbdState) else [n.id for n in step.forest] if st is not None else [])
    n_beams = len(beam_texts) if beam_texts else max(n.root for n in step.forest) + 1
    pos, beam_y = forest_layout(step.forest, n_beams)
    data: list[dict[str, Any]] = []
    byid = {n.id: n for n in step.forest}
    idx = StepIndex(step) if step.rule is not None else None  # a trace older than the rule record: numbers only
    ex: list[Any] = []
    ey: list[Any] = []
    for n in step.forest:
        a = pos[n.parent] if n.parent in byid else (0.0, beam_y[n.root])
        ex += [a[0], pos[n.id][0], None]
        ey += [a[1], pos[n.id][1], None]
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": ex,
            "y": ey,
            "hoverinfo": "skip",
            "showlegend": False,
            "line": {"color": EDGE_COLOR, "width": 1.2},
        }
    )
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
    rows = len({y for _, y in pos.values()}) + len(beam_y)
    title = f"Beam forest · step {step.index + 1}"
    layout = base_layout(title)
    layout["xaxis"] = axis("layer", dtick=1, range=[-0.9, max(x for x, _ in pos.values()) + 0.6], zeroline=False)
    layout["yaxis"] = axis(None, visible=False)
    titled(layout, title_lines(title, []), data, height or int(min(max(76 + 26 * rows, 196), 816)))
    return figure(data, layout)


def step_forest_figure(trace: RunTrace, step: int, height: int | None = None) -> go.Figure:
    """``forest_figure`` of step ``step`` with its input beams' texts (the beams the step before
    carried; the prompt for the first step)."""
    step = max(0, min(step, len(trace.steps) - 1))
    if step == 0:
        texts = [trace.prompt_text]
    else:
        rows = beam_rows(trace, step - 1)
        before = _beams(trace.steps[step - 1])
        carried = before.carried if before is not None else range(len(rows))
        texts = [rows[i]["text"] for i in carried if i < len(rows)]
    return forest_figure(trace.steps[step], texts, height)


# ---- widths -------------------------------------------------------------------------------------


def width_matrix(trace: RunTrace) -> list[list[float | None]]:
    """``[layer][step]`` kept width W_L (``None`` where the step ended earlier); beam steps: 1 layer."""
    cols = []
    for s in trace.steps:
        st = _state(s)
        if isinstance(st, DsbdState) and st.levels:
            cols.append([lv.kept for lv in st.levels])
        else:
            cols.append([len(st.beam_list.beams) if st is not None else None])
    depth = max((len(c) for c in cols), default=0)
    return [[c[i] if i < len(c) else None for c in cols] for i in range(depth)]


def width_figure(trace: RunTrace | None, step: int, height: int = 246) -> go.Figure:
    """Heat map of widths per layer per step, and the P(m accepted) bars with the threshold line for
    the selected step (see module docstring); the width W_L chosen for each layer is under the title.
    ``height``: pixels under the title and legend."""
    if not is_beam_trace(trace):
        return message_figure("No beam widths: this run is not a beam algorithm.", height=height)
    step = max(0, min(step, len(trace.steps) - 1))
    z = width_matrix(trace)
    steps = list(range(1, len(trace.steps) + 1))
    data: list[dict[str, Any]] = [
        {
            "type": "heatmap",
            "z": z,
            "x": steps,
            "y": [f"L{i + 1}" for i in range(len(z))],
            "colorscale": "Blues",
            "reversescale": True,
            "showscale": False,
            "hovertemplate": "step %{x} · layer %{y}<br>kept width %{z}<extra></extra>",
            "name": "kept width",
            "showlegend": False,
        }
    ]
    if len(steps) <= CELL_TEXT_STEPS:  # more cells than that: too narrow for their numbers in a narrow column
        data[0].update(texttemplate="%{z}", textfont={"size": 10})
    st = _state(trace.steps[step])
    levels = st.verified if isinstance(st, DsbdState) else ()
    threshold = None
    # legend names short enough for two a row at phone width; the chosen width on the lines under the title
    for i, lv in enumerate(levels):
        color = series_color(i + 1)
        ks = list(range(len(lv.p_accept)))
        data.append(
            {
                "type": "bar",
                "x": ks,
                "y": list(lv.p_accept),
                "name": f"L{lv.layer} P(m = k)",
                "xaxis": "x2",
                "yaxis": "y2",
                "marker": {"color": color, "opacity": 0.55},
            }
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": ks,
                "y": list(lv.survival),
                "name": f"L{lv.layer} P(m ≥ K)",
                "xaxis": "x2",
                "yaxis": "y2",
                "hovertemplate": f"P(m ≥ %{{x}}) = %{{y:.3f}}<extra>L{lv.layer}: W_L = {lv.width}</extra>",
                "line": {"color": color, "shape": "hv", "width": 1.5},
                "marker": {"size": 6},
            }
        )
        threshold = lv.threshold
    title = f"Beam widths · step {step + 1}"
    layout = base_layout(title, barmode="group")
    # the gap between the panels holds the right panel's probability ticks and axis title (about 50 px,
    # 22% of the plots' width at phone width)
    layout["xaxis"] = axis("step", domain=[0, 0.42])
    layout["yaxis"] = axis("layer", autorange="reversed")
    if levels:
        layout["xaxis2"] = axis("k accepted drafts (K)", domain=[0.64, 1], anchor="y2", dtick=1)
        layout["yaxis2"] = axis("probability", anchor="x2", range=[0, 1.05])
    shapes = [
        {
            "type": "line",
            "x0": step + 0.5,
            "x1": step + 1.5,
            "y0": 0,
            "y1": 0,
            "xref": "x",
            "yref": "paper",
            "line": {"color": CURRENT_COLOR, "width": 3},
        }
    ]
    if threshold is not None:  # the threshold's value labels its own line, at its right end
        shapes.append(
            {
                "type": "line",
                "x0": 0,
                "x1": 1,
                "xref": "x2 domain",
                "y0": threshold,
                "y1": threshold,
                "yref": "y2",
                "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dash"},
                "label": {
                    "text": f"t = {threshold:g}",
                    "textposition": "end",
                    "xanchor": "right",
                    "yanchor": "bottom",
                    "font": {"size": 10, "color": CURRENT_COLOR},
                },
            }
        )
    elif not levels:  # no axes on the right, the note on three short lines (under 100 px wide at phone width)
        layout["annotations"] = [
            {
                "text": "no verified<br>draft layer<br>at this step",
                "x": 0.81,
                "y": 0.5,
                "xref": "paper",
                "yref": "paper",
                "showarrow": False,
                "font": {"size": 12, "color": "#6b7280"},
            }
        ]
    layout["shapes"] = shapes
    titled(layout, title_lines(title, [f"L{lv.layer}: W_L = {lv.width}" for lv in levels]), data, height)
    return figure(data, layout)


register_view(DsbdState)(width_figure)
register_view(BeamStepState, "tree")(step_forest_figure)
register_view(BeamStepState, "beams")(beams_html)
hide_panel(BeamSearchState, "column")  # plain beam keeps W beams every step: its widths would be one solid bar
