"""Columns are configurations, in a browser (issue #22 point 5): duplicate a column, change the copy's gamma,
run, and see two labelled sd columns, each in its own colour, in the headers, the table and the figures;
then at a phone's width. Screenshots go to a temporary directory (and test-artifacts/)."""

from __future__ import annotations

import shutil

import pytest
from e2e_support import (
    ARTIFACTS,
    at_width,
    choose,
    misplaced,
    open_page,
    plot_info,
    set_number,
    to_phone_width,
    unreadable,
    wait_plot_title,
    wait_status,
)

import specviz

pytestmark = pytest.mark.e2e

PICK = "#sv-col-pick"
G = specviz.ALGORITHMS["sd"].defaults["gamma"]  # the default column's gamma (the copy is set to 2)
SERVING = ("sv-positions", "sv-race", "sv-latency")  # the serving metrics and the draft-length race


def pick_labels(page) -> list[str]:
    return page.locator(f"{PICK} label").all_inner_texts()


def test_duplicate_a_column_change_its_gamma_and_run_both(app_server, browser, tmp_path):
    url, _, _ = app_server
    page = open_page(browser, url, width=1600)
    choose(page, ["sd"])
    page.wait_for_function("id => document.querySelectorAll(id + ' label').length === 1", arg=PICK, timeout=120_000)
    # the settings open before the duplicate: Gradio mounts a closed group's controls when it first opens and
    # then applies the values sent to them while closed (choose's, the same 3) once the page settles; a value
    # typed in between (a test types within milliseconds of the open) was overwritten with the old one, so
    # the copy kept its gamma. The duplicate's round trip comes after that settle.
    page.get_by_text("sd settings", exact=True).click()
    page.locator("#sv-param-sd-gamma").wait_for(state="visible", timeout=120_000)
    page.click("#sv-col-dup")
    page.wait_for_function("id => document.querySelectorAll(id + ' label').length === 2", arg=PICK, timeout=120_000)
    assert [t.strip() for t in pick_labels(page)] == ["1 · sd #1", "2 · sd #2"]  # nothing tells them apart yet
    assert page.locator(f"{PICK} input[type=radio]").nth(1).is_checked()  # the copy is picked
    set_number(page, "sv-param-sd-gamma", 2)
    page.wait_for_function(
        "id => document.querySelector(id).innerText.includes('sd · gamma 2')", arg=PICK, timeout=120_000
    )
    assert [t.strip() for t in pick_labels(page)] == [f"1 · sd · gamma {G}", "2 · sd · gamma 2"]
    # picking the first column shows its own gamma in the shared controls
    page.locator(f"{PICK} label").nth(0).click()
    page.wait_for_function(
        "() => document.querySelector('#sv-param-sd-gamma input[type=number]').value === '" + str(G) + "'",
        timeout=120_000,
    )
    page.locator(f"{PICK} label").nth(1).click()
    page.wait_for_function(
        "() => document.querySelector('#sv-param-sd-gamma input[type=number]').value === '2'", timeout=120_000
    )

    page.locator("#sv-prompt textarea").fill("def add(a, b):\n")
    set_number(page, "sv-max-new", 8)  # a few steps of each sd column: every figure below has its two entries
    set_number(page, "sv-pace", 0)
    page.click("#sv-run")
    wait_status(page, "Done")
    heads = [page.inner_text(f"#sv-head-{i}") for i in range(2)]
    assert f"sd · gamma {G}" in heads[0] and f"gamma={G}" in heads[0], heads
    assert "sd · gamma 2" in heads[1] and "gamma=2" in heads[1], heads
    assert not page.locator("#sv-col-2").is_visible()
    chips = page.evaluate(
        "() => [0, 1].map(i => getComputedStyle(document.querySelector('#sv-head-' + i + ' .sv-chip')).backgroundColor)"
    )
    assert chips[0] != chips[1], chips
    rows = page.locator("#sv-table table.sv-table tbody tr")
    assert rows.count() == 2
    table = page.inner_text("#sv-table")
    assert f"sd · gamma {G}" in table and "sd · gamma 2" in table
    for i in range(2):
        wait_plot_title(page, f"sv-tree-{i}", "step ")
    legend = page.evaluate("""() => document.querySelector('#sv-per-step .js-plotly-plot').data
                                   .filter(t => String(t.name).startsWith('sd')).map(t => [t.name, t.line.color])""")
    assert [name for name, _ in legend] == [f"sd · gamma {G}", "sd · gamma 2"], legend
    assert legend[0][1] != legend[1][1]
    assert plot_info(page, "sv-cumulative")["traces"] > 0
    race = page.evaluate("""() => document.querySelector('#sv-race .js-plotly-plot').data
                                 .filter(t => t.showlegend !== false).map(t => t.name)""")
    assert race == [f"sd · gamma {G}", "sd · gamma 2"], race
    assert all(plot_info(page, f)["traces"] > 0 for f in SERVING)
    assert unreadable(page, *SERVING) == {}
    assert misplaced(page) == []
    shots = tmp_path / "shots"
    shots.mkdir()
    page.screenshot(path=str(shots / "columns-1600.png"), full_page=True)
    page.locator("#sv-positions").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "columns-1600-serving.png"))
    at_width(page, 1600)
    page.locator("#sv-col-pick").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "columns-1600-sidebar.png"))
    to_phone_width(page, "sv-tree-0", "sv-tree-1", *SERVING)
    assert unreadable(page, *SERVING) == {}
    assert misplaced(page) == []
    page.screenshot(path=str(shots / "columns-400.png"), full_page=True)
    page.locator("#sv-positions").scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "columns-400-serving.png"), full_page=False)
    page.click("#sv-sidebar .toggle-button")  # the sidebar over the page, its column editor in view
    page.wait_for_function("document.querySelector('#sv-sidebar').getBoundingClientRect().right >= 300", timeout=15_000)
    page.locator("#sv-col-dup").scroll_into_view_if_needed()
    # the sidebar has finished sliding in (its CSS transition), instead of a fixed half-second sleep
    page.wait_for_function("document.getAnimations().every(a => a.playState !== 'running')", timeout=15_000)
    page.screenshot(path=str(shots / "columns-400-sidebar.png"))
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in shots.iterdir():
        shutil.copy(shot, ARTIFACTS / f"e2e-{shot.name}")
    assert not page.errors, page.errors
    page.close()


def test_replaying_two_sd_traces_gives_two_columns_and_sets_the_editor(app_server, browser, tmp_path):
    url, (target, draft), _ = app_server
    pair = specviz.load_pair(target, draft)
    files = []
    for gamma in (2, 8):
        path = tmp_path / f"sd-{gamma}.json"
        path.write_text(
            specviz.decode(
                pair, "sd", prompt="for i in range(", max_new_tokens=8, seed=1, gamma=gamma, temperature=1.0
            ).to_json()
        )
        files.append(str(path))
    page = open_page(browser, url, width=1600)
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", files)
    wait_status(page, "Replaying 2", 60_000)
    assert "sd · gamma 2" in page.inner_text("#sv-head-0") and "sd · gamma 8" in page.inner_text("#sv-head-1")
    page.wait_for_function(
        "id => document.querySelector(id).innerText.includes('sd · gamma 8')", arg=PICK, timeout=120_000
    )
    assert [t.strip() for t in pick_labels(page)] == ["1 · sd · gamma 2", "2 · sd · gamma 8"]
    assert page.locator("#sv-table table.sv-table tbody tr").count() == 2
    assert not page.errors, page.errors
    page.close()
