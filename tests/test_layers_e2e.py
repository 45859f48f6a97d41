"""The layer view (issue 38 point 3) in a browser: after an ``eesd`` run on the bundled pair, the Layers
accordion draws the step on screen: a heatmap of the target's layers with the exit layer framed, its
title, legend and axes clear of each other, and the narrative saying what the exit layer's agreement
means for drafting; at phone width too."""

from __future__ import annotations

import pytest
from e2e_support import (
    ARTIFACTS,
    HAVE_BUNDLED,
    REQUIRED,
    open_page,
    plot_info,
    run_unpaced,
    to_phone_width,
    unreadable,
    wait_plot_title,
)

pytestmark = pytest.mark.e2e


@pytest.mark.skipif(
    not HAVE_BUNDLED and not REQUIRED, reason="needs the bundled pair's early-exit head (required in CI)"
)
def test_the_layer_view_of_an_eesd_step_in_the_browser(app_server, browser):
    url, _, _ = app_server
    page = open_page(browser, url, width=1400)
    run_unpaced(page, ["eesd"], "def add(a, b):\n", 12)
    box = page.locator("#sv-step input[type=number]")
    box.fill("2")
    box.press("Enter")
    page.locator("#sv-layers").get_by_text("Layers: what each layer of the target predicts").click()
    page.click("#sv-layers-btn")
    wait_plot_title(page, "sv-layers-plot", "Layers · step 2")
    info = plot_info(page, "sv-layers-plot")
    assert info["traces"] >= 3  # the heatmap, the agreement line, the exit layer's legend entry
    shapes = page.evaluate("() => document.querySelector('#sv-layers-plot .js-plotly-plot').layout.shapes.length")
    assert shapes == 1  # the exit layer's row framed
    words = page.locator("#sv-layers-words").inner_text()
    assert "exit layer 2" in words and "logit lens" in words
    assert unreadable(page, "sv-layers-plot") == {}
    page.locator("#sv-layers").scroll_into_view_if_needed()
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#sv-layers").screenshot(path=str(ARTIFACTS / "e2e-layers.png"))
    to_phone_width(page, "sv-layers-plot")
    assert unreadable(page, "sv-layers-plot") == {}
    page.locator("#sv-layers").screenshot(path=str(ARTIFACTS / "e2e-layers-phone.png"))
    assert not page.errors
