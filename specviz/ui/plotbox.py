"""``PlotBox``: a Plotly figure drawn by the page's own script on an element that stays (issue 34).

Gradio 6's ``gr.Plot`` wraps its figure in a ``{#key}`` block keyed by the figure's JSON, so every new
value throws the plot's ``<div>`` away and Plotly builds it again from nothing (scaffolding, toolbar,
text measured), then resizes it; a live run paid that for every tree of every step. A ``PlotBox`` is a
``gr.HTML`` whose template is one empty ``<div>`` that never changes, so Gradio never replaces it; its
value is the figure as named JSON parts (``viz.parts.figure_parts``: Gradio's stream then sends only
the parts that changed) and its script (``PLOT_JS``) puts them together and calls ``Plotly.react`` on
that same ``<div>``: Plotly redraws only what changed, and the click and toolbar handlers bound to it
stay. Plotly is the one Gradio ships (its ``Plot`` chunk, loaded on first use). A figure that cannot be
drawn says so in a sentence in the box.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from specviz.viz.parts import MARK, PACKED, Parts, figure_parts


@functools.lru_cache(maxsize=1)
def plotly_chunk() -> str:
    """The file name of the Gradio frontend's chunk that carries plotly.js (it sets ``window.Plotly``
    when imported); "" if this Gradio has none."""
    assets = Path(gr.__file__).parent / "templates" / "frontend" / "assets"
    found = sorted(assets.glob("PlotlyPlot-*.js"))
    return found[0].name if found else ""


# Runs once per PlotBox when the page mounts it (gr.HTML's js_on_load: ``element``, ``props``, ``watch``).
# window.svPlotly() gives plotly.js (Gradio's, from its Plot chunk); window.svMerge rebuilds a figure from
# its parts, re-parsing only the parts whose text changed; window.svUnpack gives a trace's packed hover
# texts back.
PLOT_JS = r"""
const box = element.querySelector(".sv-plotbox");
if (!window.svPlotly) {
  let loading = null;
  window.svPlotly = () => {
    if (window.Plotly) return Promise.resolve(window.Plotly);
    if (!loading) {
      const chunk = __CHUNK__;
      loading = (chunk ? import(new URL("assets/" + chunk, document.baseURI).href).catch(() => null)
                       : Promise.resolve(null))
        .then(() => window.Plotly || new Promise((ok, no) => {
          let n = 0;  // else a gr.Plot of the page loads it
          const t = setInterval(() => {
            if (window.Plotly) { clearInterval(t); ok(window.Plotly); }
            else if (n++ > 300) { clearInterval(t); no(new Error("plotly.js did not load")); }
          }, 100);
        }));
    }
    return loading;
  };
  // a trace's hover texts packed as their forms and facts (viz.parts.hover_pack), back to the texts
  window.svUnpack = (packed) => {
    const forms = packed[0].map((f) => f.split(__MARK__));
    return packed[1].map((row) => {
      const facts = row.split(__MARK__), pieces = forms[Number(facts[0])];
      let text = pieces[0];
      for (let i = 1; i < pieces.length; i++) text += facts[i] + pieces[i];
      return text;
    });
  };
  window.svMerge = (parts, cache) => {
    const parse = (key) => {
      const text = parts[key];
      if (cache[key] && cache[key][0] === text) return cache[key][1];
      const value = JSON.parse(text);  // a trace's packed hover texts: unpacked once, with the part
      if (value && value[__PACKED__]) {
        value.hovertext = window.svUnpack(value[__PACKED__]);
        delete value[__PACKED__];
      }
      cache[key] = [text, value];
      return value;
    };
    const layout = Object.assign({}, parse("layout"));
    const template = parse("template");
    if (template) layout.template = template;
    const data = [];
    for (let i = 0; i < Number(parts.n); i++) data.push(parse(String(i)));
    return {data, layout};
  };
}
const cache = {};
let drawing = Promise.resolve();
// the box's width as the browser last laid it out, told by a ResizeObserver after layout: a figure is
// drawn at that width (autosize off), so Plotly never reads the page's layout in the middle of a step's
// draws (an autosized react lays out the whole page, once per figure); a box that changes width has its
// figure laid out again at the new one (a box not laid out yet, or hidden, keeps autosize)
let width = 0;
new ResizeObserver((entries) => {
  const w = Math.round(entries[entries.length - 1].contentRect.width);
  if (w < 10 || w === width) return;
  width = w;
  if (box.layout && !box.layout.autosize)
    drawing = drawing.then(() => window.svPlotly()).then((P) => P.relayout(box, {width: w})).catch(() => {});
}).observe(box);
const say = (text) => {
  let note = element.querySelector(".sv-plotnote");
  if (!text) { if (note) note.remove(); return; }
  if (!note) { note = document.createElement("p"); note.className = "sv-plotnote sv-error"; element.appendChild(note); }
  note.textContent = text;
};
const draw = () => {
  const parts = props.value;
  drawing = drawing.then(() => window.svPlotly()).then((P) => {
    if (!parts || parts.n === undefined) {
      if (box.data) P.purge(box);
      return;
    }
    const fig = window.svMerge(parts, cache);
    if (width) Object.assign(fig.layout, {autosize: false, width});
    else fig.layout.autosize = true;
    return P.react(box, fig.data, fig.layout, {responsive: true, displaylogo: false});
  }).then(() => say("")).catch((e) => say("This figure could not be drawn: " + ((e && e.message) || e) + "."));
};
watch("value", draw);
draw();
"""


class PlotBox(gr.HTML):
    """A Plotly figure on a persistent element (module docstring). Its value: a ``go.Figure``, a figure
    dict, its parts (``viz.parts.figure_parts``), or ``None`` for nothing drawn."""

    def __init__(self, value: Any = None, **kwargs: Any):
        kwargs.setdefault("apply_default_css", False)
        # the page's CSS finds its container by this class (ui.style.APP_CSS: no padding)
        given = kwargs.get("elem_classes") or []
        kwargs["elem_classes"] = [*([given] if isinstance(given, str) else given), "sv-plotbox-block"]
        super().__init__(
            value=value,
            html_template='<div class="sv-plotbox"></div>',
            js_on_load=PLOT_JS.replace("__CHUNK__", json.dumps(plotly_chunk()))
            .replace("__MARK__", json.dumps(MARK))
            .replace("__PACKED__", json.dumps(PACKED)),
            **kwargs,
        )

    def postprocess(self, value: Any) -> Parts | None:  # type: ignore[override]
        """The figure as its named JSON parts (``None``: nothing drawn)."""
        if value is None:
            return None
        if isinstance(value, (go.Figure, dict)) and not (isinstance(value, dict) and "n" in value):
            return figure_parts(value)
        return value

    def api_info(self) -> dict[str, Any]:
        return {"type": "object", "description": "a Plotly figure as named JSON parts (specviz.viz.parts)"}
