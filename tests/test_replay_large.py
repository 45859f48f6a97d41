"""A long replay (issue #23 point 3): built once per session and then moved, its views are the views
the page drew before, the text shows a window with the current step, and the session's caches go
when it ends. No time is asserted (``python -m specviz.bench.replay`` measures them)."""

from __future__ import annotations

import functools
import gc
import re
import weakref

import pytest
from tiny import tiny_pair

import specviz
from specviz import viz
from specviz.bench.replay import tiled
from specviz.trace import RunTrace
from specviz.trace_check import check_trace
from specviz.ui import AppConfig, Explorer, Session, render, stepcache
from specviz.ui.layout import FIGURES
from specviz.ui.pairs import PairChoice, PairRegistry
from specviz.ui.plotbox import PlotBox
from specviz.ui.replay import LATER_STEPS
from specviz.ui.runner import columns_from_traces
from specviz.ui.textbox import text_html
from specviz.viz.theory import theory_panel

STEPS = 1000  # past stepcache.TEXT_WINDOW: the text is a window
WAIT_MS = 180_000  # the browser test's limit on each wait for what the page shows (no time is asserted)


LONGER = LATER_STEPS + 400  # past replay.LATER_STEPS: the comparison and theory panel come in a second event


@functools.lru_cache(maxsize=None)
def long_json(steps: int = STEPS) -> str:
    base = specviz.decode(
        tiny_pair("llama", vocab=16, draft="noisy", noise=0.5),
        "sd",
        [1, 2, 3],
        max_new_tokens=40,
        temperature=1.0,
        seed=3,
        gamma=4,
    )
    trace = tiled(base, steps)
    check_trace(trace)
    return trace.to_json()


def replay(tmp_path, steps: int = STEPS) -> tuple[Explorer, Session, dict, str]:
    path = tmp_path / "long.json"
    path.write_text(long_json(steps), encoding="utf-8")
    ex = Explorer(
        AppConfig(), registry=PairRegistry(), presets=[PairChoice("none", "/nonexistent", None)], preload=False
    )
    session = Session()
    view = ex.upload([str(path)], session)
    assert session.columns and session.columns[0].n_steps == steps, view.get("status")
    return ex, session, view, str(path)


def test_a_short_replay_is_drawn_in_one_event(tmp_path):
    ex, session, view, _ = replay(tmp_path)
    assert "Drawing the comparison" not in view["table"] and view["theory", 0].visible
    assert list(ex.replay_rest(session)) == [{}]  # nothing left for the second event


def test_a_long_replay_shows_its_columns_first_then_the_comparison_and_theory(tmp_path):
    ex, session, view, path = replay(tmp_path, LONGER)
    # the first event: the columns, with the comparison said to be drawing (nothing of a run before)
    assert f"Drawing the comparison of {LONGER:,} steps" in view["table"]
    for f in FIGURES:
        assert "Drawing the comparison" in view[f.name].layout.annotations[0].text
    assert view["tokens", 0] and view["tree", 0] is not None and view["theory", 0].visible is False
    # the second: what a one-event view of the same replay holds, at the step shown
    [rest] = ex.replay_rest(session)
    drawn = render.comparison(session, session.view_step())
    assert rest["table"] == drawn["table"] and "Drawing" not in rest["table"]
    for f in FIGURES:
        assert rest[f.name].to_plotly_json() == drawn[f.name].to_plotly_json()
    want = theory_panel(session.columns[0].trace, session.columns[0].step_shown(session.view_step()))
    assert rest["theory", 0].visible is True and rest["theory", 0].value == PlotBox(value=want).value
    assert list(ex.replay_rest(session)) == [{}]  # once
    # a second event that comes after the page moved on (another replay) draws nothing
    ex.upload([path], session)
    ex.upload([str(tmp_path / "missing.json")], session)  # refused: the page still shows the replay
    session.run_id += 1  # as a Run started in between would
    assert list(ex.replay_rest(session)) == [{}]


def steps_in(html: str) -> list[int]:
    return [int(k) for k in re.findall(r'class="sv-step[^"]*" data-step="(\d+)"', html)]


def current_in(html: str) -> list[int]:
    return [int(k) for k in re.findall(r'class="sv-step sv-cur" data-step="(\d+)"', html)]


def test_tiled_trace_passes_the_check():
    trace = RunTrace.from_json(long_json())
    check_trace(trace)
    assert len(trace.steps) == STEPS and [s.index for s in trace.steps] == list(range(STEPS))


