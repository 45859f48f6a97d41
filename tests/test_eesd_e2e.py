"""``eesd`` in the app, in a browser: run it on the bundled pair and see the Thompson-sampling
posterior and the drafted-vs-accepted panel follow the selected step; greedy it has no theory panel,
sampled next to ``sd`` both columns have one whose titles, legends and axes do not overlap."""
from __future__ import annotations

import pytest
from test_e2e_app import (ARGS, ARTIFACTS, CHROMIUM, HAVE_BUNDLED, REQUIRED, choose, open_page, plot_info,
                          plot_overlaps, set_number, start_app, stop, wait_plot_title, wait_status)


pytestmark = pytest.mark.e2e


@pytest.mark.skipif((CHROMIUM is None or not HAVE_BUNDLED) and not REQUIRED,
                    reason="needs chromium and the bundled pair (required in CI)")
def test_eesd_posterior_updates_between_steps_in_the_browser(tmp_path):
    from playwright.sync_api import sync_playwright

    proc, url, _ = start_app(tmp_path)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = open_page(browser, url, width=1400)
            choose(page, ["eesd"])
            page.locator("#sv-prompt textarea").fill("def add(a, b):\n")
            set_number(page, "sv-max-new", 24)
            page.click("#sv-run")
            wait_status(page, "Done")
            box = page.locator("#sv-step input[type=number]")
            box.fill("1")
            box.press("Enter")
            wait_plot_title(page, "sv-ctrl-0", "Thompson sampling · round 1 ")
            assert plot_info(page, "sv-lengths-0")["traces"] >= 2
            page.click("#sv-next")
            wait_plot_title(page, "sv-ctrl-0", "Thompson sampling · round 2 ")
            info = plot_info(page, "sv-ctrl-0")
            assert info["traces"] > 3  # the round's density, the earlier round faded, its thetas, alpha/beta
            assert not page.locator("#sv-theory-0").is_visible()  # greedy: every TV is 0 or 1, nothing to show
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "e2e-eesd.png"), full_page=True)
            # sampled, next to sd: each column's theory panel, nothing in it covering anything else
            choose(page, ["sd", "eesd"])
            set_number(page, "sv-temperature", 0.8)
            set_number(page, "sv-pace", 0)
            page.click("#sv-run")
            wait_status(page, "Done")
            for i in range(2):
                page.wait_for_function("""id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                                                  return !!(el && el.data && el.data.length); }""",
                                       arg=f"sv-theory-{i}", timeout=30_000)
                assert plot_overlaps(page, f"sv-theory-{i}") == [], i
            page.locator("#sv-theory-1").scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "e2e-eesd-sampled.png"), full_page=True)
            browser.close()
    finally:
        stop(proc)
