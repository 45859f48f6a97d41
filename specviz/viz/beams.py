"""Beam views for ``beam`` and ``dsbd`` traces ("Dynamic-Width Speculative Beam Decoding",
arXiv 2409.16560): pure functions of a ``RunTrace`` / ``StepRecord``.

* ``step_forest_figure(trace, step)``: the step's draft forest (``viz.beam_forest.forest_figure``), one
  tree per input beam, with the input beams' texts.
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
from typing import Any

import plotly.graph_objects as go

from specviz.step_state import BeamList, BeamSearchState, BeamStepState, DsbdState
from specviz.trace import RunTrace, StepRecord
from specviz.viz.beam_forest import forest_figure  # drawn there, importable from here too
from specviz.viz.registry import hide_panel, register_view
from specviz.viz.style import (
    CURRENT_COLOR,
    MONO,
    axis,
    base_layout,
    figure,
    fmt,
    message_figure,
    series_color,
    title_lines,
    titled,
)

# the widths heat map writes each cell's width in it up to this many steps (at phone width a cell is
# then about 10 px wide); beyond, the hover says it
CELL_TEXT_STEPS = 10


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


def _heatmap(z: list[list[float | None]], steps: list[int]) -> dict[str, Any]:
    """The kept widths, layer by step, with each cell's number in it while the cells are wide enough."""
    heat = {
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
    if len(steps) <= CELL_TEXT_STEPS:  # more cells than that: too narrow for their numbers in a narrow column
        heat.update(texttemplate="%{z}", textfont={"size": 10})
    return heat


def _level_traces(levels: Any) -> list[dict[str, Any]]:
    """Per verified layer: P(m = k) as bars and P(m >= K) as a step line, in the layer's colour (legend
    names short enough for two a row at phone width)."""
    data = []
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
    return data


def _width_shapes(step: int, threshold: float | None) -> list[dict[str, Any]]:
    """The selected step underlined on the heat map, and the threshold t as a dashed line labelled with
    its value at its right end."""
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
    if threshold is not None:
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
    return shapes


NO_LEVELS_NOTE = {  # no axes on the right, the note on three short lines (under 100 px wide at phone width)
    "text": "no verified<br>draft layer<br>at this step",
    "x": 0.81,
    "y": 0.5,
    "xref": "paper",
    "yref": "paper",
    "showarrow": False,
    "font": {"size": 12, "color": "#6b7280"},
}


def width_figure(trace: RunTrace | None, step: int, height: int = 246) -> go.Figure:
    """Heat map of widths per layer per step, and the P(m accepted) bars with the threshold line for
    the selected step (see module docstring); the width W_L chosen for each layer is under the title.
    ``height``: pixels under the title and legend."""
    if not is_beam_trace(trace):
        return message_figure("No beam widths: this run is not a beam algorithm.", height=height)
    step = max(0, min(step, len(trace.steps) - 1))
    st = _state(trace.steps[step])
    levels = st.verified if isinstance(st, DsbdState) else ()
    threshold = levels[-1].threshold if levels else None
    data = [_heatmap(width_matrix(trace), list(range(1, len(trace.steps) + 1))), *_level_traces(levels)]
    title = f"Beam widths · step {step + 1}"
    layout = base_layout(title, barmode="group")
    # the gap between the panels holds the right panel's probability ticks and axis title (about 50 px,
    # 22% of the plots' width at phone width)
    layout["xaxis"] = axis("step", domain=[0, 0.42])
    layout["yaxis"] = axis("layer", autorange="reversed")
    if levels:
        layout["xaxis2"] = axis("k accepted drafts (K)", domain=[0.64, 1], anchor="y2", dtick=1)
        layout["yaxis2"] = axis("probability", anchor="x2", range=[0, 1.05])
    else:
        layout["annotations"] = [dict(NO_LEVELS_NOTE)]
    layout["shapes"] = _width_shapes(step, threshold)
    titled(layout, title_lines(title, [f"L{lv.layer}: W_L = {lv.width}" for lv in levels]), data, height)
    return figure(data, layout)


register_view(DsbdState)(width_figure)
register_view(BeamStepState, "tree")(step_forest_figure)
register_view(BeamStepState, "beams")(beams_html)
hide_panel(BeamSearchState, "column")  # plain beam keeps W beams every step: its widths would be one solid bar