def test_replay_opens_with_a_window_holding_step_one(tmp_path):
    _, session, view, path = replay(tmp_path)
    html = text_html(view["tokens", 0])
    shown = steps_in(html)
    assert shown == list(range(1, stepcache.TEXT_WINDOW + 1))  # a window, not 1000 steps
    assert current_in(html) == [1]
    assert f"steps {stepcache.TEXT_WINDOW + 1}–{STEPS} not shown" in html
    # the download is the uploaded file itself
    with open(session.columns[0].path, encoding="utf-8") as fh:
        assert fh.read() == open(path, encoding="utf-8").read()


def test_text_window_is_a_slice_of_the_whole_text_and_moves_with_the_scrub(tmp_path):
    ex, session, _, _ = replay(tmp_path)
    col = session.columns[0]
    whole = {}
    for value in (2, 150, 420, 777, STEPS):
        view = ex.scrub(session, value)
        k = value - 1
        a, b = stepcache.text_window(col, k)
        assert a <= k < b and b - a == stepcache.TEXT_WINDOW
        if ("tokens", 0) not in view:  # still inside the window sent before: the browser moves the step
            assert col.shown["text"][-1] == (a, b)
            continue
        html = text_html(view["tokens", 0])
        assert steps_in(html) == list(range(a + 1, b + 1)) and current_in(html) == [value]
        full = whole.setdefault(k, viz.tokens_html(col.trace, current_step=k))
        body = re.search(r'<div class="sv-text">(.*?)</div>(?:<div class="sv-elided">|$)', html, re.S).group(1)
        assert body in full  # the same spans as the unwindowed text, step for step
    # a scrub inside the window does not re-send the text
    k = session.view_step()
    assert stepcache.text_window(col, k - 1) == stepcache.text_window(col, k)
    assert ("tokens", 0) not in ex.scrub(session, k)  # to step k - 1 (0-based), in the same window


def test_scrub_view_equals_the_view_drawn_afresh(tmp_path):
    """Each step's panels after scrubs in any order (the theory figure built once, its marker moved)
    equal those of a column drawn from scratch, text aside (a window: above)."""
    ex, session, _, _ = replay(tmp_path)
    col = session.columns[0]
    for value in (1, 2, 333, 998, STEPS, 500, 1):
        ex.scrub(session, value)
        cached = render.slot_view(col, 0, value - 1, text=False)
        fresh_col = columns_from_traces([col.trace])[0]
        fresh_col.done = False  # nothing cached: drawn as before
        fresh = render.slot_view(fresh_col, 0, value - 1, text=False)
        assert cached.theory is not None
        assert cached.theory.to_plotly_json() == theory_panel(col.trace, value - 1).to_plotly_json()
        for name in ("tree", "controller", "distribution", "lengths"):
            a, b = getattr(cached, name), getattr(fresh, name)
            assert (a is None) == (b is None) and (a is None or a.to_plotly_json() == b.to_plotly_json()), name
        assert cached.narrative == fresh.narrative
    assert "theory" in col.cache


def test_cache_is_per_column_and_not_for_a_running_column():
    trace = RunTrace.from_json(long_json())
    col = columns_from_traces([trace])[0]
    col.done = False  # a live run's steps change: drawn afresh each time, nothing kept
    stepcache.theory_figure(col, 5)
    assert "theory" not in col.cache


def test_session_end_drops_the_caches_and_the_trace(tmp_path):
    ex, session, _, _ = replay(tmp_path)
    ex.scrub(session, 600)
    col = session.columns[0]
    assert col.cache
    alive = weakref.ref(col.trace)
    ex.session_deleted(session)
    assert not col.cache and session.columns == []
    del col
    gc.collect()
    assert alive() is None


IN_VIEW = """(i) => { const box = document.querySelector('#sv-text-' + i);
    const cur = box && box.querySelector('.sv-step.sv-cur');
    if (!cur) return null;
    let sc = cur.parentElement;
    while (sc && sc !== box && !(sc.scrollHeight > sc.clientHeight + 1 &&
           ['auto', 'scroll'].includes(getComputedStyle(sc).overflowY))) sc = sc.parentElement;
    if (!sc || sc === box && !(sc.scrollHeight > sc.clientHeight + 1)) return [Number(cur.dataset.step), true];
    const r = cur.getBoundingClientRect(), b = sc.getBoundingClientRect();
    return [Number(cur.dataset.step), r.bottom > b.top && r.top < b.bottom]; }"""


