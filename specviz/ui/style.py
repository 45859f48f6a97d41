"""The app's look: theme, CSS and the header."""

from __future__ import annotations

import gradio as gr

from specviz.viz import CSS as VIZ_CSS
from specviz.viz.style import STATUS_COLORS


def theme() -> gr.themes.Base:
    return gr.themes.Default(primary_hue="indigo", neutral_hue="slate", radius_size="sm", text_size="sm")


HEADER_HTML = f"""
<div class="sv-hero">
  <div class="sv-title">specviz <span>· speculative decoding, step by step</span></div>
  <div class="sv-sub">A small <b>draft</b> model proposes tokens; the <b>target</b> checks them all in one forward pass.
  Each proposal is <b style="color:{STATUS_COLORS["accepted"]}">accepted</b> with probability min(1, p/q) or
  <b style="color:{STATUS_COLORS["rejected"]}">rejected</b>; a rejection is replaced by a token
  <b style="color:{STATUS_COLORS["resampled"]}">resampled</b> from the residual, and a fully accepted draft earns a
  <b style="color:{STATUS_COLORS["bonus"]}">bonus</b> token from the target. Run several algorithms on the same prompt
  and seed, then scrub through the steps.</div>
</div>
"""

APP_CSS = (
    VIZ_CSS
    + """
.sv-hero { padding: 4px 2px 2px 2px; }
.sv-title { font-size: 22px; font-weight: 700; color: #111827; }
.sv-title span { font-weight: 400; color: #6b7280; font-size: 17px; }
.sv-sub { font-size: 13px; color: #374151; max-width: 1100px; margin-top: 2px; line-height: 1.5; }
.sv-status { font-size: 13px; color: #374151; padding: 4px 2px; }
.sv-status .sv-bad, .sv-bad { color: #b91c1c; font-weight: 600; }
.sv-note, .sv-note p { font-size: 12px !important; color: #4b5563; }
.sv-col { border: 1px solid #e5e7eb; border-radius: 8px; padding: 8px !important; background: #fff; }
.sv-colhead { font-size: 15px; display: flex; align-items: center; gap: 6px; }
.sv-chip { display: inline-block; flex: none; width: 11px; height: 11px; border-radius: 3px; }
.sv-params { font-size: 12px; color: #6b7280; font-weight: 400; }
.sv-replayed { font-size: 12px; color: #92400e; }
.sv-stepinfo { font-size: 12px; color: #4b5563; margin: 2px 0 4px 0; }
.sv-done { color: #065f46; }
.sv-error { color: #991b1b; background: #fef2f2; border: 1px solid #fecaca; border-radius: 6px; padding: 6px 8px;
  font-size: 13px; margin-top: 4px; }
.sv-textbox { background: #fcfcfd; border-radius: 6px; }
.sv-elided { font-size: 12px; color: #6b7280; font-style: italic; margin: 2px 0; }
#sv-scrub { align-items: center; }
#sv-legend { margin: 0; }
.sv-hidden { display: none !important; }
/* a PlotBox (ui.plotbox) takes its block's whole width, as a gr.Plot did: gr.HTML's container pads 10px 12px.
   By its block's class, not :has(.sv-plotbox): a :has() over a subtree is checked again on every change
   inside it, and Plotly changes thousands of a tree's elements on every draw (issue 34) */
.sv-plotbox-block .html-container, .html-container.sv-plotbox-block { padding: 0 !important; }
/* a tree's title, subtitle and legend, drawn by the PlotBox as HTML above its plot (ui.plotbox), in the
   figures' own fonts and colours (viz.style); a legend entry's click hides its nodes */
.sv-plottop { padding: 6px 10px 2px 10px; background: white; color: #1f2937; line-height: 1.35;
  font-family: Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, Roboto, sans-serif; }
.sv-plottop .sv-pt-title { font-size: 13px; }
.sv-plottop .sv-pt-sub { font-size: 12px; color: #4b5563; }
.sv-plottop .sv-pt-legend { display: flex; flex-wrap: wrap; gap: 2px 14px; margin-top: 4px; font-size: 10px; }
.sv-plottop .sv-pt-item { display: inline-flex; align-items: center; gap: 4px; cursor: pointer; user-select: none; }
.sv-plottop .sv-pt-off { opacity: 0.4; }
.sv-stopped { color: #b91c1c; font-weight: 700; }
.sv-story, .sv-story p, .sv-story li { font-size: 12.5px !important; line-height: 1.45; }
.sv-measure-note { font-size: 12px; color: #4b5563; margin-bottom: 4px; }
.sv-spread { font-size: 11px; color: #4b5563; white-space: nowrap; }
#sv-input-msg p { margin: 2px 0; }
/* a beam table fits its column (its texts wrap anywhere); if it cannot, it scrolls inside it */
.sv-beams { overflow-x: auto; max-width: 100%; }
.sv-beams table.beams { width: 100%; margin: 0; table-layout: auto; }
.sv-beams table.beams th, .sv-beams table.beams td { padding: 4px 5px; }
.sv-beams table.beams td:nth-child(2) { overflow-wrap: anywhere; }
/* Plotly's toolbar (modebar) never covers a title, and takes no strip of its own: a figure's title,
   subtitle and legend all lie in its top margin (viz.style.titled), so the toolbar, upright
   (viz.style.base_layout), starts where the plot area starts (--sv-plot-top, set by PAGE_JS from the
   figure's own layout when it is drawn) and runs down the right edge, shown on hover as plotly shows
   it; hidden until the page knows that place, and on a phone (a touch showed it over the title, and
   the figures there are read, not zoomed) */
.js-plotly-plot .modebar-container { display: none !important; }
.js-plotly-plot[data-sv-bar] .modebar-container { display: block !important; top: var(--sv-plot-top) !important; }
/* phones: columns and figures stack, nothing is wider than the screen */
@media (max-width: 760px) {
  .js-plotly-plot[data-sv-bar] .modebar-container { display: none !important; }
  #sv-columns, .sv-figrow, #sv-prompt-row { flex-direction: column !important; flex-wrap: nowrap !important; }
  #sv-columns > .sv-col, .sv-figrow > div, #sv-prompt-row > div { min-width: 0 !important; width: 100% !important; }
  #sv-scrub { flex-wrap: wrap !important; }
  .sv-title { font-size: 18px; }
}
"""
)


