"""The live page driven in a browser (``specviz.bench.live``): the app served in this process, the page
opened in headless Chromium, a run made as a person would (Run, then wait for Done), and the timed
interactions (slider scrubs, a tree node's click)."""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any

from specviz.bench.live_analysis import analyse
from specviz.bench.live_probe import PAGE_PROBE, Recorder


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
    page: Any,
    rec: Recorder,
    algos: list[str],
    paced: bool,
    pace_s: float,
    max_new: int,
    interact: bool,
    shot: str | None,
) -> dict[str, Any]:
    """One run of ``algos`` (a column each), paced or not, timed from the click on Run to Done (``analyse``),
    a screenshot of its last view to ``shot``, then with ``interact`` its scrubs and a node's click."""
    n_cols = len(algos)
    choose(page, algos)
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
