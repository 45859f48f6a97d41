"""What ``specviz.bench.live`` records of a run: in the page, a script that notes each update's arrival,
the status line's changes and their frames, Plotly's calls and long tasks (``PAGE_PROBE``, read back as
``window.__svb``); on the server, the run loop's events and Gradio's serialisation (``Recorder``,
``hook_gradio``)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

# Runs in the page before anything else: records what the benchmark reads back (window.__svb)
PAGE_PROBE = r"""
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const B = window.__svb = {status: [], msgs: [], plotly: [], longtasks: []};
  try {
    new PerformanceObserver((l) => l.getEntries().forEach((e) =>
      B.longtasks.push({t: performance.timeOrigin + e.startTime, d: e.duration})))
      .observe({type: "longtask", buffered: true});
  } catch (e) {}
  // the stream of updates: every complete server-sent message, its size and arrival
  const dec = new TextDecoder();
  const read = ReadableStreamDefaultReader.prototype.read;
  ReadableStreamDefaultReader.prototype.read = function () {
    return read.call(this).then((r) => {
      if (r && typeof r.value === "string") {  // Gradio's client reads the stream line by line
        const kind = (r.value.match(/"msg":\s*"(\w+)"/) || [])[1] || "";
        if (kind === "process_generating" || kind === "process_completed")
          B.msgs.push({t: now(), bytes: r.value.length, kind});
      } else if (r && r.value && r.value.byteLength !== undefined) {
        const t = now();
        this.__svbuf = (this.__svbuf || "") + dec.decode(r.value, {stream: true});
        let i;
        while ((i = this.__svbuf.indexOf("\n\n")) >= 0) {
          const msg = this.__svbuf.slice(0, i);
          this.__svbuf = this.__svbuf.slice(i + 2);
          const kind = (msg.match(/"msg":\s*"(\w+)"/) || [])[1] || "";
          if (kind === "process_generating" || kind === "process_completed") B.msgs.push({t, bytes: msg.length, kind});
        }
      }
      return r;
    });
  };
  // Plotly's own calls (Gradio calls react then Plots.resize on every figure update)
  const wrap = () => {
    const P = window.Plotly;
    if (!P || P.__svb) return !!P;
    P.__svb = true;
    const wrapped = [[P, "react"], [P, "newPlot"], [P.Plots, "resize"], [P, "restyle"], [P, "relayout"], [P, "update"]];
    for (const [obj, name] of wrapped) {
      const f = obj[name];
      if (typeof f !== "function") continue;
      obj[name] = function (...a) {
        const t0 = now();
        try { return f.apply(this, a); } finally { B.plotly.push({t: t0, d: now() - t0, name}); }
      };
    }
    return true;
  };
  const poll = setInterval(() => { if (wrap()) clearInterval(poll); }, 20);
  // each new text of the status line: the update applied (dom), then the next frame (paint)
  let last = "";
  const look = () => {
    const st = document.querySelector("#sv-status");
    if (!st) return;
    const text = st.textContent.replace(/\s+/g, " ").trim();  // textContent: no forced layout
    if (text === last) return;
    last = text;
    const m = text.match(/step (\d+)/) || text.match(/(\d+) steps/);
    const rec = {text: text.slice(0, 120), step: m ? Number(m[1]) : null, dom: now(), paint: null};
    B.status.push(rec);
    requestAnimationFrame(() => setTimeout(() => { rec.paint = now(); }, 0));
  };
  const start = () =>
    new MutationObserver(look).observe(document.body, {childList: true, subtree: true, characterData: true});
  if (document.body) start(); else document.addEventListener("DOMContentLoaded", start);
})();
"""


@dataclass
class Recorder:
    """What the server side saw of one run: the run loop's events and Gradio's serialisation."""

    events: list[dict[str, Any]] = field(default_factory=list)
    sends: list[dict[str, Any]] = field(default_factory=list)
    # every event's handler and postprocessing: {"fn": name, "what": "call" | "post", "t0": s, "t1": s}
    calls: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    fn_name: str = "run"

    def probe(self, event: str, **facts: Any) -> None:
        with self.lock:
            self.events.append({"event": event, **facts})

    def clear(self) -> None:
        with self.lock:
            self.events.clear()
            self.sends.clear()


def hook_gradio(rec: Recorder) -> None:
    """Time Gradio's postprocessing and the stream's diff of every update of the run event, and
    measure what it sends (``json.dumps`` of the diffed outputs)."""
    from gradio.blocks import Blocks

    post, diffs, call = Blocks.postprocess_data, Blocks.handle_streaming_diffs, Blocks.call_function

    def note(block_fn: Any, what: str, t0: float) -> None:
        with rec.lock:
            rec.calls.append({"fn": getattr(block_fn, "name", ""), "what": what, "t0": t0, "t1": time.time()})

    async def call_function(self, block_fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = time.time()
        out = await call(self, block_fn, *args, **kwargs)
        note(block_fn, "call", t0)
        return out

    async def postprocess_data(self, block_fn, predictions, state):  # type: ignore[no-untyped-def]
        t0 = time.time()
        out = await post(self, block_fn, predictions, state)
        note(block_fn, "post", t0)
        if getattr(block_fn, "name", "") == rec.fn_name:
            with rec.lock:
                rec.sends.append({"t_post0": t0, "t_post1": time.time()})
        return out

    def handle_streaming_diffs(self, block_fn, data, *args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = time.time()
        out = diffs(self, block_fn, data, *args, **kwargs)
        if getattr(block_fn, "name", "") == rec.fn_name:
            size = len(json.dumps(out, default=str))  # as ASCII JSON (every earlier run in docs/bench.md)
            wire = len(json.dumps(out, default=str, ensure_ascii=False).encode())  # UTF-8, as Gradio sends it
            by_output = {
                output_name(c, i): len(json.dumps(out[i], default=str)) for i, c in enumerate(block_fn.outputs)
            }
            with rec.lock:
                if rec.sends and "bytes" not in rec.sends[-1]:
                    rec.sends[-1].update(
                        bytes=size, wire_bytes=wire, by_output=by_output, t_diff0=t0, t_sent=time.time()
                    )
        return out

    Blocks.postprocess_data, Blocks.handle_streaming_diffs = postprocess_data, handle_streaming_diffs
    Blocks.call_function = call_function


def output_name(component: Any, i: int) -> str:
    """An output's name in the size breakdown: its ``elem_id`` (``sv-tree-0``), else its kind and place."""
    return getattr(component, "elem_id", None) or f"{type(component).__name__.lower()}#{i}"
