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
// A figure whose layout.meta.svTop is set (a tree: viz.tree) has its title, subtitle and legend drawn
// here, as HTML above the plot: Plotly lays out and measures its own on every draw (a third of a tree's
// draw, bench.tree_draw), and a tree is drawn anew every step. A legend entry hides or shows its traces
// (by their meta) as Plotly's does, and they stay so on the next steps. Plotly draws the plot alone, as
// much shorter as its top was; the title stays in the layout's meta (tests, and what a reader asks).
const hidden = new Set();
const plain = (s) => new DOMParser().parseFromString(String(s || ""), "text/html").body.textContent;
const SYMBOLS = {
  circle: '<circle cx="6" cy="6" r="4.5" fill="%c"/>',
  "circle-open": '<circle cx="6" cy="6" r="4" fill="none" stroke="%c" stroke-width="1.5"/>',
  x: '<path d="M2.5 2.5L9.5 9.5M9.5 2.5L2.5 9.5" stroke="%c" stroke-width="2.5"/>',
  diamond: '<path d="M6 1L11 6L6 11L1 6Z" fill="%c"/>',
  star: '<path d="M6 .5L7.6 4.3L11.7 4.6L8.6 7.3L9.5 11.3L6 9.2L2.5 11.3L3.4 7.3L.3 4.6L4.4 4.3Z" fill="%c"/>',
  square: '<rect x="1.5" y="1.5" width="9" height="9" fill="%c"/>',
  line: '<path d="M0 6H12" stroke="%c" stroke-width="3.5"/>',
};
const colour = (c) => (typeof c === "string" && /^(#[0-9a-fA-F]{3,8}|rgba?\([0-9., ]+\))$/.test(c) ? c : "#6b7280");
const htmlTop = (fig) => {
  const meta = fig.layout.meta;
  let head = element.querySelector(".sv-plottop");
  if (!(meta && meta.svTop)) {
    if (head) head.remove();
    return fig.layout;
  }
  if (!head) {
    head = document.createElement("div");
    head.className = "sv-plottop";
    box.before(head);
  }
  const title = fig.layout.title || {};
  const lines = [title.text, ...String((title.subtitle || {}).text || "").split("<br>")].map(plain);
  const items = [];
  fig.data.forEach((t) => {
    const key = t.meta || t.name;
    if (hidden.has(key)) t.visible = "legendonly";
    else delete t.visible;
    if (t.showlegend === false || !t.name) return;
    const markers = String(t.mode || "").includes("markers");
    const sym = markers ? String((t.marker || {}).symbol) : "line";
    const c = colour(markers ? (t.marker || {}).color : (t.line || {}).color);
    items.push([key, plain(t.name), SYMBOLS[sym] ? sym : "circle", c]);
  });
  const state = JSON.stringify([lines, items, [...hidden]]);
  if (head.__svState !== state) {
    head.__svState = state;
    head.replaceChildren();
    lines.forEach((text, i) => {
      if (!text) return;
      const line = document.createElement("div");
      line.className = i ? "sv-pt-sub" : "sv-pt-title";
      line.textContent = text;
      head.appendChild(line);
    });
    const legend = document.createElement("div");
    legend.className = "sv-pt-legend";
    for (const [key, name, sym, c] of items) {
      const item = document.createElement("span");
      item.className = "sv-pt-item" + (hidden.has(key) ? " sv-pt-off" : "");
      item.dataset.key = key;
      item.innerHTML = '<svg width="12" height="12" viewBox="0 0 12 12">' + SYMBOLS[sym].replaceAll("%c", c) + "</svg>";
      item.append(name);
      item.addEventListener("click", () => {
        if (hidden.has(key)) hidden.delete(key);
        else hidden.add(key);
        draw();
      });
      legend.appendChild(item);
    }
    head.appendChild(legend);
  }
  const margin = Object.assign({}, fig.layout.margin), cut = Math.max(0, (margin.t || 0) - 6);
  margin.t -= cut;
  return Object.assign({}, fig.layout, {
    showlegend: false, title: {text: ""}, margin, height: fig.layout.height - cut,
    meta: Object.assign({}, meta, {title: plain(title.text)}),
  });
};
// the toolbar's download draws the figure with its own layout (its title and legend, which the page
// drew as HTML, in the picture), at the width shown; one config for every draw (a new one redraws all)
let full = null, config = null;
const configure = (P) => config || (config = {
  responsive: true, displaylogo: false, modeBarButtonsToRemove: ["toImage"],
  modeBarButtonsToAdd: [{name: "Download plot as a png", icon: P.Icons.camera, click: () => P.downloadImage(
    {data: box.data, layout: Object.assign({}, full, {width: (box._fullLayout || {}).width || full.width})},
    {format: "png", filename: "specviz"})}],
});
const draw = () => {
  const parts = props.value;
  drawing = drawing.then(() => window.svPlotly()).then((P) => {
    if (!parts || parts.n === undefined) {
      const head = element.querySelector(".sv-plottop");
      if (head) head.remove();
      if (box.data) P.purge(box);
      return;
    }
    const fig = window.svMerge(parts, cache);
    full = fig.layout;
    fig.layout = htmlTop(fig);
    if (width) Object.assign(fig.layout, {autosize: false, width});
    else fig.layout.autosize = true;
    // Plotly starts a draw by asking whether the box has no size (setPlotContext reads its clientHeight,
    // unless it already knows), which lays the whole page out between one tree and the next of a step: a
    // figure drawn at a given width and height has no use for the answer (it only sizes an autosized
    // one), so it is told. The config goes with the first draw only: a react given one copies and
    // compares Plotly's whole context and asks again.
    if (box._context) box._context._hasZeroHeight = box._context._hasZeroWidth = !fig.layout.autosize;
    return P.react(box, fig.data, fig.layout, box._context ? undefined : configure(P));
  }).then(() => say("")).catch((e) => say("This figure could not be drawn: " + ((e && e.message) || e) + "."));
};
watch("value", draw);
draw();
"""

from gradio.events import Dependency

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
    from typing import Callable, Literal, Sequence, Any, TYPE_CHECKING
    from gradio.blocks import Block
    if TYPE_CHECKING:
        from gradio.components import Timer
        from gradio.components.base import Component