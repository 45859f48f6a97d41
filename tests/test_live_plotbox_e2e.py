"""End to end: a live run's trees are drawn on elements that stay (issue 34; ``ui.plotbox``). Two
columns on the bundled pair, paced so every step is drawn: the element each tree is first drawn on is
the one it shows at the end (Gradio's ``gr.Plot`` threw it away on every update), that element shows
the run's last step, as a full redraw would; a scrub redraws the same element at the chosen step; a
click on a node opens its distribution view, its p bars and the rest of p's mass summing to one; a tree's
title and legend are HTML above its plot, a legend entry hides its nodes across steps. Screenshot
``e2e-live-plotbox.png``. Skipped without chromium (failed under CI / SPECVIZ_REQUIRE_E2E)."""

from __future__ import annotations

import pytest
from e2e_support import ARTIFACTS, choose, open_page, set_number, tree_step, wait_status

pytestmark = pytest.mark.e2e

# marks each tree's Plotly element the first time one is drawn; "kept" says whether it is still that one
MARK_JS = """() => { window.__svFirst = window.__svFirst || {};
  for (const i of [0, 1]) { const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');
    if (el && el.data && !window.__svFirst[i]) { el.__svMark = 'first-' + i; window.__svFirst[i] = el; } }
  return Object.keys(window.__svFirst).length; }"""
KEPT_JS = """i => { const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');
  return !!el && el === window.__svFirst[i] && el.__svMark === 'first-' + i; }"""


# the HTML top of tree i: its lines, its legend's entries, the figure's legend names, Plotly's own title/legend
TOP_JS = """i => { const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');
  const top = document.querySelector('#sv-tree-' + i + ' .sv-plottop');
  return {lines: [...top.querySelectorAll('.sv-pt-title, .sv-pt-sub')].map(e => e.textContent),
          legend: [...top.querySelectorAll('.sv-pt-item')].map(e => e.textContent),
          names: el.data.filter(t => t.showlegend !== false && t.name).map(t => t.name),
          svg_titles: el.querySelectorAll('.g-gtitle text, .infolayer .legend').length}; }"""
# whether tree i's traces of ``meta`` are hidden (Plotly's legendonly) and drawn without points
HIDDEN_JS = """([i, meta]) => { const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');
  const t = el.data.filter(t => t.meta === meta);
  return t.length > 0 && t.every(t => t.visible === 'legendonly'); }"""


