"""End to end: `python app.py` in a subprocess, driven by Debian's chromium through Playwright.

What a person sees: a paced live run whose tree moves through the steps, Stop mid-run ending in
"stopped" on each column's last step, a click on a tree node opening its distribution view, replay
of an exported trace, bad inputs answered in words, and the page at phone width. Nothing here asserts
a speed: waits have generous limits and look at what the page shows.

Needs: the `playwright` Python package (no browser download: it drives the system `chromium`) and a
`chromium` binary on PATH (`apt-get install chromium`). Without chromium the browser test is skipped,
unless CI or SPECVIZ_REQUIRE_E2E is set, where it fails. Screenshots go to test-artifacts/. The app
is the test process's, the browser the file's (``app_server`` and ``browser`` in conftest.py).
"""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from e2e_support import (  # noqa: F401  (other test files imported them from here)
    ARTIFACTS,
    HAVE_BUNDLED,
    choose,
    open_page,
    plot_clipped,
    plot_info,
    plot_overlaps,
    set_number,
    start_app,
    stop,
    to_phone_width,
    tree_step,
    unreadable,
    wait_plot_title,
    wait_status,
)

import specviz

pytestmark = pytest.mark.e2e


def test_app_in_a_browser(app_server, browser, tmp_path):
    """One app process for the whole scenario (pytest-xdist would start one per worker otherwise)."""
    url, (target, draft), tmp = app_server
    if HAVE_BUNDLED:
        check_bundled_pair(url)
    side_by_side(url, browser)
    controller_settings(url, browser)
    paced_live_run_and_stop(url, browser)
    bad_inputs(url, browser)
    replay(url, browser, target, draft, tmp_path)
    phone_width(url, browser)


def test_clicking_a_tree_node_opens_its_distribution(app_server, browser):
    url, _, _ = app_server
    page = open_page(browser, url)
    choose(page, ["sd"])
    set_number(page, "sv-max-new", 12)  # a few steps of sd, each drafting gamma tokens: nodes to click
    set_number(page, "sv-temperature", 0.8)  # sampling: p and q are real distributions, not one-hots
    set_number(page, "sv-pace", 0)
    page.click("#sv-run")
    wait_status(page, "Done")
    wait_plot_title(page, "sv-tree-0", "step ")
    assert unreadable(page, "sv-tree-0") == {}  # one column: title, subtitle and legend whole and apart
    page.locator("#sv-tree-0").scroll_into_view_if_needed()  # the mouse only reaches what is on screen
    # a drafted node's marker, clicked as a person would (plotly finds the point under the mouse)
    box = page.evaluate("""() => {
        const el = document.querySelector('#sv-tree-0 .js-plotly-plot');
        const metas = ['rejected', 'accepted', 'not_reached'];  // a rejection shows the residual best
        const traces = el.querySelectorAll('.scatterlayer .trace');
        for (const meta of metas) for (let t = 0; t < el.data.length; t++) {
          if (el.data[t].meta !== meta) continue;
          const pt = traces[t] && traces[t].querySelector('.points path');
          if (pt) { const r = pt.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; }
        }
        return null; }""")
    assert box is not None, "no drafted node in the tree of the step shown"
    page.mouse.click(box["x"], box["y"])
    page.wait_for_function(
        """() => { const el = document.querySelector('#sv-dist-0 .js-plotly-plot');
                                      return !!(el && el.data && el.data.some(t => t.type === 'bar')); }""",
        timeout=30_000,
    )
    info = page.evaluate("""() => document.querySelector('#sv-dist-0 .js-plotly-plot').data
                                 .filter(t => t.type === 'bar').map(t => t.name || '')""")
    assert len(info) >= 2, info  # p and q bars at least
    # sampled: the theory panel is shown, its stacked panels clear of one another at one column's width
    page.wait_for_function(
        """() => { const el = document.querySelector('#sv-theory-0 .js-plotly-plot');
                                      return !!(el && el.data && el.data.length); }""",
        timeout=30_000,
    )
    assert plot_overlaps(page, "sv-theory-0") == []
    page.locator("#sv-dist-0").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-distribution.png"), full_page=True)
    page.close()


