"""The app's Papers view (issue 38 point 2): the shipped report's rows, a table and a figure per paper,
no model needed; a missing or broken report is a sentence, not a dead page."""

from __future__ import annotations

import json

import pytest

from specviz.ui import papers_view
from specviz.viz.papers import claims_figure

ROW = {
    "paper": "P",
    "claim": "a <b> claim",
    "source": "Table 1",
    "paper_value": "1.5x",
    "paper_setting": "GPU",
    "setting": "CPU",
    "value": 1.2,
    "spread": 0.1,
    "spread_kind": "s.e.",
    "measured": "1.2 ± 0.1x",
    "difference": "smaller",
    "verdict": "holds at small scale",
    "extra": {"paper": 1.5},
}


def test_shipped_report_loads_with_every_paper():
    report, note = papers_view.load_report()
    assert report is not None and "python -m specviz papers" in note
    assert len({r["paper"] for r in report["rows"]}) == 5


@pytest.mark.parametrize("text", [None, "{", '{"rows": []}', '{"no": 1}'])
def test_missing_or_broken_report_is_a_sentence(tmp_path, text):
    path = tmp_path / "papers.json"
    if text is not None:
        path.write_text(text)
    report, note = papers_view.load_report(path)
    assert report is None and note.startswith("No papers report in this install")


def test_table_escapes_and_figure_shows_both_numbers():
    html = papers_view.table_html([ROW])
    assert "a &lt;b&gt; claim" in html and "holds at small scale" in html and "1.5x" in html
    fig = claims_figure([ROW, {**ROW, "spread": None, "extra": {}}])
    names = [t.name for t in fig.data]
    assert names.count("specviz") == 2 and names.count("paper") == 1
    assert fig.data[0].error_x.array == (0.1,) and fig.data[1].x == (1.5,)
    json.dumps(fig.to_plotly_json(), default=str)  # a figure Gradio can send


@pytest.mark.e2e
def test_papers_view_in_a_browser(app_server, browser):
    from e2e_support import ARTIFACTS, misplaced, open_page

    url, _, _ = app_server
    page = open_page(browser, url)
    page.locator("#sv-papers").get_by_text("Papers: each paper's claims against specviz").click()
    page.wait_for_selector("#sv-papers .sv-papers-table table", timeout=120_000)
    page.wait_for_function("document.querySelectorAll('#sv-papers .js-plotly-plot').length >= 5", timeout=120_000)
    assert page.locator("#sv-papers h3").count() == 5
    assert page.locator("#sv-papers .sv-papers-table tbody tr").count() >= 20
    page.locator("#sv-papers").scroll_into_view_if_needed()
    assert misplaced(page) == []  # every figure laid out for its box
    # what fits the window, as a person sees it: a screenshot taller than the window (full page, or the
    # whole view) drew every figure's strips cut at the right, though each was laid out for its box
    page.screenshot(path=str(ARTIFACTS / "papers_view.png"))
    plots = page.locator("#sv-papers .js-plotly-plot")
    for i in range(plots.count()):
        plots.nth(i).scroll_into_view_if_needed()
        plots.nth(i).screenshot(path=str(ARTIFACTS / f"papers_view_figure_{i + 1}.png"))
    assert not page.errors
