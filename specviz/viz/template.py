"""The figures' template: plotly's own default ("plotly"), less what no figure here uses.

Every figure carries its template in its JSON, and the app sends each figure whole on every update:
plotly's default template is 7.1 kB a figure (its defaults for 3-D scenes, maps, polar and ternary
axes, colour scales, and two dozen trace types), more than a small step tree's data. This one keeps
plotly's layout defaults and its defaults for the trace types drawn here (scatter, bar, heatmap) as
they are, so a figure looks the same, in about 1 kB (issue 34: a live update of four columns).

One default differs: every axis's ``ticklabeloverflow`` is ``"allow"``. Plotly's default ("hide past
div") measures each tick label after every draw to hide those that stick out of the figure, and a label
it has not measured at that place (a live figure's range moves every step) is measured in the page's own
layout, so every draw of a live step laid the whole page out again (issue 34). The margins are set so
that the labels fit; one that did not would be cut at the figure's edge instead of hidden.

The step tree, drawn four times a live step, uses ``UNMEASURED``: the same with no axis ``automargin`` and
no axis title ``standoff``; either makes Plotly measure the tick labels in the page on every draw.
"""

from __future__ import annotations

from typing import Any

import plotly.io as pio

UNUSED_LAYOUT = ("polar", "ternary", "scene", "geo", "colorscale", "coloraxis")  # no figure here draws these
TRACE_TYPES = ("scatter", "bar", "heatmap")  # the trace types the figures draw (a heatmap sets its own scale)


def slim_template(base: str = "plotly") -> dict[str, Any]:
    """Plotly's template ``base`` as a plain dict, without ``UNUSED_LAYOUT`` and with the defaults of
    ``TRACE_TYPES`` only (a heatmap's without its colour scale, which the figure sets)."""
    full = pio.templates[base].to_plotly_json()
    layout = {k: v for k, v in full.get("layout", {}).items() if k not in UNUSED_LAYOUT}
    for axis in ("xaxis", "yaxis"):
        layout[axis] = {**layout.get(axis, {}), "ticklabeloverflow": "allow"}
    data = {}
    for kind in TRACE_TYPES:
        if kind in full.get("data", {}):
            data[kind] = [{k: v for k, v in t.items() if k != "colorscale"} for t in full["data"][kind]]
    return {"layout": layout, "data": data}


TEMPLATE = slim_template()


def unmeasured_axes(template: dict[str, Any]) -> dict[str, Any]:
    """``template`` with axes Plotly never measures in the page: no ``automargin`` and no title
    ``standoff`` (either makes every draw read back its tick labels' boxes, a layout of the whole page when
    anything else on it changed since). For a figure with fixed margins and no axis titles: the step tree,
    drawn four times a live step."""
    layout = dict(template["layout"])
    for axis in ("xaxis", "yaxis"):
        title = {k: v for k, v in layout.get(axis, {}).get("title", {}).items() if k != "standoff"}
        layout[axis] = {**layout.get(axis, {}), "automargin": False, "title": title}
    return {**template, "layout": layout}


UNMEASURED = unmeasured_axes(TEMPLATE)