def side_by_side(url, browser):
    page = open_page(browser, url)
    assert "target" in page.inner_text("#sv-pair-status")
    choose(page, ["ar", "sd"])
    page.locator("#sv-prompt textarea").fill("def add(a, b):\n")
    # 12 tokens: each column's text shows them all, ar makes 12 steps to scrub and sd several; the page
    # draws each streamed update of an unpaced run, which is what this costs (a token of ar is a step)
    max_new = 12
    set_number(page, "sv-max-new", max_new)
    set_number(page, "sv-pace", 0)
    page.click("#sv-run")
    wait_status(page, "Done", 120_000)

    for i, name in enumerate(("ar", "sd")):
        assert name in page.inner_text(f"#sv-head-{i}")
        wait_plot_title(page, f"sv-tree-{i}", "step ")
        info = plot_info(page, f"sv-tree-{i}")
        assert info is not None and info["traces"] > 0 and "path" in info["metas"], info
        assert page.locator(f"#sv-text-{i} .sv-tok").count() >= max_new
        # the header and the tree name the same step
        head = page.inner_text(f"#sv-head-{i}")
        assert re.search(rf"step {tree_step(page, i)}\b", head), (head, tree_step(page, i))
    assert not page.locator("#sv-col-2").is_visible()
    assert unreadable(page, "sv-tree-0", "sv-tree-1") == {}  # two columns: each tree's title and legend whole
    rows = page.locator("#sv-table table.sv-table tbody tr")
    assert rows.count() == 2
    table = page.inner_text("#sv-table")
    assert "ar" in table and "sd" in table and "identical" in table
    assert "not comparable" in table  # two columns ran interleaved
    for fig in ("sv-per-step", "sv-cumulative", "sv-hist", "sv-time"):
        assert plot_info(page, fig)["traces"] > 0
    page.screenshot(path=str(ARTIFACTS / "e2e-run.png"), full_page=True)

    # scrub to step 1 with the slider's number box, then step with next / prev
    box = page.locator("#sv-step input[type=number]")
    box.fill("1")
    box.press("Enter")
    page.wait_for_function("document.querySelector('#sv-head-1').innerText.includes('step 1/')", timeout=30_000)
    wait_plot_title(page, "sv-tree-1", "step 1", exact=True)
    assert "step 1 of" in page.inner_text("#sv-step-label")
    # moved in the browser: the comparison markers (when the figure is in view) and each text's highlighted step
    page.locator("#sv-per-step").scroll_into_view_if_needed()
    page.wait_for_function(
        """() => { const el = document.querySelector('#sv-per-step .js-plotly-plot');
                                      return el && el.layout.shapes[0].x0 == 1; }""",
        timeout=10_000,
    )
    for i in range(2):
        assert page.locator(f"#sv-text-{i} .sv-step.sv-cur").get_attribute("data-step") == "1"
        assert (
            page.locator(f"#sv-text-{i} .sv-step.sv-future").count()
            == page.locator(f"#sv-text-{i} .sv-step").count() - 1
        )
    page.click("#sv-next")
    page.wait_for_function("document.querySelector('#sv-head-1').innerText.includes('step 2/')", timeout=30_000)
    page.click("#sv-prev")
    page.wait_for_function("document.querySelector('#sv-head-1').innerText.includes('step 1/')", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "e2e-step1.png"), full_page=True)

    # Measure: interleaved rounds, medians, what it ran under and the verdict in words (issue 34)
    page.click("#sv-measure-btn")
    page.wait_for_function("document.querySelector('#sv-measure').innerText.includes('Verdict.')", timeout=180_000)
    assert page.locator("#sv-measure table.sv-table tbody tr").count() == 2
    measured = page.inner_text("#sv-measure")
    assert re.search(r"Timed on \d+ torch threads?, cpu, float32; load average", measured), measured
    assert "On a GPU the same cost model predicts" in measured and "a prediction, not a measurement" in measured
    page.locator("#sv-measure").screenshot(path=str(ARTIFACTS / "e2e-measure.png"))
    # phone width: the trees stacked, narrower still, their titles and legends still whole and apart
    to_phone_width(page, "sv-tree-0", "sv-tree-1")
    assert unreadable(page, "sv-tree-0", "sv-tree-1") == {}
    # Measure's speed-up column in view at a phone's width (issue 35 point 8), not beyond the screen's edge
    page.locator("#sv-measure").scroll_into_view_if_needed()
    speedup = page.evaluate(
        "() => [...document.querySelectorAll('#sv-measure thead th')]"
        ".find(t => t.textContent.startsWith('speed-up')).getBoundingClientRect()"
    )
    assert 0 <= speedup["left"] and speedup["right"] <= 400, speedup
    # each row's name and its settings stay inside their cell (a no-wrap settings line ran into the next)
    spill = page.evaluate(
        "() => [...document.querySelectorAll('#sv-measure tbody th')]"
        ".filter(t => [...t.querySelectorAll('*')].some(e => e.getBoundingClientRect().right > "
        "t.getBoundingClientRect().right + 1)).map(t => t.innerText)"
    )
    assert spill == [], spill
    page.locator("#sv-measure").screenshot(path=str(ARTIFACTS / "e2e-measure-phone.png"))
    page.locator("#sv-tree-1").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-tree-phone.png"))
    assert not page.errors, page.errors
    page.close()


