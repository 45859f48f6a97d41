"""The page's output components, declared once and addressed by name.

Callbacks return a view: ``{name: value}`` with page-level names (``"status"``, ``"table"``…) and
``(panel, column)`` for a column's panel (``("tree", 2)``); a name left out stays as it is on
screen. ``Page.bind`` turns a view into Gradio's ``{component: value}``; nothing counts outputs by
position.

A new panel per column is one ``Panel`` in ``PANELS``: its name, its component in column ``i``, what
it holds when it has nothing to show, when it is re-sent and how its value becomes an update. The
columns' components (``Slot``), their values (``render.SlotView``) and their updates
(``views.slot_views``) are derived from it. A comparison figure is one ``Figure`` in ``FIGURES``: its
name, element id, row and what draws it (``render.comparison``). Events take their inputs by name too
(``Explorer.wire``: Gradio's ``inputs_kwargs``).
"""

from __future__ import annotations

import functools
import inspect
import itertools
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Hashable, Iterator, Literal

import gradio as gr
import plotly.graph_objects as go

from specviz import viz
from specviz.ui.plotbox import PlotBox
from specviz.ui.textbox import TextBox

if TYPE_CHECKING:
    from specviz.trace import RunTrace
    from specviz.ui.editor import ColumnEditor

View = dict[Hashable, Any]
# the sampling sliders' ranges (a trace made outside them, through the API, may be replayed: ui.replay)
SLIDER_RANGES = {"temperature": (0.0, 2.0), "top_p": (0.01, 1.0)}


def _as_is(value: Any) -> Any:
    return value


def _shown_value(component: type[gr.components.Component]) -> Callable[[Any], Any]:
    """An update showing the value (a figure, a file), hidden when it is ``None``."""
    return lambda value: component(value=value, visible=value is not None)


def _shown_text(component: type[gr.components.Component]) -> Callable[[Any], Any]:
    """An update showing the text, hidden when it is empty or ``None``."""
    return lambda value: component(value=value or "", visible=bool(value))


def _has_value(value: Any) -> bool:
    """A figure's or a file's panel is shown when it has one (``_shown_value``)."""
    return value is not None


def _text(value: Any) -> str:
    """A text panel's value alone (``_shown_text``)."""
    return value or ""


@dataclass(frozen=True)
class Panel:
    """One panel of every column. ``make(i)``: its component in column ``i`` (hidden ones declared
    ``visible=False``); ``hidden``: its value when the column has nothing for it; ``sent``: when
    ``views.slot_views`` re-sends it (``"always"``; ``"text"``: the text changed; ``"step"``: the step
    shown changed; ``"full"``: a full view); ``update``: its value as the component's update.

    A panel shown only when it has something (``visible``: whether it is shown with a value) is sent as
    its value alone (``plain``) while that does not change: an update is a new component to Gradio,
    built for every one sent (1-5 ms each, sixteen a live step), a value is only postprocessed."""

    name: str
    make: Callable[[int], gr.components.Component]
    hidden: Any = None
    sent: Literal["always", "text", "step", "full"] = "step"
    update: Callable[[Any], Any] = _as_is
    visible: Callable[[Any], bool] | None = None
    plain: Callable[[Any], Any] = _as_is


_FIGURE: dict[str, Any] = {"update": _shown_value(PlotBox), "visible": _has_value}  # a figure, hidden without one

# a column's panels, top to bottom; the element ids and classes are the page's (browser tests address them)
PANELS: tuple[Panel, ...] = (
    Panel("header", lambda i: gr.HTML(elem_id=f"sv-head-{i}"), "", "always"),
    Panel(
        "tokens",
        # a live run appends each new step to what the page has (ui.textbox)
        lambda i: TextBox(max_height=230, elem_id=f"sv-text-{i}", elem_classes=["sv-textbox"]),
        "",
        "text",
    ),
    # drawn by the page's own script on an element that stays (ui.plotbox): a live run redraws it every step
    Panel("tree", lambda i: PlotBox(elem_id=f"sv-tree-{i}")),
    Panel(
        "narrative",
        lambda i: gr.Markdown(visible=False, elem_id=f"sv-story-{i}", elem_classes=["sv-story"]),
        update=_shown_text(gr.Markdown),
        visible=bool,
        plain=_text,
    ),
    Panel("distribution", lambda i: PlotBox(visible=False, elem_id=f"sv-dist-{i}"), **_FIGURE),
    Panel("controller", lambda i: PlotBox(visible=False, elem_id=f"sv-ctrl-{i}"), **_FIGURE),
    # a Thompson-sampling controller: drafted vs accepted per round
    Panel("lengths", lambda i: PlotBox(visible=False, elem_id=f"sv-lengths-{i}"), **_FIGURE),
    # a state listing beams (beam / dsbd): the beams' texts and scores (HTML)
    Panel(
        "beams",
        lambda i: gr.HTML(visible=False, elem_id=f"sv-beams-{i}", elem_classes=["sv-beams"]),
        update=_shown_text(gr.HTML),
        visible=bool,
        plain=_text,
    ),
    # the theory paper's quantities next to the measured ones
    Panel("theory", lambda i: PlotBox(visible=False, elem_id=f"sv-theory-{i}"), **_FIGURE),
    Panel(
        "download",
        lambda i: gr.DownloadButton("⬇ trace", visible=False, size="sm", elem_id=f"sv-dl-{i}"),
        sent="full",
        update=_shown_value(gr.DownloadButton),
        visible=_has_value,
    ),
    # the tokens' provenance as CSV, beside the JSON download
    Panel(
        "download_csv",
        lambda i: gr.DownloadButton("⬇ tokens CSV", visible=False, size="sm", elem_id=f"sv-dl-csv-{i}"),
        sent="full",
        update=_shown_value(gr.DownloadButton),
        visible=_has_value,
    ),
)
PANEL_NAMES = tuple(p.name for p in PANELS)
if len(set(PANEL_NAMES)) != len(PANELS) or "column" in PANEL_NAMES:
    raise ValueError(f"a panel's name must be unique and not 'column': {PANEL_NAMES}")


