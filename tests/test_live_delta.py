"""A live tree is drawn on an element that stays, from updates that carry only what changed (issue 34).

A column's tree and distribution view are ``ui.plotbox.PlotBox`` components (a ``gr.HTML`` whose one
``<div>`` the page's script redraws with ``Plotly.react``), their value the figure cut into named JSON
parts (``viz.parts``); a live run's stream sends each value as Gradio's difference from the one before.
Here: the parts put back together are the figure; the difference of two steps' parts, applied as the
page's client applies it, gives the full second figure (what a full redraw would draw), and leaves out
what did not change; the distribution view completes each law with one bar for the rest of its mass.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from gradio.utils import diff
from test_golden_traces import PROMPT, pair

import specviz
from specviz import viz
from specviz.ui import layout
from specviz.ui.plotbox import PlotBox, plotly_chunk
from specviz.viz.distribution import REST_LABEL, distribution_figure
from specviz.viz.parts import MARK, PACKED, figure_from_parts, figure_parts, hover_pack, hover_unpack


def apply_diff(value: Any, edits: list[list[Any]]) -> Any:
    """Gradio's client's ``apply_diff`` (@gradio/client): each edit ``[action, path, value]`` in order."""
    value = copy.deepcopy(value)
    for action, path, new in edits:
        if not path:
            value = new if action == "replace" else value + new
            continue
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if action == "replace":
            parent[key] = new
        elif action == "append":
            parent[key] += new
        elif action == "add":
            if isinstance(parent, list):
                parent.insert(key, new)
            else:
                parent[key] = new
        elif action == "delete":
            del parent[key]
        else:
            raise ValueError(action)
    return value


def plain(fig: Any) -> Any:
    """A figure as the browser receives it (JSON, then parsed)."""
    return json.loads(fig.to_json())


@pytest.fixture(scope="module")
def trace() -> specviz.RunTrace:
    """A tree run on the tiny 16-token pair, its top 4 tokens recorded per position (so a rest is left)."""
    return specviz.decode(pair("tree"), "specinfer", PROMPT, max_new_tokens=16, temperature=1.0, seed=7, record_top_k=4)


def test_a_figure_is_its_parts_put_together(trace):
    for k in range(len(trace.steps)):
        fig = viz.step_tree_figure(trace, k)
        assert figure_from_parts(figure_parts(fig)) == plain(fig)


def test_a_delta_applied_draws_what_a_full_redraw_draws(trace):
    """Step after step, as a live run streams them: the previous parts plus Gradio's difference are the new
    step's parts, and so its full figure; the template, the same every step, is never sent again."""
    assert len(trace.steps) >= 3
    shown = figure_parts(viz.step_tree_figure(trace, 0))
    for k in range(1, len(trace.steps)):
        new = figure_parts(viz.step_tree_figure(trace, k))
        edits = diff(shown, new)
        shown = apply_diff(shown, edits)
        assert shown == new
        assert figure_from_parts(shown) == plain(viz.step_tree_figure(trace, k))
        assert not [e for e in edits if e[1][:1] == ["template"]]
        assert len(json.dumps(edits)) < len(json.dumps(new))  # less than the whole figure


def test_the_distribution_view_shows_the_rest_of_the_mass(trace):
    step = next(s for s in trace.steps if s.positions and any(n.status == "rejected" for n in s.forest))
    node = next(n for n in step.forest if n.status == "rejected")
    fig = distribution_figure(step, node.id)
    bars = {t.meta: t for t in fig.data if t.type == "bar"}
    for law in ("p", "q"):
        rest = bars[f"{law}_rest"]
        assert list(rest.customdata) == [-1] and list(rest.x) == [len(bars[law].x)]
        assert rest.y[0] == pytest.approx(max(0.0, 1.0 - sum(bars[law].y)), abs=1e-9)
        assert rest.offsetgroup == bars[law].offsetgroup == law  # in its law's slot
    assert list(fig.layout.xaxis.ticktext)[-1] == REST_LABEL
    assert sum(bars["p"].y) + bars["p_rest"].y[0] == pytest.approx(1.0, abs=1e-6)