# Runs in the browser whenever the step slider changes: moves the selected-step marker of the two
# comparison time series (the dotted line, and the dot on each cumulative curve, which follows
# its line trace) and the highlighted step of every column's text, without a server round trip
# or re-sending any figure.
STEP_JS = """
(k) => {
  const x = Number(k);
  // the markers move after the frame that shows the step's columns, once for the latest step if the
  // step moved again meanwhile (each move redraws both figures: Plotly recomputes their ranges, which
  // the step line is part of; a live step's update drew them before its columns were on screen)
  window.svMarkStep = x;
  if (!window.svMarkQueued) {
    window.svMarkQueued = true;
    requestAnimationFrame(() => setTimeout(() => {
      window.svMarkQueued = false;
      window.svMarkAt(window.svMarkStep);
    }, 0));
  }
  window.svMarkOne = window.svMarkOne || ((el, x) => {
    const P = window.Plotly;
    if (!P || !el.data || !el.layout) return;
    const idx = [], xs = [], ys = [];
    el.data.forEach((t, i) => {
      if (t.meta === "current" && i > 0) {
        const line = el.data[i - 1];
        const j = Math.max(0, Math.min(x, line.x.length - 1));
        idx.push(i); xs.push([line.x[j]]); ys.push([line.y[j]]);
      }
    });
    // the marker and the step line in one Plotly.update: one redraw (a restyle, then a relayout, drew twice)
    const marks = el.layout.shapes && el.layout.shapes.length ? {"shapes[0].x0": x, "shapes[0].x1": x} : null;
    if (idx.length && marks) P.update(el, {x: xs, y: ys}, marks, idx);
    else if (idx.length) P.restyle(el, {x: xs, y: ys}, idx);
    else if (marks) P.relayout(el, marks);
  });
  // a figure out of view keeps its marker until it comes into view: each move redraws the figure
  // whole, and during a live run the figures are far below the columns being watched (issue 34)
  window.svMarkSeen = window.svMarkSeen || new IntersectionObserver((entries) => {
    for (const e of entries) {
      const el = e.target;
      el.__svInView = e.isIntersecting;
      if (e.isIntersecting && el.__svMarkStale) {  // a move was skipped while it was out of view
        el.__svMarkStale = false;
        window.svMarkOne(el, el.__svMarkTo);
      }
    }
  });
  window.svMarkAt = window.svMarkAt || ((x) => {
    for (const id of ["sv-per-step", "sv-cumulative"]) {
      const el = document.querySelector("#" + id + " .js-plotly-plot");
      if (!el) continue;
      el.__svMarkTo = x;
      if (!el.__svSeen) { el.__svSeen = true; window.svMarkSeen.observe(el); }
      el.__svMarkStale = el.__svInView === false;
      if (!el.__svMarkStale) window.svMarkOne(el, x);
    }
  });
  for (const box of document.querySelectorAll("[id^=sv-text-]")) {
    if (box.querySelector(".sv-pinned")) continue;  // a column opened on its own step after a run
    const steps = box.querySelectorAll(".sv-step");
    // the last step shown: a long run's text is a window of its steps (ui.stepcache.text_window), which
    // the server moves when the slider leaves it
    const n = steps.length ? Number(steps[steps.length - 1].dataset.step) : 0;
    steps.forEach((s) => {
      const d = Number(s.dataset.step);
      s.classList.toggle("sv-cur", d === x && x <= n);
      s.classList.toggle("sv-future", x <= n && d > x);
    });
    if (window.svShowCurrent) window.svShowCurrent(box);
  }
  return [];
}
"""