def controller_settings(url, browser):
    """``sd``'s settings show gamma and controller; choosing a Thompson-sampling controller shows its
    own settings (and only those) in gamma's place, choosing ``static`` again hides them."""
    page = open_page(browser, url)
    choose(page, ["sd"])
    page.get_by_text("sd settings", exact=True).click()
    param = lambda name: page.locator(f"#sv-param-sd-{name}")  # noqa: E731
    param("gamma").wait_for(state="visible", timeout=30_000)
    assert param("controller").is_visible() and not param("alpha0").is_visible() and not param("k_max").is_visible()
    param("controller").locator("input").click()
    page.get_by_role("option", name="beta_ts", exact=True).click()
    param("alpha0").wait_for(state="visible", timeout=30_000)
    assert param("beta0").is_visible() and param("beta_rule").is_visible() and param("k_max").is_visible()
    assert not param("sigma_m").is_visible() and not param("fixed_length").is_visible()
    assert not param("gamma").is_visible()  # the controller sets the draft length
    param("alpha0").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-settings.png"))
    param("controller").locator("input").click()
    page.get_by_role("option", name="static", exact=True).click()
    param("alpha0").wait_for(state="hidden", timeout=30_000)
    assert param("gamma").is_visible() and not param("k_max").is_visible()
    assert not page.errors, page.errors
    page.close()


def paced_live_run_and_stop(url, browser):
    """A paced run (the default pace) is watched: the tree shows at least three different steps while
    the run goes, Run is disabled meanwhile, the text follows the newest token; Stop then ends it in
    "stopped" with every column on its last step. (The page draws a step of four columns in seconds on
    a loaded machine: the app waits for it, ``app_server``'s SPECVIZ_PAGE_WAIT_S, so the page does not
    fall behind the run and every action here waits its turn behind a queue of steps.)"""
    page = open_page(browser, url)
    choose(page, ["ar", "sd", "mcsd", "specinfer"])
    set_number(page, "sv-max-new", 800)  # long enough that no column finishes before Stop
    assert float(page.locator("#sv-pace input[type=number]").input_value()) > 0  # paced by default
    page.click("#sv-run")
    seen: set[int] = set()
    followed = []
    for _ in range(600):  # at most about a minute of polling; ends as soon as three steps were seen
        k = tree_step(page, 0)
        if k is not None and "Running" in page.inner_text("#sv-status"):
            seen.add(k)
            followed.append(
                page.evaluate("""() => { const box = [...document.querySelectorAll('#sv-text-0 *')]
                .find(e => e.scrollHeight > e.clientHeight + 4 && getComputedStyle(e).overflowY !== 'visible');
                return box ? box.scrollHeight - box.scrollTop - box.clientHeight : 0; }""")
            )
        if len(seen) >= 3:
            break
        page.wait_for_timeout(100)
    assert len(seen) >= 3, seen
    assert page.locator("#sv-run").is_disabled()
    # the live columns in view, not the full page: a full-page shot re-lays the page out at its whole height
    # while every step redraws four columns (it took 30 to 100 s under load, a viewport shot 10 to 26 s)
    page.evaluate("document.querySelector('#sv-col-0').scrollIntoView()")
    page.screenshot(path=str(ARTIFACTS / "e2e-live.png"))
    page.click("#sv-stop")
    wait_status(page, "Stopped", 60_000)
    assert page.locator("#sv-run").is_enabled()
    assert min(followed[-3:]) < 40, followed  # the text box is scrolled to its newest tokens
    for i in range(4):
        head = page.inner_text(f"#sv-head-{i}")
        shown, calls = re.search(r"step (\d+)", head), re.search(r"in (\d+) calls", head)
        assert shown and calls and shown.group(1) == calls.group(1) and "(stopped)" in head, head
        wait_plot_title(page, f"sv-tree-{i}", f"step {shown.group(1)}", exact=True)
    page.screenshot(path=str(ARTIFACTS / "e2e-stopped.png"), full_page=True)
    assert not page.errors, page.errors
    page.close()


