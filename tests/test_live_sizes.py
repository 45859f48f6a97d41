"""What a live update weighs (issue 34): every figure carries a slim template (``viz.template``) that
gives it plotly's own defaults for everything the figures draw, so it looks as before at a fraction of
the bytes a live update sends."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from tiny import tiny_pair

import specviz
from specviz import viz
from specviz.ui.layout import FIGURES
from specviz.viz.template import TEMPLATE, TRACE_TYPES, UNMEASURED, UNUSED_LAYOUT, unmeasured_axes


@pytest.fixture(scope="module")
def traces():
    pair = tiny_pair(vocab=16, draft="noisy", noise=0.3)
    return [
        (name, specviz.decode(pair, name, prompt=[1, 2, 3], max_new_tokens=12, temperature=1.0, seed=3))
        for name in ("ar", "sd", "specinfer")
    ]


def every_figure(traces) -> list[go.Figure]:
    """The figures a live update carries: each column's tree, controller and theory panel, and the
    comparison figures."""
    figs = [viz.tree_figure(None), viz.message_figure("nothing here")]
    for _, t in traces:
        figs += [viz.step_tree_figure(t, k) for k in range(len(t.steps))]
    figs += [f.draw(traces, 2) for f in FIGURES]
    return [f for f in figs if f is not None]


def test_the_template_is_plotlys_own_for_what_the_figures_draw(traces):
    full = pio.templates["plotly"].to_plotly_json()
    for key, value in TEMPLATE["layout"].items():
        if key in ("xaxis", "yaxis"):  # the one default that differs: tick labels never measured to be hidden
            assert value == {**full["layout"][key], "ticklabeloverflow": "allow"}, key
            continue
        assert full["layout"][key] == value, key  # the same defaults, not another look
    assert set(full["layout"]) - set(TEMPLATE["layout"]) == set(UNUSED_LAYOUT)
    for kind in ("scatter", "bar"):
        assert TEMPLATE["data"][kind] == full["data"][kind], kind
    drawn, layouts = set(), set()
    for fig in every_figure(traces):
        data = json.loads(fig.to_json())
        drawn |= {t.get("type", "scatter") for t in data["data"]}
        layouts |= set(data["layout"])
        # the step tree's axes are never measured (fixed margins, no axis titles): the same template else
        assert data["layout"]["template"] == (UNMEASURED if data["layout"].get("meta", {}).get("svTop") else TEMPLATE)
    # a figure drawing another trace type, or using a part of the layout the template leaves out, would
    # lose plotly's defaults for it: it needs them added to viz.template first
    assert drawn <= set(TRACE_TYPES), drawn - set(TRACE_TYPES)
    assert not layouts & set(UNUSED_LAYOUT)


def test_a_step_tree_sends_a_fraction_of_plotlys_template(traces):
    _, t = traces[2]
    fig = viz.step_tree_figure(t, 0)
    slim = len(fig.to_json())
    with_default = go.Figure(fig.to_dict())  # plotly's whole default template, as before issue 34
    with_default.layout.template = pio.templates["plotly"]
    assert len(with_default.to_json()) - slim > 5_000  # the 7 kB a figure the template cost
    assert len(json.dumps(TEMPLATE)) < 1_500


def test_the_trees_axes_are_never_measured_by_plotly(traces):
    """Plotly measures an axis's tick labels in the page on every draw when the axis has ``automargin`` or a
    title ``standoff`` (both from its template); the step tree, redrawn four times a live step, has fixed
    margins and no axis title, so its template drops both and changes nothing else."""
    _, t = traces[2]
    layout = json.loads(viz.step_tree_figure(t, 0).to_json())["layout"]
    assert layout["template"] == UNMEASURED == unmeasured_axes(TEMPLATE)
    for axis in ("xaxis", "yaxis"):
        ours, plotlys = UNMEASURED["layout"][axis], TEMPLATE["layout"][axis]
        assert ours["automargin"] is False and "standoff" not in ours["title"] and plotlys["title"]["standoff"]
        assert {k: v for k, v in ours.items() if k not in ("automargin", "title")} == {
            k: v for k, v in plotlys.items() if k not in ("automargin", "title")
        }
        assert not layout[axis].get("title", {}).get("text")  # no axis title it would need room for
    assert {k: v for k, v in UNMEASURED["layout"].items() if k not in ("xaxis", "yaxis")} == {
        k: v for k, v in TEMPLATE["layout"].items() if k not in ("xaxis", "yaxis")
    }