@pytest.mark.e2e
def test_long_replay_in_a_browser(app_server, browser, tmp_path):
    """The page opens a replay longer than ``LATER_STEPS`` with step 1's tokens in view and a window of the
    text, then draws its comparison and theory panel in a second event; a scrub in the window and one
    past it show the current step's tokens."""
    from e2e_support import ARTIFACTS, open_page

    url, _, _ = app_server
    path = tmp_path / "long.json"
    path.write_text(long_json(LONGER), encoding="utf-8")
    page = open_page(browser, url)
    # every wait is a generous limit on what the page shows, never a speed asserted: a loaded machine
    # takes as long as it takes, and only a page that never shows it fails
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=WAIT_MS)
    page.set_input_files("#sv-upload input[type=file]", str(path))
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Replaying 1')", timeout=WAIT_MS)
    page.wait_for_function(f"() => ({IN_VIEW})(0) !== null && ({IN_VIEW})(0)[1]", timeout=WAIT_MS)
    assert page.evaluate(IN_VIEW, 0) == [1, True]
    assert page.locator("#sv-text-0 .sv-step").count() == stepcache.TEXT_WINDOW
    # the second event: the comparison table (the run's row, its tokens) and the theory panel replace
    # what said they were being drawn
    page.wait_for_function(
        "() => { const t = document.querySelector('#sv-table');"
        " return t && !t.innerText.includes('Drawing') && t.querySelector('table'); }",
        timeout=WAIT_MS,
    )
    page.locator("#sv-theory-0 .js-plotly-plot").wait_for(state="visible", timeout=WAIT_MS)
    assert "Drawing the comparison" not in page.inner_text("#sv-per-step")
    assert "sd" in page.inner_text("#sv-table")
    box = page.locator("#sv-step input[type=number]")
    for value in (300, 900):  # in the window sent; past it (the server sends another)
        box.fill(str(value))
        box.press("Enter")
        try:
            page.wait_for_function(
                f"() => {{ const v = ({IN_VIEW})(0); return v && v[0] === {value} && v[1]; }}", timeout=WAIT_MS
            )
        except Exception:
            raise AssertionError(
                (
                    value,
                    page.evaluate(IN_VIEW, 0),
                    page.inner_text("#sv-step-label"),
                    page.locator("#sv-text-0 .sv-step").first.get_attribute("data-step"),
                    page.evaluate("document.querySelector('#sv-text-0').outerHTML.slice(0, 600)"),
                )
            )
    # a second value entered while the first is on its way: the page ends on the second, whenever the
    # first's answer comes (before the fix, an answer that came after the second Enter set the slider back
    # to the first value, and the queued second scrub then read it: ci19 on a loaded machine ended on 300
    # after 300 then 900)
    for value in (1200, 2000):
        box.fill(str(value))
        box.press("Enter")
    page.wait_for_function(f"() => {{ const v = ({IN_VIEW})(0); return v && v[0] === 2000 && v[1]; }}", timeout=WAIT_MS)
    page.wait_for_function(
        "document.querySelector('#sv-step-label').innerText.includes('step 2000 of')", timeout=WAIT_MS
    )
    assert box.input_value() == "2000"
    page.screenshot(path=str(ARTIFACTS / "e2e-long-replay.png"), full_page=True)
    assert not page.errors, page.errors


def test_the_first_view_benchmark_times_one_event_against_two(tmp_path, capsys):
    """``python -m specviz.bench.replay_first_view`` on a trace just past ``LATER_STEPS``: both modes
    replay it, and only the two-event mode has a second event to time. No time is asserted."""
    from specviz.bench import replay_first_view

    path = tmp_path / "long.json"
    path.write_text(long_json(LONGER), encoding="utf-8")
    replay_first_view.main(["--file", str(path), "--rounds", "1"])
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")[1:]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| ") and " s " in line + " "
    }
    first = rows["upload -> first view (`Explorer.upload`), wall"]
    second = rows["the second event (`Explorer.replay_rest`), wall"]
    assert all(re.match(r"\d+\.\d\d s \(", cell) for cell in first)
    assert second[0].strip() == "-" and re.match(r"\d+\.\d\d s \(", second[1])
