"""A figure as named JSON parts, so an update carries only the parts that changed (issue 34).

``figure_parts`` cuts a figure into its template, the rest of its layout and one part per trace, each a
compact JSON string under a stable key; ``figure_from_parts`` puts them back together (the page does the
same in ``ui.plotbox.PLOT_JS``). A live run streams a column's tree as these parts, and Gradio sends each
streamed value as the difference from the one before (``gradio.utils.diff``): a part that did not change
(the template, an unchanged trace) travels once, a changed one as its new string.

A trace's hover texts (a tree node's facts and its decision in words, most of a tree's bytes) travel as
their facts: each text is cut into its *form* (the words, with a mark where a fact goes) and its facts
(the numbers and quoted tokens), ``hover_pack``; the nodes of a tree share a handful of forms, so each
node sends only its facts and the index of its form. ``hover_unpack`` (and the page's ``svUnpack``) gives
back exactly the same texts, so the hover box shows exactly what it showed. No Gradio, no model.
"""

from __future__ import annotations

import json
import re
from typing import Any

import plotly.graph_objects as go
from plotly.utils import PlotlyJSONEncoder

Parts = dict[str, Any]

MARK = "\x7f"  # where a fact goes in a form: DEL, one byte on the wire (Gradio sends UTF-8 JSON), in no text here
PACKED = "svhover"  # a trace's packed hover texts: [forms, rows], each row "form index MARK fact MARK fact …"
# the facts of a hover text: numbers (ids, probabilities, counts) and quoted tokens
FACT = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|'[^'<]{0,40}'|&quot;.{0,40}?&quot;|\"[^\"<]{0,40}\"")


def _dumps(value: Any) -> str:
    return json.dumps(value, cls=PlotlyJSONEncoder, separators=(",", ":"), ensure_ascii=False)


def hover_pack(texts: list[str]) -> list[list[str]] | None:
    """``[forms, rows]`` of hover texts (module docstring); None where a text holds ``MARK`` itself."""
    if any(MARK in t for t in texts):
        return None
    forms: dict[str, int] = {}
    rows = []
    for text in texts:
        facts = FACT.findall(text)
        k = forms.setdefault(FACT.sub(MARK, text), len(forms))
        rows.append(MARK.join([str(k), *facts]))
    return [list(forms), rows]


def hover_unpack(packed: list[list[str]]) -> list[str]:
    """The hover texts ``hover_pack`` packed, exactly."""
    forms, rows = [f.split(MARK) for f in packed[0]], packed[1]
    out = []
    for row in rows:
        k, *facts = row.split(MARK)
        pieces = forms[int(k)]
        out.append(pieces[0] + "".join(fact + piece for fact, piece in zip(facts, pieces[1:])))
    return out


def _trace_part(trace: dict[str, Any]) -> str:
    """A trace as its JSON part, its hover texts packed (``PACKED``) where it has more than one."""
    texts = trace.get("hovertext")
    if isinstance(texts, (list, tuple)) and len(texts) > 1 and all(isinstance(t, str) for t in texts):
        packed = hover_pack(list(texts))
        if packed is not None:
            trace = {k: v for k, v in trace.items() if k != "hovertext"}
            trace[PACKED] = packed
    return _dumps(trace)


def figure_parts(fig: go.Figure | dict[str, Any]) -> Parts:
    """``{"n": number of traces, "template": str, "layout": str, "0": str, "1": str, …}``: the figure's
    template, its layout without the template and each trace (its hover texts packed, ``hover_pack``), as
    JSON strings."""
    plain = fig.to_plotly_json() if isinstance(fig, go.Figure) else fig
    layout = dict(plain.get("layout") or {})
    template = layout.pop("template", None)
    data = list(plain.get("data") or [])
    parts: Parts = {"n": len(data), "template": _dumps(template), "layout": _dumps(layout)}
    for i, trace in enumerate(data):
        parts[str(i)] = _trace_part(trace)
    return parts


def _trace(text: str) -> dict[str, Any]:
    trace = json.loads(text)
    if PACKED in trace:
        trace["hovertext"] = hover_unpack(trace.pop(PACKED))
    return trace


def figure_from_parts(parts: Parts) -> dict[str, Any]:
    """The figure ``{"data": […], "layout": {…}}`` of ``figure_parts``' output."""
    layout = json.loads(parts["layout"])
    template = json.loads(parts["template"])
    if template is not None:
        layout["template"] = template
    return {"data": [_trace(parts[str(i)]) for i in range(int(parts["n"]))], "layout": layout}
