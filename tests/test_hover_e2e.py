"""End to end: a tree node's hover box stays whole on screen (issue 35 point 8). Three columns at
1600 px (each tree about 360 px wide) and the page's four: the mouse on the right-most node of each
column's tree, the box Plotly draws is inside that figure (a figure cuts off what is drawn past its
edges) and inside the window. Its lines are kept short by ``viz.style.wrap_markup``; ``test_viz`` checks
the line lengths without a browser. The box's words are the node's hover text, sent packed as its facts
(``viz.parts.hover_pack``) and put back by the page. Skipped without chromium (failed under CI /
SPECVIZ_REQUIRE_E2E)."""

from __future__ import annotations

import pytest
from e2e_support import ARTIFACTS, open_page, run_unpaced

pytestmark = pytest.mark.e2e

POINTS_JS = """id => [...document.querySelectorAll('#' + id + ' .scatterlayer .points path')]
    .map(p => p.getBoundingClientRect()).filter(r => r.width > 0)
    .map(r => [r.left + r.width / 2, r.top + r.height / 2])"""
BOXES_JS = """id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
    const box = el.querySelector('.hoverlayer .hovertext');
    return {box: box && box.getBoundingClientRect().toJSON(),
            fig: el.querySelector('svg.main-svg').getBoundingClientRect().toJSON(), width: innerWidth}; }"""


# the hover box's text, and the hovered node's hover text as Plotly draws it (lines joined, tags and entities
# read); a packed text not put back would leave Plotly's own x/y label, without "status:"
SAID_JS = """id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
    const pt = el._hoverdata[0], text = el.data[pt.curveNumber].hovertext[pt.pointNumber];
    const read = document.createElement('div');
    read.innerHTML = text.replace(/<br>/g, '');
    return [el.querySelector('.hoverlayer .hovertext text.nums').textContent, read.textContent]; }"""


def inside(a: dict, b: dict) -> bool:
    return (
        a["left"] >= b["left"] - 1
        and a["right"] <= b["right"] + 1
        and a["top"] >= b["top"] - 1
        and a["bottom"] <= b["bottom"] + 1
    )


@pytest.mark.parametrize(
    "algorithms", [["sd", "mcsd", "dyntree"], ["sd", "mcsd", "dyntree", "sequoia"]], ids=["3-columns", "4-columns"]
)
def test_a_node_hover_box_stays_inside_its_figure(app_server, browser, algorithms):
    url, _, _ = app_server
    page = open_page(browser, url, width=1600)
    run_unpaced(page, algorithms, "def add(a, b):\n", 8)
    for col in range(len(algorithms)):
        fig = f"sv-tree-{col}"
        page.locator(f"#{fig}").scroll_into_view_if_needed()
        x, y = max(page.evaluate(POINTS_JS, fig))  # the right-most node: the box cannot open to its right
        page.mouse.move(x, y)
        page.wait_for_function(f"({BOXES_JS})('{fig}').box !== null", timeout=30_000)
        seen = page.evaluate(BOXES_JS, fig)
        assert inside(seen["box"], seen["fig"]), (algorithms[col], seen)
        assert 0 <= seen["box"]["left"] and seen["box"]["right"] <= seen["width"], (algorithms[col], seen)
        # the box says the node's facts in words: its hover text, sent packed (viz.parts), put back whole
        said, text = page.evaluate(SAID_JS, fig)
        assert "status:" in said and said == text, (algorithms[col], said, text)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"e2e-hover-{len(algorithms)}-columns.png"))
    page.close()
