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
from specviz.viz.template import TEMPLATE, TRACE_TYPES, UNUSED_LAYOUT


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
        assert data["layout"]["template"] == TEMPLATE
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
