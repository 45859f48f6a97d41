"""End to end: a ``dsbd`` run in the app (``python app.py`` driven by chromium, as in
``test_e2e_app.py``) shows a beam forest with more than one root, the beam-width view and the
beams' texts. Skipped without chromium (failed under CI / SPECVIZ_REQUIRE_E2E)."""
from __future__ import annotations

import pytest
from test_e2e_app import (ARTIFACTS, app_server, browser, choose, open_page, set_number,  # noqa: F401
                          wait_plot_title, wait_status)


pytestmark = pytest.mark.e2e

ROOTS_JS = """id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                      if (!el || !el.data) return -1;
                      return el.data.filter(t => t.marker && t.marker.symbol === 'square').length; }"""


def test_dsbd_forest_and_widths_in_the_browser(app_server, browser):  # noqa: F811
    url, _, _ = app_server
    page = open_page(browser, url, height=1100)
    choose(page, ["dsbd"])
    page.locator("#sv-prompt textarea").fill("def add(a, b):\n")
    set_number(page, "sv-max-new", 24)
    page.click("#sv-run")
    wait_status(page, "Done")
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
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "e2e-dsbd.png"), full_page=True)
    assert not page.errors, page.errors
    page.close()
