"""The page's own scripts keep their reads and Plotly's redraws out of the frame that shows a live step
(issue 34): run in Chromium on a blank page with a stand-in Plotly that records its calls."""

from __future__ import annotations

import re

from specviz.ui.style import PAGE_JS, STEP_JS

# two comparison figures as the step script finds them: a step line (per-step) and a line with its
# current-step dot (cumulative), and a stand-in Plotly that records its calls
FIGURES_JS = """() => {
  window.__calls = [];
  const rec = (name) => (el, ...a) => { window.__calls.push([name, el.parentElement.id, JSON.stringify(a)]); };
  window.Plotly = {update: rec("update"), restyle: rec("restyle"), relayout: rec("relayout")};
  for (const id of ["sv-per-step", "sv-cumulative"]) {
    const box = document.createElement("div"), el = document.createElement("div");
    box.id = id; el.className = "js-plotly-plot"; box.appendChild(el); document.body.appendChild(box);
  }
  const per = document.querySelector("#sv-per-step .js-plotly-plot");
  per.data = [{x: [1, 2, 3], y: [1, 2, 1]}]; per.layout = {shapes: [{x0: 1, x1: 1}]};
  const cum = document.querySelector("#sv-cumulative .js-plotly-plot");
  cum.data = [{x: [1, 2, 3], y: [1, 3, 4]}, {meta: "current", x: [1], y: [1]}]; cum.layout = {};
}"""

FRAME_JS = "() => new Promise((r) => requestAnimationFrame(() => setTimeout(() => setTimeout(r, 0), 0)))"


def test_step_markers_move_after_the_frame_once_for_the_latest_step(browser):
    """STEP_JS moves no marker while the step's update is applied: after the frame, once, for the
    latest of the steps it was given meanwhile, with the same calls as before."""
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.evaluate(FIGURES_JS)
    # nothing redrawn in the task that applies the update
    assert page.evaluate(f"() => {{ const f = {STEP_JS}; f(2); f(3); return window.__calls.length; }}") == 0
    page.evaluate(FRAME_JS)
    calls = page.evaluate("() => window.__calls")
    assert calls == [
        ["relayout", "sv-per-step", '[{"shapes[0].x0":3,"shapes[0].x1":3}]'],
        ["restyle", "sv-cumulative", '[{"x":[[3]],"y":[[4]]},[1]]'],
    ]
    page.evaluate(f"() => {{ const f = {STEP_JS}; f(1); }}")
    page.evaluate(FRAME_JS)
    assert page.evaluate("() => window.__calls.length") == 4
    page.close()


def test_a_step_marker_out_of_view_moves_when_it_comes_into_view(browser):
    """A comparison figure below the viewport keeps its marker while the steps go by (each move redraws it
    whole); scrolled into view, it moves once, to the latest step. One in view moves as before."""
    page = browser.new_page(viewport={"width": 800, "height": 600})
    page.set_content("<html><body></body></html>")
    page.evaluate(FIGURES_JS)
    page.evaluate(
        """() => { const far = document.createElement("div"); far.style.height = "3000px";
                   document.body.insertBefore(far, document.querySelector("#sv-cumulative")); }"""
    )
    page.evaluate(f"() => {{ const f = {STEP_JS}; f(2); }}")
    page.evaluate(FRAME_JS)
    page.evaluate(FRAME_JS)  # the observer has reported where each figure is
    for k in (3, 1):
        page.evaluate(f"() => {{ const f = {STEP_JS}; f({k}); }}")
        page.evaluate(FRAME_JS)
    moved = [c[1] for c in page.evaluate("() => window.__calls")]
    assert moved.count("sv-per-step") == 3 and moved.count("sv-cumulative") <= 1  # at most the first, unseen yet
    before = len(moved)
    page.evaluate("() => document.querySelector('#sv-cumulative').scrollIntoView()")
    page.wait_for_function(f"() => window.__calls.length > {before}", timeout=10_000)
    assert page.evaluate("() => window.__calls")[-1] == ["restyle", "sv-cumulative", '[{"x":[[2]],"y":[[3]]},[1]]']
    page.close()


def test_toolbar_place_is_read_after_the_frame():
    """The toolbar's place (PAGE_JS's placeBar, which reads the layout) is not read in Plotly's
    afterplot event, between one figure's draw and the next: it is queued for after the frame."""
    body = PAGE_JS[PAGE_JS.index("const queueBar") :]
    calls = re.findall(r"placeBar\b[^\n]*", body)
    assert calls == ["placeBar);"], calls  # only from the queue's callback (els.forEach(placeBar))
    assert 'el.on("plotly_afterplot", () => queueBar(el));' in PAGE_JS
    assert re.search(r"requestAnimationFrame\(\(\) => setTimeout\(\(\) => \{\s*barFrame = false;", PAGE_JS)