# Runs once when the page loads. (0) Each time the status line shows a new live step, the page reports
# it through the hidden #sv-shown box, and a live run sends its next update only then (decoding goes
# on meanwhile; the steps it decodes while the page draws are not sent: the latest one wins). (1) On a narrow screen the
# settings sidebar starts closed, so it does not cover the page. (2) A click on a tree node writes "column:node:nonce"
# into the hidden #sv-node-pick box, whose change event opens that node's distribution view (Gradio's Plot has no
# click event of its own). Tree plots are re-bound whenever Gradio replaces their element.
PAGE_JS = r"""
() => {
  if (window.innerWidth < 760) {
    let tries = 0;
    const close = () => {
      const bar = document.querySelector("#sv-sidebar.open .toggle-button");
      if (bar) bar.click(); else if (tries++ < 50) setTimeout(close, 100);
    };
    close();
  }
  const pick = (i, node) => {
    const box = document.querySelector("#sv-node-pick textarea, #sv-node-pick input");
    if (!box) return;
    box.value = i + ":" + node + ":" + Date.now();
    box.dispatchEvent(new Event("input", {bubbles: true}));
    box.dispatchEvent(new Event("change", {bubbles: true}));
  };
  // back-pressure: tell the server each time a live update has been drawn ("Running … · step N"), in
  // the frame after it was applied (the server sends the next one only then: pacing.FrameGate), and
  // once at load ("0"), so the session's first run already waits for its draws. textContent, not
  // innerText: reading it lays nothing out (this runs on every change of the page)
  let reported = "";
  const send = (text) => {
    const box = document.querySelector("#sv-shown textarea, #sv-shown input");
    if (!box) return false;
    box.value = text + ":" + Date.now();
    box.dispatchEvent(new Event("input", {bubbles: true}));
    box.dispatchEvent(new Event("change", {bubbles: true}));
    return true;
  };
  const report = () => {
    const st = document.querySelector("#sv-status");
    const m = st && st.textContent.match(/Running \d+ of \d+ · step (\d+)/);
    if (!m || m[1] === reported) return;
    reported = m[1];
    requestAnimationFrame(() => setTimeout(() => send(m[1]), 0));
  };
  new MutationObserver(report).observe(document.body, {childList: true, subtree: true, characterData: true});
  let hello = 0;
  const greet = () => { if (!send("0") && hello++ < 100) setTimeout(greet, 200); };
  setTimeout(greet, 500);
  // the current step's tokens in view: a text box scrolls (the least it must) to its .sv-cur step when
  // the step moves (STEP_JS) and when the server sends a new text, after Gradio's own scrolling (a
  // replay opens on step 1, its text box otherwise at the end; a live run's newest step is at the end)
  window.svShowCurrent = (box) => {
    const cur = box.querySelector(".sv-step.sv-cur");
    if (!cur) return;
    let sc = cur.parentElement;
    while (sc && sc !== document.body && !(sc.scrollHeight > sc.clientHeight + 1 &&
           ["auto", "scroll"].includes(getComputedStyle(sc).overflowY))) sc = sc.parentElement;
    if (!sc || sc === document.body || !box.contains(sc)) return;
    const r = cur.getBoundingClientRect(), b = sc.getBoundingClientRect();
    if (r.top < b.top) sc.scrollTop -= b.top - r.top + 4;
    else if (r.bottom > b.bottom) sc.scrollTop += Math.min(r.bottom - b.bottom + 4, r.top - b.top - 4);
  };
  // A new text from the server (a live step, a replay's next window of steps) may come before or after
  // the slider's own script, and Gradio may patch the old elements in place rather than replace them:
  // so every change inside a text box brings its current step back into view, a few times as the
  // layout settles, and so does any scroll of the box the user did not make (Gradio's autoscroll to the
  // end comes late on a busy machine), until the user scrolls, clicks or types in the box
  const follow = (box) => {
    box.__svFollow = true;
    for (const ms of [0, 50, 250, 600, 1200]) setTimeout(() => window.svShowCurrent(box), ms);
  };
  setInterval(() => {
    document.querySelectorAll("[id^=sv-text-]").forEach((box) => {
      if (box.__svBound) return;
      box.__svBound = true;
      new MutationObserver(() => follow(box)).observe(box, {childList: true, subtree: true, characterData: true});
      box.addEventListener("scroll", () => { if (box.__svFollow) window.svShowCurrent(box); }, true);
      for (const ev of ["wheel", "touchstart", "pointerdown", "keydown"])
        box.addEventListener(ev, () => { box.__svFollow = false; }, {capture: true, passive: true});
      follow(box);
    });
  }, 200);
  const STATUSES = ["accepted", "rejected", "not_reached", "resampled", "bonus"];
  setInterval(() => {
    document.querySelectorAll("[id^=sv-tree-] .js-plotly-plot").forEach((el) => {
      if (el.__svBound || !el.on) return;
      el.__svBound = true;
      const i = Number(el.closest("[id^=sv-tree-]").id.slice(8));
      el.on("plotly_click", (ev) => {
        const pt = ev && ev.points && ev.points[0];
        if (pt && STATUSES.includes(pt.data.meta) && pt.customdata !== undefined) pick(i, pt.customdata);
      });
    });
  }, 300);
  // Plotly's responsive figures follow window resizes only: a column that narrows or widens without
  // one (the sidebar sliding away, columns restacking) would keep its figures at the old width, so a
  // change of a figure's box is passed on as a window resize (once per animation frame).
  let queued = false;
  const relayout = new ResizeObserver((entries) => {
    if (queued || !entries.some((e) => {
      const svg = e.target.querySelector("svg.main-svg");
      return svg && Math.abs(svg.getBoundingClientRect().width - e.contentRect.width) > 1;
    })) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; window.dispatchEvent(new Event("resize")); });
  });
  // And whatever event was missed or came too early (a figure drawn while its column was still being
  // laid out, a resize while plotly was busy drawing), a figure laid out for another width than its
  // box's is laid out again for its box (Plots.resize; at most twice for one width, so a box plotly
  // cannot match is not redrawn forever): what it shows is decided by its box, not by timing.
  // the toolbar's place (APP_CSS): the top of the figure's plot area, under its title and legend, as
  // plotly laid it out, and further down past any title, legend or note that reaches the right edge
  // there (a subplot's title); set when the figure is drawn (and checked with its width below)
  const placeBar = (el) => {
    const size = el._fullLayout && el._fullLayout._size;
    if (!size) return;
    const box = el.getBoundingClientRect(), bar = el.querySelector(".modebar");
    const b = bar ? bar.getBoundingClientRect() : {width: 0, height: 0};
    let y = size.t;
    if (b.width && b.height) {
      const texts = [...el.querySelectorAll(".g-gtitle, .infolayer .legend, .annotation")].map(
        (t) => t.getBoundingClientRect());
      for (let moved = true, n = 0; moved && n < 50; n++) {
        moved = false;
        for (const r of texts) {
          const beside = r.width && r.right > box.right - b.width - 2;
          if (beside && r.bottom > box.top + y && r.top < box.top + y + b.height) {
            y = r.bottom - box.top + 2;
            moved = true;
          }
        }
      }
    }
    const top = Math.round(y) + "px";
    if (el.style.getPropertyValue("--sv-plot-top") !== top) el.style.setProperty("--sv-plot-top", top);
    if (el.dataset.svBar !== "1") el.dataset.svBar = "1";
  };
  // placed after the frame that shows a draw, all figures drawn in it at once: its reads then find the
  // layout the frame made (read between draws, they laid the whole page out again after every figure)
  const barQueue = new Set();
  let barFrame = false;
  const queueBar = (el) => {
    barQueue.add(el);
    if (barFrame) return;
    barFrame = true;
    requestAnimationFrame(() => setTimeout(() => {
      barFrame = false;
      const els = [...barQueue];
      barQueue.clear();
      els.forEach(placeBar);
    }, 0));
  };
  setInterval(() => {
    const P = window.Plotly;
    document.querySelectorAll(".js-plotly-plot").forEach((el) => {
      if (!el.__svSized) {
        el.__svSized = true;
        relayout.observe(el);
      }
      if (!el.__svBar && el.on) {  // placed again after each draw; not every tick (it reads the layout)
        el.__svBar = true;
        el.on("plotly_afterplot", () => queueBar(el));
        queueBar(el);
      }
      const w = Math.round(el.getBoundingClientRect().width), full = el._fullLayout;
      if (!P || !full || el.__svFixing || w < 10 || Math.abs(full.width - w) <= 1) return;
      el.__svTries = el.__svWidth === w ? (el.__svTries || 0) + 1 : 1;
      el.__svWidth = w;
      if (el.__svTries > 2) return;
      el.__svFixing = true;
      Promise.resolve(P.Plots.resize(el)).catch(() => {}).finally(() => { el.__svFixing = false; });
    });
  }, 300);
}
"""
