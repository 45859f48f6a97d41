"""The live page, timed in a browser (issue 34): ``python -m specviz.bench.live [--goals | --quick | ...]``.

Starts the app in this process on one pair (``--pairs``), opens it in headless Chromium (Debian's
``chromium`` through Playwright) at each ``--widths`` viewport width, and for every case (columns x
paced/unpaced) presses Run as a person would and waits for "Done". For every step it records

* when the step was decoded (the run loop's ``RunLoop.probe`` events, server clock);
* when its update was built, serialised by Gradio (``Blocks.postprocess_data`` and the stream's diff,
  timed here) and how many bytes went out;
* when the browser received the update (the page's stream reader, wrapped), when its status line
  changed (the update applied) and the next frame after it (drawn), and how long Plotly's own calls
  took meanwhile; the page's long tasks (``longtask``).

and prints per case the display overhead per step (decoded, or released by the pacing -> drawn:
median and p95), the longest gap between two drawn steps and the decoding inside it, the update
sizes, the first step's latency, the run's time on screen against its decoding time, and where an
update's time goes (build, wait for the page, serialise, transfer, browser). With ``--interact``
(on by default for the goal cases) it then scrubs the slider and clicks a tree node, timing each from
the action to the new view drawn. Everything runs on this machine: its load average is printed.

This is a benchmark, not a test: nothing here asserts a speed. ``--goals`` runs the issue's goal
cases (the default pair, 1600 px: 4 columns paced with scrubs and a node click, 6 columns unpaced)
and states each goal met or not. The history of these numbers is in ``docs/bench.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from specviz.validation import Parser, comma_list, one_of, whole

PAIRS = {"default": "smollm2-135m-offline", "code": "bundled-stdlib-pair"}
COLUMNS = {1: ["sd"], 4: ["ar", "sd", "specinfer", "mcsd"], 6: ["ar", "sd", "specinfer", "mcsd", "sequoia", "eesd"]}
GOALS = {
    "overhead_median_s": 0.100,
    "overhead_p95_s": 0.300,
    "gap_s": 1.0,
    "unpaced_ratio": 1.25,
    "first_step_s": 1.5,
    "scrub_s": 0.3,
    "click_s": 0.5,
    "update_bytes": 50_000,
}

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


def sizes_by_output(sends: list[dict[str, Any]]) -> dict[str, float]:
    """Median bytes per output over a run's live updates (not its opening and final views), largest first."""
    live = [s["by_output"] for s in (sends[1:-1] or sends) if "by_output" in s]
    names = {k for s in live for k in s}
    out = {k: med([s.get(k, 0) for s in live]) for k in names}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(pair: str, rec: Recorder) -> tuple[Any, str]:
    """The app on ``pair`` (a preset name), served in this process on a free port."""
    os.environ.update({"SPECVIZ_PRESETS": pair, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False"})
    from specviz.ui.app import build_app, launch_kwargs

    demo = build_app()
    ex = demo.explorer
    if ex.startup_message:
        raise SystemExit(f"the pair {pair} did not load: {ex.startup_message}")
    ex.loop.probe = rec.probe
    port = free_port()
    kwargs = launch_kwargs(ex.config)
    kwargs["_frontend"] = False
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **kwargs)
    return demo, f"http://127.0.0.1:{port}/"


def open_page(browser: Any, url: str, width: int) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.set_default_timeout(300_000)
    page.add_init_script(PAGE_PROBE)
    page.goto(url, timeout=600_000)
    page.wait_for_selector("#sv-run", timeout=600_000)
    phone = width < 760
    if page.locator("#sv-sidebar.open").count() == phone:
        page.click("#sv-sidebar .toggle-button")
    return page


def set_number(page: Any, elem_id: str, value: Any) -> None:
    box = page.locator(f"#{elem_id} input[type=number], #{elem_id} input[type=text], #{elem_id} textarea").first
    box.fill(str(value))
    box.press("Enter")
    box.blur()


def choose(page: Any, names: list[str]) -> None:
    from specviz.algorithms import ALGORITHMS

    if page.locator("#sv-sidebar.open").count() == 0:
        page.click("#sv-sidebar .toggle-button")
    algos = page.locator("#sv-algos")
    for name in ALGORITHMS:
        box = algos.get_by_label(name, exact=True)
        box.check() if name in names else box.uncheck()


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def analyse(rec_events: list[dict], sends: list[dict], browser: dict, t_click: float, paced: bool) -> dict[str, Any]:
    """One run's numbers from what the server and the page recorded (all times in seconds, wall clock)."""
    decoded = [e for e in rec_events if e["event"] == "decoded"]
    updates = [e for e in rec_events if e["event"] == "update"]
    status = [s for s in browser["status"] if s["paint"] is not None]
    msgs = browser["msgs"]
    n = max((e["steps"] for e in decoded), default=0)
    dec_at = {}
    for e in decoded:
        dec_at.setdefault(e["steps"], e["t"])
    decode_s = sum(e["seconds"] for e in decoded)
    # the step's update, by its step: the first update showing it (an update shows every step up to its own)
    released = {u["steps"]: u["t_ready"] for u in updates if not u.get("final")}
    # drawn: the first status line with that step or a later one (the page's clock: ms since the epoch)
    drawn_list = [(s["step"], s["paint"] / 1000.0) for s in status if s["step"] is not None and s["step"] > 0]
    overhead, first_drawn = [], {}
    for k in range(1, n + 1):
        d = next((t for step, t in drawn_list if step >= k), None)
        if d is None or k not in dec_at:
            continue
        first_drawn[k] = d
        ready = max(dec_at[k], released.get(k, dec_at[k])) if paced else dec_at[k]
        overhead.append(d - ready)
    # gaps between two successive drawn updates, less the decoding (and pacing) that happened inside
    paints = sorted({t for _, t in drawn_list})
    longest, unexplained = (0.0, 0.0), 0.0
    for a, b in zip(paints, paints[1:]):
        inside = sum(e["seconds"] for e in decoded if a < e["t"] <= b)
        if b - a > longest[0]:
            longest = (b - a, inside)
        unexplained = max(unexplained, b - a - inside)
    # an update's time: built, waited for the page (before issue 34), serialised, received, drawn
    live = updates
    parts: dict[str, list[float]] = {
        "build": [],
        "wait_page": [],
        "serialise": [],
        "transfer": [],
        "browser": [],
        "plotly": [],
    }
    sizes = [s.get("bytes", 0) for s in sends]
    gen_msgs = msgs[:]
    for i, u in enumerate(live):
        parts["build"].append(u["t_built"] - u.get("t_build", u["t_ready"]))
        # before issue 34 the loop waited for the page after building; since, a paced run waits before
        parts["wait_page"].append(u["t_yield"] - u["t_built"] + u.get("t_build", u["t_ready"]) - u["t_ready"])
        s = sends[i + 1] if i + 1 < len(sends) else None  # the first send is the run's opening view
        if s is None or "t_sent" not in s:
            continue
        parts["serialise"].append(s["t_sent"] - s["t_post0"])
        m = gen_msgs[i + 1] if i + 1 < len(gen_msgs) else None
        if m is None:
            continue
        arrive = m["t"] / 1000.0
        parts["transfer"].append(arrive - s["t_sent"])
        shown = next(
            (
                st
                for st in status
                if st["dom"] / 1000.0 >= arrive - 0.002 and st["step"] is not None and st["step"] >= u["steps"]
            ),
            None,
        )
        if shown is not None:
            parts["browser"].append(shown["paint"] / 1000.0 - arrive)
            parts["plotly"].append(
                sum(p["d"] for p in browser["plotly"] if arrive * 1000 <= p["t"] <= shown["paint"]) / 1000.0
            )
    end = max(paints) if paints else float("nan")
    first_k = min(first_drawn) if first_drawn else None
    return {
        "steps": n,
        "updates": len(updates),
        "decode_s": decode_s,
        "on_screen_s": end - t_click,
        "screen_over_decode": (end - t_click) / decode_s if decode_s else float("nan"),
        "overhead_median_s": med(overhead),
        "overhead_p95_s": pct(overhead, 0.95),
        "longest_gap_s": longest[0],
        "decode_in_longest_gap_s": longest[1],
        "worst_gap_beyond_decoding_s": unexplained,
        "first_step_s": (first_drawn[first_k] - dec_at[first_k]) if first_k else float("nan"),
        "click_to_first_step_s": (first_drawn[first_k] - t_click) if first_k else float("nan"),
        "update_bytes_median": med(sizes[1:-1] or sizes),
        "update_bytes_max": max(sizes, default=0),
        "update_wire_bytes_median": med([s.get("wire_bytes", 0) for s in sends][1:-1] or [0]),
        "update_bytes_by_output": sizes_by_output(sends),
        "parts_median_s": {k: med(v) for k, v in parts.items()},
        "reports": sum(e["event"] == "reported" for e in rec_events),
        "plotly_calls": {
            name: [
                sum(p["name"] == name for p in browser["plotly"]),
                round(sum(p["d"] for p in browser["plotly"] if p["name"] == name) / 1000.0, 3),
            ]
            for name in sorted({p["name"] for p in browser["plotly"]})
        },
        "msg_bytes": [m["bytes"] for m in msgs],
        "longtask_s": sum(t["d"] for t in browser["longtasks"] if t["t"] / 1000.0 >= t_click) / 1000.0,
    }


def scrub_times(
    page: Any, n_cols: int, steps: int, tries: int = 4, split: list | None = None, rec: Recorder | None = None
) -> list[float]:
    """Seconds from a slider move (its number box, Enter) to every column's header and tree drawn at
    that step. ``split`` gets, per scrub, where its time went: ``[answer, browser, plotly, handler, post]``
    seconds, the answer being the slider's event to the page's receipt of the server's answer (the server's
    handler, Gradio's serialisation and the transfer), the browser the rest, Plotly's calls part of it;
    handler and post: the scrub's handler and Gradio's postprocessing of its view, server-side (``rec``)."""
    out = []
    targets = [max(1, steps * (i + 1) // (tries + 1)) for i in range(tries)]
    box = page.locator("#sv-step input[type=number]")
    for k in targets:
        page.evaluate("() => { window.__svb.msgs.length = 0; window.__svb.plotly.length = 0; }")
        t0 = time.time()
        box.fill(str(k))
        box.press("Enter")
        page.wait_for_function(
            """([k, n]) => { for (let i = 0; i < n; i++) {
                 const h = document.querySelector('#sv-head-' + i);
                 const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');
                 const title = el && el.layout && el.layout.title && el.layout.title.text;
                 if (!h) return false;
                 const text = h.innerText, done = text.includes('(done before step ' + k + ')');
                 if (!text.includes('step ' + k + '/') && !done) return false;
                 if (!done && title && title.startsWith('step ') && title !== 'step ' + k) return false; }
               return true; }""",
            arg=[k, n_cols],
            polling="raf",
            timeout=120_000,
        )
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
        out.append(time.time() - t0)
        if split is not None:
            seen = page.evaluate("() => ({msgs: window.__svb.msgs, plotly: window.__svb.plotly})")
            done = [m["t"] / 1000.0 for m in seen["msgs"] if m["kind"] == "process_completed"]
            answer = (min(done) - t0) if done else float("nan")  # the first answer after the move
            with rec.lock if rec else threading.Lock():
                mine = [c for c in (rec.calls if rec else []) if c["fn"] == "scrub" and c["t0"] >= t0 - 0.05]
            spent = {w: sum(c["t1"] - c["t0"] for c in mine if c["what"] == w) for w in ("call", "post")}
            by_call: dict[str, float] = {}
            for p in seen["plotly"]:
                key = f"{p['name']} {'before' if p['t'] / 1000.0 < t0 + answer else 'after'} the answer"
                by_call[key] = by_call.get(key, 0.0) + p["d"] / 1000.0
            split.append(
                [
                    answer,
                    out[-1] - answer,
                    sum(p["d"] for p in seen["plotly"]) / 1000.0,
                    spent["call"],
                    spent["post"],
                    by_call,
                ]
            )
    return out


def click_time(page: Any, n_cols: int) -> float | None:
    """Seconds from a click on the first drafted tree node (of the first column that drafted one at
    the step shown) to its distribution view drawn."""
    for i in range(n_cols):
        page.locator(f"#sv-tree-{i}").scroll_into_view_if_needed()
        box = page.evaluate(
            """(i) => {
            const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');
            if (!el || !el.data) return null;
            const traces = el.querySelectorAll('.scatterlayer .trace');
            for (const meta of ['rejected', 'accepted', 'not_reached']) for (let t = 0; t < el.data.length; t++) {
              if (el.data[t].meta !== meta) continue;
              const pt = traces[t] && traces[t].querySelector('.points path');
              if (pt) { const r = pt.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; }
            }
            return null; }""",
            i,
        )
        if box is None:
            continue
        t0 = time.time()
        page.mouse.click(box["x"], box["y"])
        page.wait_for_function(
            """(i) => { const el = document.querySelector('#sv-dist-' + i + ' .js-plotly-plot');
                                           return !!(el && el.data && el.data.some(t => t.type === 'bar')); }""",
            arg=i,
            polling="raf",
            timeout=120_000,
        )
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")
        return time.time() - t0
    return None


def run_case(
    page: Any, rec: Recorder, n_cols: int, paced: bool, pace_s: float, max_new: int, interact: bool, shot: str | None
) -> dict[str, Any]:
    choose(page, COLUMNS[n_cols])
    set_number(page, "sv-max-new", max_new)
    set_number(page, "sv-pace", pace_s if paced else 0)
    time.sleep(1.0)  # the editor's and boxes' own events settle before Run
    rec.clear()
    page.evaluate(
        "() => { window.__svb.status.length = 0; window.__svb.msgs.length = 0; "
        "window.__svb.plotly.length = 0; window.__svb.longtasks.length = 0; }"
    )
    t_click = (
        page.evaluate(
            "() => { const t = performance.timeOrigin + performance.now(); "
            "document.querySelector('#sv-run').click(); return t; }"
        )
        / 1000.0
    )
    deadline = time.time() + 900
    while time.time() < deadline:
        time.sleep(1.0)
        text = page.evaluate("() => document.querySelector('#sv-status').textContent.trim()")
        if text.startswith("Done") or "Stopped" in text or "⚠" in text:
            break
    time.sleep(1.5)  # the last frame and the page's last report
    browser = page.evaluate("() => window.__svb")
    with rec.lock:
        events, sends = list(rec.events), list(rec.sends)
    out = analyse(events, sends, browser, t_click, paced)
    out["status"] = text[:100]
    if shot:
        page.screenshot(path=shot, full_page=True)
    if interact and out["steps"] > 1:
        out["scrub_split_s"] = []
        out["scrub_s"] = scrub_times(page, n_cols, out["steps"], split=out["scrub_split_s"], rec=rec)
        out["click_s"] = click_time(page, n_cols)
    return out


def load() -> str:
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def fmt(x: Any, unit: str = "s") -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    if unit == "kB":
        return f"{x / 1000:.1f}"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def goals_met(r: dict[str, Any], n_cols: int, paced: bool, pair: str) -> list[str]:
    said = []
    ok = lambda b: "met" if b else "NOT met"  # noqa: E731
    if n_cols == 4:
        said.append(f"overhead median {fmt(r['overhead_median_s'])} s <= 0.1: {ok(r['overhead_median_s'] <= 0.1)}")
        said.append(f"overhead p95 {fmt(r['overhead_p95_s'])} s <= 0.3: {ok(r['overhead_p95_s'] <= 0.3)}")
        said.append(
            f"gap beyond decoding {fmt(r['worst_gap_beyond_decoding_s'])} s <= 1: "
            f"{ok(r['worst_gap_beyond_decoding_s'] <= 1.0)}"
        )
        if pair == "default":
            said.append(
                f"update {fmt(r['update_bytes_median'], 'kB')} kB (median; max "
                f"{fmt(r['update_bytes_max'], 'kB')}) <= 50 kB: {ok(r['update_bytes_median'] <= 50_000)}"
            )
    if n_cols == 6 and not paced:
        said.append(
            f"on screen {fmt(r['screen_over_decode'])}x decoding <= 1.25: {ok(r['screen_over_decode'] <= 1.25)}"
        )
    said.append(f"first step {fmt(r['first_step_s'])} s <= 1.5: {ok(r['first_step_s'] <= 1.5)}")
    if r.get("scrub_s"):
        said.append(f"scrub median {fmt(med(r['scrub_s']))} s <= 0.3: {ok(med(r['scrub_s']) <= 0.3)}")
    if r.get("click_s") is not None and "click_s" in r:
        said.append(f"node click {fmt(r['click_s'])} s <= 0.5: {ok(r['click_s'] <= 0.5)}")
    return said


HEAD = (
    "| pair | cols | paced | px | steps | decode s | on screen s (x decode) | overhead med / p95 s | "
    "longest gap s (decoding in it) | first step s | update kB med / max | build / wait page / serialise / "
    "transfer / browser (plotly) s | scrub s | click s |"
)


def row(case: tuple, r: dict[str, Any]) -> str:
    pair, n_cols, paced, width = case
    p = r["parts_median_s"]
    parts = " / ".join(fmt(p[k]) for k in ("build", "wait_page", "serialise", "transfer", "browser"))
    parts += f" ({fmt(p['plotly'])})"
    scrub = fmt(med(r["scrub_s"])) if r.get("scrub_s") else "-"
    return (
        f"| {pair} | {n_cols} | {'yes' if paced else 'no'} | {width} | {r['steps']} | {fmt(r['decode_s'])} | "
        f"{fmt(r['on_screen_s'])} ({fmt(r['screen_over_decode'])}x) | {fmt(r['overhead_median_s'])} / "
        f"{fmt(r['overhead_p95_s'])} | {fmt(r['longest_gap_s'])} ({fmt(r['decode_in_longest_gap_s'])}) | "
        f"{fmt(r['first_step_s'])} | {fmt(r['update_bytes_median'], 'kB')} / {fmt(r['update_bytes_max'], 'kB')} | "
        f"{parts} | {scrub} | {fmt(r.get('click_s'))} |"
    )


def cases_from(args: argparse.Namespace) -> list[tuple[str, int, bool, int]]:
    if args.goals:
        return [("default", 4, True, 1600), ("default", 6, False, 1600)]
    if args.quick:
        return [("default", 4, True, 1600), ("default", 6, False, 1600), ("code", 4, True, 400)]
    out = []
    for pair in args.pairs:  # each list read by its option's type (validation.comma_list)
        for width in args.widths:
            for n in [int(c) for c in args.columns]:
                for pace in args.pace:
                    out.append((pair, n, pace == "paced", width))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = Parser(
        prog="python -m specviz.bench.live",
        description=__doc__.split("\n\n")[0],
        epilog="The goal cases in one command (4 minutes on a lightly loaded 2-core machine, 7 under load 10): "
        "python -m specviz.bench.live --goals. The full matrix: python -m specviz.bench.live "
        "(both pairs, 1/4/6 columns, paced and unpaced, 1600 and 400 px; about an hour).",
    )
    ap.add_argument(
        "--goals",
        action="store_true",
        help="the issue's goal cases only: the default pair at 1600 px, "
        "4 columns paced (then 4 scrubs and a node click) and 6 columns unpaced",
    )
    ap.add_argument("--quick", action="store_true", help="the goal cases and the code pair's 4 columns paced at 400 px")
    ap.add_argument(
        "--pairs",
        type=comma_list(one_of(*PAIRS)),
        default="default,code",
        help="default (SmolLM2 with its draft) and/or code (the bundled pair)",
    )
    ap.add_argument(
        "--columns",
        type=comma_list(one_of(*map(str, COLUMNS))),
        default="1,4,6",
        help="column counts: 1 (sd), 4 (the page's default), 6 (+ sequoia, eesd)",
    )
    ap.add_argument(
        "--pace",
        type=comma_list(one_of("paced", "unpaced")),
        default="paced,unpaced",
        help="paced (the page's default pace) and/or unpaced (0)",
    )
    ap.add_argument(
        "--widths", type=comma_list(whole(200, 10000)), default="1600,400", help="viewport widths in px, 200 to 10000"
    )
    ap.add_argument("--max-new", type=whole(1), default=64, help="tokens per run (the page's default: 64)")
    ap.add_argument("--no-interact", action="store_true", help="skip the scrubs and the node click")
    ap.add_argument("--json", default="", help="write every case's numbers here (JSON)")
    ap.add_argument("--shots", default="", help="a folder for a screenshot of each case's last view")
    args = ap.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        raise SystemExit("needs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    cases = cases_from(args)
    rec = Recorder()
    hook_gradio(rec)
    results: list[tuple[tuple, dict]] = []
    print(f"# specviz live page · {load()} at start · {len(cases)} cases", flush=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
        )
        for pair in dict.fromkeys(c[0] for c in cases):
            demo, url = start_app(PAIRS[pair], rec)
            pace_s = demo.explorer.config.default_pace_s
            try:
                for case in [c for c in cases if c[0] == pair]:
                    _, n_cols, paced, width = case
                    page = open_page(browser, url, width)
                    interact = not args.no_interact and (paced or not args.goals)
                    shot = (
                        os.path.join(args.shots, f"live-{pair}-{n_cols}-{'paced' if paced else 'unpaced'}-{width}.png")
                        if args.shots
                        else None
                    )
                    r = run_case(page, rec, n_cols, paced, pace_s, args.max_new, interact, shot)
                    page.close()
                    r["load"] = load()
                    results.append((case, r))
                    print(row(case, r) + f" {r['load']}", flush=True)
            finally:
                demo.close()
        browser.close()
    print(f"\n# {load()} at the end\n")
    print(HEAD)
    print("|" + "---|" * (HEAD.count("|") - 1))
    for case, r in results:
        print(row(case, r))
    print("\nAn update's bytes by output (ASCII JSON, median over the live updates; the largest 10):")
    for case, r in results:
        top = list(r["update_bytes_by_output"].items())[:10]
        wire = r["update_wire_bytes_median"] / 1000
        print(f"- {case}: {wire:.1f} kB as UTF-8 (the wire); " + ", ".join(f"{k} {v / 1000:.1f} kB" for k, v in top))
    for case, r in results:
        if r.get("scrub_split_s"):
            a, b, c, d, e = (med([x[j] for x in r["scrub_split_s"]]) for j in range(5))
            names = {k for x in r["scrub_split_s"] for k in x[5]}
            calls = {k: med([x[5].get(k, 0.0) for x in r["scrub_split_s"]]) for k in sorted(names)}
            print(
                f"- {case}: a scrub, median: answer received {a:.3f} s (of it the handler {d:.3f}, Gradio's "
                f"postprocessing {e:.3f}), then the browser {b:.3f} s (Plotly {c:.3f}: "
                + ", ".join(f"{k} {v:.3f}" for k, v in calls.items())
                + ")"
            )
    print("\nGoals (issue 34):")
    for (pair, n_cols, paced, width), r in results:
        for line in goals_met(r, n_cols, paced, pair):
            print(f"- {pair}, {n_cols} columns, {'paced' if paced else 'unpaced'}, {width} px: {line}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{"case": list(c), **r} for c, r in results], fh, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv[1:])