class Slot:
    """One column: its container (``column``) and its panels (``PANELS``), each by name (``slot.tree``)."""

    def __init__(self, column: gr.Column, panels: dict[str, gr.components.Component]):
        if tuple(panels) != PANEL_NAMES:
            raise ValueError(f"a column has the panels {PANEL_NAMES}, got {tuple(panels)}")
        self.column = column
        self.components = panels

    def __getattr__(self, name: str) -> gr.components.Component:
        try:
            return self.__dict__["components"][name]
        except KeyError:
            raise AttributeError(f"a column has no panel {name!r}") from None

    @classmethod
    def declare(cls, i: int) -> "Slot":
        with gr.Column(visible=False, min_width=300, elem_classes=["sv-col"], elem_id=f"sv-col-{i}") as column:
            return cls(column, {p.name: p.make(i) for p in PANELS})

    @classmethod
    def panels(cls) -> list[str]:
        """The column's container, then its panels: the order of its outputs."""
        return ["column", *PANEL_NAMES]


@dataclass(frozen=True)
class Figure:
    """One comparison figure under the table: its name, element id, row (figures of one row side by
    side; ``None``: on its own, full width) and ``draw(runs, step)`` (``step`` places a time series'
    step marker; a figure without one ignores it)."""

    name: str
    elem_id: str
    row: int | None
    draw: Callable[[list["RunTrace"], int], go.Figure]


# the comparison figures, in page order
FIGURES: tuple[Figure, ...] = (
    Figure("per_step", "sv-per-step", 0, lambda runs, step: viz.tokens_per_step_figure(runs, step)),
    Figure("cumulative", "sv-cumulative", 0, lambda runs, step: viz.cumulative_figure(runs, step)),
    Figure("hist", "sv-hist", 1, lambda runs, step: viz.acceptance_histogram_figure(runs)),
    Figure("time", "sv-time", 1, lambda runs, step: viz.time_breakdown_figure(runs)),
    # acceptance by draft position (viz.serving)
    Figure("positions", "sv-positions", 2, lambda runs, step: viz.acceptance_per_position_figure(runs)),
    Figure("race", "sv-race", 2, lambda runs, step: viz.race_figure(runs)),  # the draft-length race (viz.race)
    # per-step draft / verify / bookkeeping time (viz.serving)
    Figure("latency", "sv-latency", None, lambda runs, step: viz.step_latency_figure(runs)),
)


def declare_figures() -> dict[str, PlotBox]:
    """The comparison figures' components (``FIGURES``), by name, in their rows; each a ``PlotBox``
    (``ui.plotbox``: drawn on an element that stays)."""
    out: dict[str, PlotBox] = {}
    for row, group in itertools.groupby(FIGURES, key=lambda f: f.row):
        if row is None:
            for f in group:
                out[f.name] = PlotBox(elem_id=f.elem_id)
            continue
        with gr.Row(elem_classes=["sv-figrow"]):
            for f in group:
                out[f.name] = PlotBox(elem_id=f.elem_id)
    return out


@dataclass
class Page:
    """Every component a callback may update, by name: a comparison figure by its ``FIGURES`` name,
    a column's panel as ``(panel, column)``."""

    session: gr.State
    status: gr.HTML
    run_btn: gr.Button
    stop_btn: gr.Button
    measure_btn: gr.Button
    input_msg: gr.Markdown
    slider: gr.Slider
    step_label: gr.Markdown
    table: gr.HTML
    figures: dict[str, PlotBox]  # FIGURES, by name
    measurements: gr.HTML
    max_new: gr.Number
    seed: gr.Textbox  # SeedBox, text: carried exactly up to 2^63 − 1 (ui.validate.check_seed)
    temperature: gr.Slider
    top_p: gr.Slider
    top_k: gr.Number
    slots: list[Slot]

    def __post_init__(self) -> None:
        if tuple(self.figures) != tuple(f.name for f in FIGURES):
            raise ValueError(f"the page has the figures {[f.name for f in FIGURES]}, got {list(self.figures)}")

    def __getattr__(self, name: str) -> gr.components.Component:
        figures = self.__dict__.get("figures") or {}
        if name in figures:  # page.race: the figure named so
            return figures[name]
        raise AttributeError(f"the page has no component {name!r}")

    def component(self, name: Hashable) -> gr.components.Component:
        if isinstance(name, tuple):
            panel, i = name
            slot = self.slots[i]
            return slot.column if panel == "column" else slot.components[panel]
        if isinstance(name, str) and name in self.figures:
            return self.figures[name]
        if name in ("slots", "figures") or name not in {f.name for f in fields(self)}:
            raise KeyError(f"no output named {name!r}")
        return getattr(self, name)

    def outputs(self) -> list[Any]:
        """Every output component (the ``outputs`` of an event whose callback returns a view): the page's
        in declaration order (the figures in place), then each column's."""
        page: list[Any] = []
        for f in fields(self):
            if f.name == "figures":
                page += list(self.figures.values())
            elif f.name != "slots":
                page.append(getattr(self, f.name))
        return page + [s.column if p == "column" else s.components[p] for s in self.slots for p in Slot.panels()]

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
    node_pick: gr.Textbox  # a click on a tree node writes "column:node:nonce" here (NODE_CLICK_JS)
    page_report: gr.Textbox  # the page writes "step:nonce" here when it has drawn a live update
