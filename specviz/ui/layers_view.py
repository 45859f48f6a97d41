"""The app's layer view (issue 38 point 3): for the step on screen in a chosen column, what each layer of
the target would predict through its own output head (the logit lens, ``viz.layers``), with the pair's
early-exit layer marked and the narrative.

A step that recorded its lens (a trace made with ``record_lens``, replayed) is drawn from the trace. A
live run of the page keeps no hidden states, so for its steps the lens is computed on request
(``algorithms.lens.lens_of_step``): one target call over the text up to the step, on the session's
pair, bounded by what the run itself already read (``MAX_POSITIONS`` positions, at most 48 layers)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import gradio as gr

from specviz.algorithms.lens import lens_of_step
from specviz.errors import SpecvizError
from specviz.ui.runner import Session, given_session
from specviz.ui.safe_text import hide_paths
from specviz.viz.layers import layers_figure, layers_narrative
from specviz.viz.style import message_figure

INTRO = (
    "What each layer of the target would predict at the step on screen, read through the target's own "
    "final norm and output head (the logit lens), with the early-exit layer `eesd` drafts from marked. "
    "Press the button after choosing a step."
)


class LayersView:
    """The accordion's components and its one handler, ``show(session, column)``."""

    def __init__(self, n_slots: int, session_pair: Callable[[Session], tuple[Any, str | None]]):
        self.n_slots = n_slots
        self.session_pair = session_pair

    def declare(self) -> tuple[gr.Dropdown, gr.Button, gr.Plot, gr.Markdown]:
        """The view, in a closed accordion, inside the Blocks being built."""
        with gr.Accordion(
            "Layers: what each layer of the target predicts (logit lens)", open=False, elem_id="sv-layers"
        ):
            gr.Markdown(INTRO, elem_classes=["sv-note"])
            with gr.Row(equal_height=True):
                column = gr.Dropdown(
                    [(f"column {i + 1}", i) for i in range(self.n_slots)],
                    value=0,
                    label="column",
                    scale=1,
                    min_width=120,
                    elem_id="sv-layers-column",
                )
                button = gr.Button(
                    "Show the layers of this step", size="sm", scale=0, min_width=200, elem_id="sv-layers-btn"
                )
            plot = gr.Plot(
                message_figure("No layers shown yet.", title="Layers"), show_label=False, elem_id="sv-layers-plot"
            )
            words = gr.Markdown("", elem_id="sv-layers-words", elem_classes=["sv-note"])
        return column, button, plot, words

    def show(self, state: Any, column: Any) -> tuple[Any, str]:
        """The figure and narrative of the step the chosen column shows; a sentence where there is none."""
        session = given_session(state)
        if session is None or not session.columns:
            return message_figure("Run or replay first.", title="Layers"), ""
        if isinstance(column, bool) or not isinstance(column, int) or not 0 <= column < len(session.columns):
            return message_figure(f"Choose a column from 1 to {len(session.columns)}.", title="Layers"), ""
        col = session.columns[column]
        if col.trace is None or not col.trace.steps:
            return message_figure("This column has no steps.", title="Layers"), ""
        index = col.step_shown(session.view_step())
        step = col.trace.steps[index]
        if step.lens is None:
            if col.replayed:
                return message_figure("This replayed trace recorded no layers (record_lens).", title="Layers"), ""
            pair, why = self.session_pair(session)
            if pair is None:
                return message_figure(why or "No pair loaded.", title="Layers"), ""
            try:
                step = replace(step, lens=lens_of_step(pair, col.trace, index))
            except SpecvizError as exc:
                return message_figure(hide_paths(str(exc)), title="Layers"), ""
        return layers_figure(step, col.label), layers_narrative(step)
