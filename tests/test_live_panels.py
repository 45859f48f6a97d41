"""A live step's panels go as values, not new components (issue 34; ``views.panel_update``).

A panel shown only when it has something (a column's controller, theory, distribution, lengths figures,
its story, beams and downloads) was sent as a new component every step (``PlotBox(value=…,
visible=…)``), and Gradio builds another from each update it gets: sixteen builds a step for four
columns. Now it goes as a component update only when it appears or disappears, else as its value
alone. Here: a live run's steps after the first carry no component for those panels, and the page,
following the updates as Gradio's client does (a value leaves the visibility as it was), shows each panel
exactly when it has something; a run's last update sends every panel as an update again.
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
    live_values = 0
    for n, view in enumerate(views):
        live = 0 < n < len(views) - 1
        built = 0
        for panel in SHOWN_WHEN:
            for i in range(3):
                if (panel.name, i) not in view:
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
    assert live_values >= 4 * (len(views) - 3)  # most live panels went as values
