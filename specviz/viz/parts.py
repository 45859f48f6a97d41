"""A figure as named JSON parts, so an update carries only the parts that changed (issue 34).

``figure_parts`` cuts a figure into its template, the rest of its layout and one part per trace, each a
compact JSON string under a stable key; ``figure_from_parts`` puts them back together (the page does the
same in ``ui.plotbox.PLOT_JS``). A live run streams a column's tree as these parts, and Gradio sends each
streamed value as the difference from the one before (``gradio.utils.diff``): a part that did not change
(the template, an unchanged trace) travels once, a changed one as its new string. No Gradio, no model.
"""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go
from plotly.utils import PlotlyJSONEncoder

Parts = dict[str, Any]


def _dumps(value: Any) -> str:
    return json.dumps(value, cls=PlotlyJSONEncoder, separators=(",", ":"), ensure_ascii=False)


def figure_parts(fig: go.Figure | dict[str, Any]) -> Parts:
    """``{"n": number of traces, "template": str, "layout": str, "0": str, "1": str, …}``: the figure's
    template, its layout without the template and each trace, as JSON strings."""
    plain = fig.to_plotly_json() if isinstance(fig, go.Figure) else fig
    layout = dict(plain.get("layout") or {})
    template = layout.pop("template", None)
    data = list(plain.get("data") or [])
    parts: Parts = {"n": len(data), "template": _dumps(template), "layout": _dumps(layout)}
    for i, trace in enumerate(data):
        parts[str(i)] = _dumps(trace)
    return parts


def figure_from_parts(parts: Parts) -> dict[str, Any]:
    """The figure ``{"data": […], "layout": {…}}`` of ``figure_parts``' output."""
    layout = json.loads(parts["layout"])
    template = json.loads(parts["template"])
    if template is not None:
        layout["template"] = template
    return {"data": [json.loads(parts[str(i)]) for i in range(int(parts["n"]))], "layout": layout}
