"""Every event names where its progress shows (issue 34): the page keeps a loading state for each
component an event tracks (``show_progress_on``, else every output: Gradio 6's
``Dependency.progress_targets``) and, on every message of every event afterwards, updates each one
with a search of the whole page. An event tracked on the page's ~90 outputs or the editor's ~80
controls, once run (a typed number, a ticked algorithm), made each later live update ~0.3 s slower in
the browser. The config is what the page reads, so this holds the page to a few tracked components."""

from __future__ import annotations

from specviz.ui import AppConfig
from specviz.ui.app import build_app

MOST_TRACKED = 8  # a handful: Run its status line, an example pick its prompt and checkbox (5 in all)


def test_no_event_tracks_its_progress_on_many_components():
    demo = build_app(AppConfig(), preload=False)
    ids = {c["id"]: c for c in demo.config["components"]}
    wide = []
    for dep in demo.config["dependencies"]:
        tracked = dep.get("show_progress_on") or dep["outputs"]
        if len(tracked) > MOST_TRACKED:
            wide.append(
                (
                    dep["backend_fn"] and dep.get("api_name"),
                    [ids[t]["props"].get("elem_id") for t in dep["targets"] if t in ids],
                    len(tracked),
                )
            )
    assert not wide, wide


def test_the_page_still_shows_a_runs_progress_on_the_status_line():
    demo = build_app(AppConfig(), preload=False)
    status = demo.explorer.page.status._id
    runs = [d for d in demo.config["dependencies"] if d.get("api_name") in ("run", "measure")]
    assert len(runs) == 2
    for dep in runs:
        assert dep["show_progress_on"] == [status] and dep["show_progress"] == "minimal"
