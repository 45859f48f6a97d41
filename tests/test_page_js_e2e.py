"""The page's own scripts keep their reads and Plotly's redraws out of the frame that shows a live step
(issue 34): run in Chromium on a blank page with a stand-in Plotly that records its calls."""

from __future__ import annotations

import re

from specviz.ui.style import PAGE_JS


def test_toolbar_place_is_read_after_the_frame():
    """The toolbar's place (PAGE_JS's placeBar, which reads the layout) is not read in Plotly's
    afterplot event, between one figure's draw and the next: it is queued for after the frame."""
    body = PAGE_JS[PAGE_JS.index("const queueBar") :]
    calls = re.findall(r"placeBar\b[^\n]*", body)
    assert calls == ["placeBar);"], calls  # only from the queue's callback (els.forEach(placeBar))
    assert 'el.on("plotly_afterplot", () => queueBar(el));' in PAGE_JS
    assert re.search(r"requestAnimationFrame\(\(\) => setTimeout\(\(\) => \{\s*barFrame = false;", PAGE_JS)
