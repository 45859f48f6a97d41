"""A live step's panels go as values, not new components (issue 34; ``views.panel_update``).

A panel shown only when it has something (a column's controller, theory, distribution, lengths figures,
its story, beams and downloads) was sent as a new component every step (``PlotBox(value=…,
visible=…)``), and Gradio builds another from each update it gets: sixteen builds a step for four
columns. Now it goes as a component update only when it appears or disappears, else as its value
alone. Here: a live run's steps after the first carry no component for those panels, and the page,
following the updates as Gradio's client does (a value leaves the visibility as it was), shows each panel
exactly when it has something; a run's last update sends every panel as an update again. A panel that is
hidden and has nothing still is not sent at all (each output sent costs the page a search of its tree).
"""

from __future__ import annotations

import dataclasses

import gradio as gr
import pytest
from test_budgets import FakeTime
from test_ui import columns_for
from test_ui_support import run_inputs, save_tiny_pair

from specviz.ui import AppConfig, Explorer, Session
from specviz.ui.layout import PANELS
from specviz.ui.pairs import PairChoice

SHOWN_WHEN = [p for p in PANELS if p.visible is not None]


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("live-panels-pair"))


def is_update(value) -> bool:
    return isinstance(value, gr.components.Component) or (isinstance(value, dict) and "__type__" in value)


def test_a_live_step_sends_its_panels_as_values(pair_dirs):
    clock = FakeTime()
    cfg = dataclasses.replace(AppConfig(), max_wait_s=None, run_deadline_s=None)
    ex = Explorer(cfg, presets=[PairChoice("tiny", *pair_dirs)], clock=clock, pause=clock.pause)
    session = Session(pair_key=ex.default_key)
    inputs = run_inputs(max_new_tokens=16, columns=columns_for(["sd", "specinfer", "mcsd"]), pace=0.5)
    views = list(ex.run(session, **inputs))
    assert len(views) >= 6
    visible: dict = {}  # what the page shows, as Gradio's client applies each update
    live_values = left_out = 0
    for n, view in enumerate(views):
        live = 0 < n < len(views) - 1
        # the columns' visibility goes with the first and the last update only (a container's update makes
        # the page read back every component in it)
        columns = sorted(k[1] for k in view if isinstance(k, tuple) and k[0] == "column")
        assert columns == ([] if live else list(range(ex.n_slots))), (n, columns)
        built = 0
        for panel in SHOWN_WHEN:
            for i in range(3):
                if (panel.name, i) not in view:
                    # where a live step sends the column's step (its tree), it leaves out only a panel that
                    # is hidden and stays so
                    if live and (panel.sent != "step" or ("tree", i) in view):
                        assert visible.get((panel.name, i)) is False, (n, panel.name, i)
                        left_out += 1
                    continue
                value = view[panel.name, i]
                if is_update(value):
                    built += 1
                    # in a live step only where the panel appears or disappears
                    assert not live or visible.get((panel.name, i)) != value.visible, (n, panel.name, i)
                    visible[panel.name, i] = value.visible
                    value = value.value
                else:
                    live_values += 1
                # the page shows the panel exactly when it has something
                assert visible.get((panel.name, i)) == panel.visible(value), (n, panel.name, i)
        if not live:
            assert built == sum((p.name, i) in view for p in SHOWN_WHEN for i in range(3))  # all as updates
    assert live_values >= len(views) - 3  # shown live panels went as values
    assert left_out >= 3 * (len(views) - 3)  # hidden ones (downloads, figures a column lacks) were not sent