def test_live_trees_are_redrawn_on_the_element_they_were_first_drawn_on(app_server, browser):
    url, _, _ = app_server
    page = open_page(browser, url, width=1500)
    choose(page, ["sd", "specinfer"])
    page.locator("#sv-prompt textarea").fill("def add(a, b):\n")
    set_number(page, "sv-max-new", 24)
    set_number(page, "sv-pace", 0.3)
    page.click("#sv-run")
    page.wait_for_function(f"({MARK_JS})() === 2", polling=50, timeout=180_000)  # both drawn, early in the run
    first = [tree_step(page, i) for i in (0, 1)]
    wait_status(page, "Done")
    n = [int(page.locator(f"#sv-head-{i} .sv-stepinfo b").first.inner_text()) for i in (0, 1)]
    assert all(page.evaluate(KEPT_JS, i) for i in (0, 1))
    # each drawn at its box's width as the browser laid the box out (autosize off: no read of the page's
    # layout in the middle of a step's draws), the figure as wide as its box
    sizes = page.evaluate("""() => [0, 1].map(i => {
        const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');
        return [el.layout.autosize, el.layout.width, el.getBoundingClientRect().width,
                el.querySelector('svg.main-svg').getBoundingClientRect().width]; })""")
    assert all(a is False and abs(w - box) <= 1 and abs(svg - box) <= 1 for a, w, box, svg in sizes), sizes
    # after a run each column opens on its most informative step (its header says which): the tree shows it
    for i in (0, 1):
        assert tree_step(page, i) == n[i], (i, n)
    assert first != [tree_step(page, i) for i in (0, 1)] or max(n) > 1  # it did move on the one element
    # the comparison figures are PlotBoxes too: drawn at the end of the run, each with its traces
    page.wait_for_function(
        """() => ['sv-per-step', 'sv-cumulative', 'sv-hist', 'sv-latency'].every(id => {
        const el = document.querySelector('#' + id + ' .js-plotly-plot');
        return !!(el && el.data && el.data.length); })""",
        timeout=60_000,
    )
    # a scrub: the same elements, at the chosen step
    box = page.locator("#sv-step input[type=number]")
    box.fill("2")
    box.press("Enter")
    page.wait_for_function(
        "() => [0, 1].every(i => { const el = document.querySelector('#sv-tree-' + i + "
        "' .js-plotly-plot'); return el && el.layout.meta.title === 'step 2'; })",
        timeout=60_000,
    )
    assert all(page.evaluate(KEPT_JS, i) for i in (0, 1))
    # a tree's title, subtitle and legend are the PlotBox's HTML above its plot, not Plotly's: the figure's
    # own words, its legend's entries with their counts; a click on an entry hides its nodes, and they
    # stay hidden when the tree is drawn at another step
    top = page.evaluate(TOP_JS, 1)
    assert top["lines"][0] == "step 2" and top["lines"][1].startswith("drafted "), top
    assert top["legend"] == top["names"] and "committed path" in top["legend"] and len(top["legend"]) >= 2, top
    assert not top["svg_titles"], top  # Plotly drew no title or legend of its own
    page.locator("#sv-tree-1 .sv-pt-item[data-key=not_reached]").click()
    page.wait_for_function(HIDDEN_JS, arg=[1, "not_reached"], timeout=30_000)
    for k in ("1", "2"):  # away and back: the tree drawn anew twice
        box.fill(k)
        box.press("Enter")
        page.wait_for_function(
            "k => document.querySelector('#sv-tree-1 .js-plotly-plot').layout.meta.title === 'step ' + k",
            arg=k,
            timeout=60_000,
        )
    assert page.evaluate(HIDDEN_JS, [1, "not_reached"])
    assert page.locator("#sv-tree-1 .sv-pt-item[data-key=not_reached].sv-pt-off").count() == 1
    # the toolbar's download: a PNG of the tree with its title and legend in the picture, as shown
    page.locator("#sv-tree-1").hover()
    with page.expect_download() as got:
        page.locator("#sv-tree-1 .modebar-btn[data-title='Download plot as a png']").click(force=True)
    png = got.value.path().read_bytes()
    assert got.value.suggested_filename == "specviz.png" and png.startswith(b"\x89PNG"), got.value.suggested_filename
    # the page's own step script (STEP_JS) moves the comparison's step marker on its element; a figure out
    # of view keeps its marker until it comes into view (the download above left the tree in view)
    page.locator("#sv-per-step").scroll_into_view_if_needed()
    page.wait_for_function(
        """() => { const el = document.querySelector('#sv-per-step .js-plotly-plot');
        return !!(el && el.layout.shapes && el.layout.shapes.length && el.layout.shapes[0].x0 === 2); }""",
        timeout=60_000,
    )
    # and the cumulative figure's marker of each column to its line's point there
    page.locator("#sv-cumulative").scroll_into_view_if_needed()
    marks_js = """() => { const el = document.querySelector('#sv-cumulative .js-plotly-plot');
        const at = (line) => line.x[Math.min(2, line.x.length - 1)];
        return el.data.map((t, i) => t.meta === 'current' && i > 0 ? [t.x[0], at(el.data[i - 1])] : null)
          .filter(Boolean); }"""
    page.wait_for_function(f"() => {{ const m = ({marks_js})(); return m.length && m.every(([a, b]) => a === b); }}")
    marks = page.evaluate(marks_js)
    assert marks and all(a == b for a, b in marks), marks
    # a click on a drafted node opens its distribution, with one bar for the rest of the mass
    page.locator("#sv-tree-1").scroll_into_view_if_needed()
    xy = page.evaluate("""() => { const el = document.querySelector('#sv-tree-1 .js-plotly-plot');
        const traces = el.querySelectorAll('.scatterlayer .trace');
        for (let t = 0; t < el.data.length; t++) if (['accepted', 'rejected'].includes(el.data[t].meta)) {
          const r = traces[t].querySelector('.points path').getBoundingClientRect();
          return [r.x + r.width / 2, r.y + r.height / 2]; }
        return null; }""")
    assert xy is not None
    page.mouse.click(*xy)
    page.wait_for_function(
        """() => { const el = document.querySelector('#sv-dist-1 .js-plotly-plot');
        return !!(el && el.data && el.data.some(t => t.type === 'bar')); }""",
        timeout=60_000,
    )
    # p's bars and its rest (drawn where the recorded tokens leave more than a trace of mass) hold all of p
    p, rest, ticks = page.evaluate("""() => { const el = document.querySelector('#sv-dist-1 .js-plotly-plot');
        const sum = (meta) => el.data.filter(t => t.meta === meta).flatMap(t => t.y).reduce((a, b) => a + b, 0);
        return [sum('p'), sum('p_rest'), el.layout.xaxis.ticktext]; }""")
    assert p + rest == pytest.approx(1.0, abs=2e-4)
    assert (ticks[-1] == "the rest") == (rest > 0)
    assert not page.locator(".sv-plotnote").count()  # no figure said it could not be drawn
    assert not page.errors, page.errors
    page.locator("#sv-dist-1").scroll_into_view_if_needed()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e-live-plotbox.png"))
    page.close()
