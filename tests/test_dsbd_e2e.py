"""End to end: a ``dsbd`` run in the app (``python app.py`` driven by chromium, as in
``test_e2e_app.py``) shows a beam forest with more than one root, the beam-width view and the
beams' texts, each column's story and a clicked forest node's view; the forest and the widths show
their whole title and legend, clear of each other, in one column, in two (``beam`` next to ``dsbd``)
and at phone width. Skipped without chromium (failed
under CI / SPECVIZ_REQUIRE_E2E)."""

from __future__ import annotations

import pytest
from e2e_support import (
    ARTIFACTS,
    at_width,
    choose,
    misplaced,
    open_page,
    run_unpaced,
    to_phone_width,
    unreadable,
    wait_plot_title,
    wait_status,
)

pytestmark = pytest.mark.e2e

ROOTS_JS = """id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                      if (!el || !el.data) return -1;
                      return el.data.filter(t => t.marker && t.marker.symbol === 'square').length; }"""

# a click on the first drafted node of the forest, as Plotly reports it (the page's own handler runs)
CLICK_JS = """id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                      const t = el.data.find(t => ['accepted', 'rejected'].includes(t.meta));
                      el.emit('plotly_click', {points: [{data: t, customdata: t.customdata[0]}]}); }"""


def test_dsbd_forest_and_widths_in_the_browser(app_server, browser):
    url, _, _ = app_server
    page = open_page(browser, url, height=1100)
    # watched step by step below (pacing is test_e2e_app's); 12 tokens are 5 steps of dsbd, the first ones
    # already a forest of 4 beams, and 12 steps of beam in the two-column run below
    run_unpaced(page, ["dsbd"], "def add(a, b):\n", 12)
    wait_plot_title(page, "sv-tree-0", "Beam forest")
    head = page.inner_text("#sv-head-0")
    n_steps = int(head.split("/")[1].split()[0])
    box = page.locator("#sv-step input[type=number]")
    roots = 0
    for k in range(2, n_steps + 1):
        box.fill(str(k))
        box.press("Enter")
        wait_plot_title(page, "sv-tree-0", f"Beam forest · step {k}")
        roots = page.evaluate(ROOTS_JS, "sv-tree-0")
        if roots > 1:
            break
    assert roots > 1, "no step of the dsbd run had a forest of several beams"
    wait_plot_title(page, "sv-ctrl-0", f"Beam widths · step {k}")
    assert page.locator("#sv-beams-0 table tr").count() >= 2
    assert unreadable(page, "sv-tree-0", "sv-ctrl-0") == {}  # one column
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e-dsbd.png"), full_page=True)
    # two columns, beam next to dsbd, on the same step: each forest and widths figure half as wide
    choose(page, ["beam", "dsbd"])
    page.click("#sv-run")
    page.wait_for_function(
        """() => [0, 1].every(i => / tokens in \\d+ calls/.test(
                                  (document.querySelector('#sv-head-' + i) || {}).innerText || ''))""",
        timeout=180_000,
    )  # both columns finished (the first run had one)
    wait_status(page, "Done")
    heads = [page.inner_text(f"#sv-head-{i}").splitlines() for i in range(2)]
    dsbd = next((i for i in range(2) if "dsbd" in heads[i]), None)
    assert dsbd is not None, heads
    for step in (1, k):  # the box still holds k from the first run: 1 first, so that k is a change
        box.fill(str(step))
        box.press("Enter")
        wait_plot_title(page, f"sv-ctrl-{dsbd}", f"Beam widths · step {step}", exact=True)
    figs = ["sv-tree-0", "sv-tree-1", f"sv-ctrl-{dsbd}"]
    wait_plot_title(page, f"sv-tree-{dsbd}", f"Beam forest · step {k}", exact=True)
    wait_plot_title(page, f"sv-ctrl-{dsbd}", f"Beam widths · step {k}", exact=True)
    assert not page.locator(f"#sv-ctrl-{1 - dsbd}").is_visible()  # plain beam verifies no layer: no widths
    assert page.locator("#sv-tree-1").bounding_box()["width"] < 800
    # each column tells its steps; a click on a dsbd forest node opens its distribution and its story
    for i in range(2):
        assert "Bought +" in page.inner_text(f"#sv-story-{i}")
    page.evaluate(CLICK_JS, f"sv-tree-{dsbd}")
    page.wait_for_selector(f"#sv-dist-{dsbd} .js-plotly-plot", timeout=60_000)
    page.wait_for_function(
        "i => document.querySelector('#sv-story-' + i).innerText.startsWith('Selected: node')", arg=dsbd, timeout=60_000
    )
    page.locator(f"#sv-story-{dsbd}").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-dsbd-node-story.png"))
    for name in ("tree", "ctrl"):
        page.locator(f"#sv-{name}-{dsbd}").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"e2e-dsbd-two-columns-{name}.png"))
    assert unreadable(page, *figs) == {}
    # phone width: the columns stacked, the figures narrower still
    to_phone_width(page, *figs)
    for name in ("tree", "ctrl"):
        page.locator(f"#sv-{name}-{dsbd}").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / f"e2e-dsbd-phone-{name}.png"))
    assert unreadable(page, *figs) == {}
    # a wide screen, a laptop's (the sidebar open) and a phone's: nothing reaches past its column (the
    # beam tables did at 400 px), every figure laid out for its box's width, no toolbar over a title,
    # every figure's text whole and apart, the comparison figures' too (issue #23 point 4)
    for width in (1600, 1000, 400):
        at_width(page, width)
        assert misplaced(page) == [], width
        assert unreadable(page, *figs, "sv-per-step", "sv-cumulative", "sv-hist", "sv-time") == {}, width
        page.screenshot(path=str(ARTIFACTS / f"e2e-dsbd-{width}px.png"), full_page=True)
    assert not page.errors, page.errors
    page.close()