def bad_inputs(url, browser):
    """A seed beyond 2^63 - 1 and a negative top-k: messages in the page, no generic error. 2^63 - 1
    itself is a valid seed (the page sends the seed box's text: a number box sent 9223372036854776000)."""
    page = open_page(browser, url)
    set_number(page, "sv-seed", "1e30")
    page.wait_for_function("document.querySelector('#sv-input-msg').innerText.includes('seed must be')", timeout=30_000)
    set_number(page, "sv-seed", "9223372036854775807")
    page.wait_for_function(
        "!document.querySelector('#sv-input-msg').innerText.includes('seed must be')", timeout=30_000
    )
    set_number(page, "sv-seed", "9223372036854775808")
    page.wait_for_function("document.querySelector('#sv-input-msg').innerText.includes('seed must be')", timeout=30_000)
    set_number(page, "sv-top-k", -1)
    page.wait_for_function(
        "document.querySelector('#sv-input-msg').innerText.includes('top-k must be')", timeout=30_000
    )
    page.click("#sv-run")
    wait_status(page, "seed must be", 30_000)
    status = page.inner_text("#sv-status")
    assert "top-k must be" in status and "Error" not in status
    page.screenshot(path=str(ARTIFACTS / "e2e-bad-inputs.png"), full_page=True)
    page.close()


def phone_width(url, browser):
    """At 400 px the settings sidebar starts closed and the comparison figures stack."""
    page = open_page(browser, url, width=400, height=850)
    page.wait_for_function("!document.querySelector('#sv-sidebar.open')", timeout=15_000)
    # nothing covers the page once the sidebar has slid away: it ends wholly left of the screen
    page.wait_for_function("document.querySelector('#sv-sidebar').getBoundingClientRect().right <= 1", timeout=15_000)
    assert page.locator("#sv-run").is_visible()
    a = page.locator("#sv-per-step").bounding_box()
    b = page.locator("#sv-cumulative").bounding_box()
    assert b["y"] >= a["y"] + a["height"] - 1 and a["width"] <= 400, (a, b)
    page.screenshot(path=str(ARTIFACTS / "e2e-mobile.png"), full_page=False)
    page.close()


def replay(url, browser, target, draft, tmp_path):
    pair = specviz.load_pair(target, draft)
    good = tmp_path / "sd-trace.json"
    good.write_text(
        specviz.decode(pair, "sd", prompt="for i in range(", max_new_tokens=12, seed=1, temperature=1.0).to_json()
    )
    bad = tmp_path / "broken.json"
    bad.write_text('{"schema_version": 1, "steps": [')
    page = open_page(browser, url)
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(bad))
    page.wait_for_function(
        "document.querySelector('#sv-status').innerText.includes('Could not replay')", timeout=30_000
    )
    assert "Not valid JSON" in page.inner_text("#sv-status")
    page.reload()
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(good))
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Replaying 1')", timeout=30_000)
    wait_plot_title(page, "sv-tree-0", "step 1", exact=True)
    assert "sd" in page.inner_text("#sv-head-0")
    assert page.locator("#sv-seed input, #sv-seed textarea").first.input_value() == "1"  # the trace's settings
    page.screenshot(path=str(ARTIFACTS / "e2e-replay.png"), full_page=True)
    # a controller kind with no view and nothing to plot: the generic view says the state in words, on
    # lines that one column and a phone's column show whole (a message sits on its empty plot area:
    # plot_clipped, not plot_overlaps)
    trace = specviz.RunTrace.from_json(good.read_text())
    for i, s in enumerate(trace.steps):
        s.controller = specviz.step_state.UnknownState(
            {"kind": "notes", "step": f"step {i + 1}", "note": " ".join(["a note the controller left"] * 8)}
        )
    notes = tmp_path / "notes-trace.json"
    notes.write_text(trace.to_json())
    page.reload()
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(notes))
    wait_plot_title(page, "sv-ctrl-0", "Controller: notes", exact=True)
    assert plot_clipped(page, "sv-ctrl-0") == []
    to_phone_width(page, "sv-ctrl-0")
    page.locator("#sv-ctrl-0").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-generic-phone.png"))
    assert plot_clipped(page, "sv-ctrl-0") == []
    assert not page.errors, page.errors
    page.close()


def check_bundled_pair(url):
    """`python app.py` with the presets narrowed to it serves the bundled pair."""
    with urllib.request.urlopen(url + "config", timeout=10) as r:
        config = json.loads(r.read())
    status = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "sv-pair-status"][0]
    text = status["props"]["value"]
    assert re.search(r"assets/target", text) and "assets/draft" in text, text