def test_no_rest_bar_when_the_recorded_tokens_hold_the_mass(trace):
    step = next(s for s in trace.steps if s.positions and s.forest)
    node = step.forest[0]
    pos = next(p for p in step.positions if p.parent == node.parent and p.root == node.root)
    full = copy.deepcopy(step)
    for p in full.positions:
        p.p = [x / sum(p.p) for x in p.p]
        p.q = [x / sum(p.q) for x in p.q] if p.q and sum(p.q) else p.q
        p.residual = [x / sum(p.residual) for x in p.residual] if p.residual and sum(p.residual) else p.residual
        p.final_residual = None
    assert pos.ids
    fig = distribution_figure(full, node.id)
    assert not [t for t in fig.data if str(t.meta).endswith("_rest")]
    assert REST_LABEL not in list(fig.layout.xaxis.ticktext)


def test_plotbox_sends_a_figure_as_its_parts(trace):
    fig = viz.step_tree_figure(trace, 0)
    box = PlotBox()
    assert box.postprocess(fig) == figure_parts(fig)
    assert box.postprocess(None) is None
    assert box.postprocess(figure_parts(fig)) == figure_parts(fig)  # parts pass as they are
    assert '<div class="sv-plotbox"></div>' == box.html_template  # one element, never replaced
    assert plotly_chunk().startswith("PlotlyPlot-") and plotly_chunk() in box.js_on_load


def test_the_trees_and_distributions_are_plotboxes():
    made = {p.name: p.make(0) for p in layout.PANELS}
    assert isinstance(made["tree"], PlotBox) and isinstance(made["distribution"], PlotBox)
    assert made["tree"].elem_id == "sv-tree-0" and made["distribution"].elem_id == "sv-dist-0"


def test_hover_texts_travel_as_their_facts(trace):
    """A node's hover text goes as its facts and the index of its form (``viz.parts.hover_pack``); put back
    together (as the page does) it is the same text, and the hover texts weigh less (the default pair's trees: 0.42
    of their bytes; these small ones, with fewer nodes to a form, about half)."""
    sent = whole = 0
    for k in range(len(trace.steps)):
        fig = plain(viz.step_tree_figure(trace, k))
        parts = figure_parts(fig)
        for i, t in enumerate(fig["data"]):
            part = json.loads(parts[str(i)])
            if len(t.get("hovertext") or []) > 1:
                assert "hovertext" not in part and hover_unpack(part[PACKED]) == t["hovertext"]
                sent += len(json.dumps(part[PACKED], ensure_ascii=False).encode())
                whole += len(json.dumps(t["hovertext"], ensure_ascii=False).encode())
    assert whole and sent < 0.6 * whole, (sent, whole)


def test_a_hover_text_holding_the_mark_travels_as_it_is():
    texts = [f"<b>'a{MARK}b'</b> id 1", "<b>'c'</b> id 2"]
    assert hover_pack(texts) is None
    fig = {"data": [{"type": "scatter", "x": [1, 2], "y": [1, 2], "hovertext": texts}], "layout": {}}
    part = json.loads(figure_parts(fig)["0"])
    assert part["hovertext"] == texts and PACKED not in part
    assert figure_from_parts(figure_parts(fig))["data"] == fig["data"]


def test_hover_pack_keeps_every_text_exactly():
    texts = ["", "id 0", "p = 0.5 and 1e-05, 'x' &quot;y z&quot;", "-3.25 \"q\" ''", "no facts here", "id 12"]
    packed = hover_pack(texts)
    assert packed is not None and hover_unpack(packed) == texts
    assert len(packed[0]) == 5  # "id 0" and "id 12" share their form
