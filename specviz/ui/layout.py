"""The page's output components, declared once and addressed by name.

Callbacks return a view: ``{name: value}`` with page-level names (``"status"``, ``"table"``…) and
``(panel, column)`` for a column's panel (``("tree", 2)``); a name left out stays as it is on
screen. ``Page.bind`` turns a view into Gradio's ``{component: value}``. A new panel per column is
one field of ``Slot`` (its declaration in ``Slot.declare``) and its value in ``render.SlotView``;
nothing counts outputs by position.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator

import gradio as gr

if TYPE_CHECKING:
    from specviz.ui.editor import ColumnEditor

View = dict[Hashable, Any]
# the sampling sliders' ranges (a trace made outside them, through the API, may be replayed: ui.replay)
SLIDER_RANGES = {"temperature": (0.0, 2.0), "top_p": (0.01, 1.0)}


@dataclass
class Slot:
    """One column's panels, top to bottom."""

    column: gr.Column
    header: gr.HTML
    tokens: gr.HTML
    tree: gr.Plot
    narrative: gr.Markdown
    distribution: gr.Plot
    controller: gr.Plot
    lengths: gr.Plot
    beams: gr.HTML
    theory: gr.Plot
    download: gr.DownloadButton
    download_csv: gr.DownloadButton

    @classmethod
    def declare(cls, i: int) -> "Slot":
        with gr.Column(visible=False, min_width=300, elem_classes=["sv-col"], elem_id=f"sv-col-{i}") as column:
            return cls(
                column=column,
                header=gr.HTML(elem_id=f"sv-head-{i}"),
                tokens=gr.HTML(max_height=230, autoscroll=True, elem_id=f"sv-text-{i}", elem_classes=["sv-textbox"]),
                tree=gr.Plot(show_label=False, elem_id=f"sv-tree-{i}"),
                narrative=gr.Markdown(visible=False, elem_id=f"sv-story-{i}", elem_classes=["sv-story"]),
                distribution=gr.Plot(show_label=False, visible=False, elem_id=f"sv-dist-{i}"),
                controller=gr.Plot(show_label=False, visible=False, elem_id=f"sv-ctrl-{i}"),
                lengths=gr.Plot(show_label=False, visible=False, elem_id=f"sv-lengths-{i}"),
                beams=gr.HTML(visible=False, elem_id=f"sv-beams-{i}", elem_classes=["sv-beams"]),
                theory=gr.Plot(show_label=False, visible=False, elem_id=f"sv-theory-{i}"),
                download=gr.DownloadButton("⬇ trace", visible=False, size="sm", elem_id=f"sv-dl-{i}"),
                download_csv=gr.DownloadButton("⬇ tokens CSV", visible=False, size="sm", elem_id=f"sv-dl-csv-{i}"),
            )

    @classmethod
    def panels(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@dataclass
class Page:
    """Every component a callback may update, by name."""

    session: gr.State
    status: gr.HTML
    run_btn: gr.Button
    stop_btn: gr.Button
    measure_btn: gr.Button
    input_msg: gr.Markdown
    slider: gr.Slider
    step_label: gr.Markdown
    table: gr.HTML
    per_step: gr.Plot
    cumulative: gr.Plot
    hist: gr.Plot
    time: gr.Plot
    positions: gr.Plot  # acceptance by draft position (viz.serving)
    race: gr.Plot       # the draft-length race (viz.race)
    latency: gr.Plot    # per-step draft / verify / bookkeeping time (viz.serving)
    measurements: gr.HTML
    max_new: gr.Number
    seed: gr.Textbox  # SeedBox, text: carried exactly up to 2^63 − 1 (ui.validate.check_seed)
    temperature: gr.Slider
    top_p: gr.Slider
    top_k: gr.Number
    slots: list[Slot]

    def component(self, name: Hashable) -> gr.components.Component:
        if isinstance(name, tuple):
            panel, i = name
            return getattr(self.slots[i], panel)
        if name == "slots" or name not in {f.name for f in fields(self)}:
            raise KeyError(f"no output named {name!r}")
        return getattr(self, name)

    def outputs(self) -> list[Any]:
        """Every output component (the ``outputs`` of an event whose callback returns a view)."""
        page = [getattr(self, f.name) for f in fields(self) if f.name != "slots"]
        return page + [getattr(s, p) for s in self.slots for p in Slot.panels()]

    def bind(self, view: View) -> dict[Any, Any] | list[Any]:
        """``{component: value}``; an empty view is every output skipped (Gradio reads an empty dict
        as one value)."""
        if not view:
            return [gr.skip()] * len(self.outputs())
        return {self.component(name): value for name, value in view.items()}

    def wire(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` returning (or yielding) views, as a Gradio callback returning ``{component: value}``."""
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen(*args: Any, **kwargs: Any) -> Iterator[dict[Any, Any]]:
                for view in fn(*args, **kwargs):
                    yield self.bind(view)
            return gen

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> dict[Any, Any]:
            return self.bind(fn(*args, **kwargs))
        return call


@dataclass
class Controls:
    """The page's other components an event reads or listens to (``Explorer.wire``), by name."""

    pair_choice: gr.Dropdown
    pair_note: gr.Markdown
    custom_group: gr.Group
    custom_target: gr.Textbox
    custom_draft: gr.Textbox
    load_btn: gr.Button
    pair_md: gr.Markdown
    editor: "ColumnEditor"
    pace: gr.Slider
    upload: gr.File
    prompt: gr.Textbox
    chat: gr.Checkbox
    chat_examples: gr.Dataset
    code_examples: gr.Dataset
    prev_btn: gr.Button
    next_btn: gr.Button
    play_btn: gr.Button
    pause_btn: gr.Button
    latest_btn: gr.Button
    node_pick: gr.Textbox   # a click on a tree node writes "column:node:nonce" here (NODE_CLICK_JS)
    page_report: gr.Textbox  # the page writes "step:nonce" here when it has drawn a live update
