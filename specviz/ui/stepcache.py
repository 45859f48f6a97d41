"""What a finished column's scrub reuses (issue #23: a 12,000-step replay took 18-32 s a scrub).

A scrub redraws a column's step panels. Most are one step's (its tree, narrative, controller state),
but the theory panel draws every drafted position of the run and marks the current step's: rebuilding
it is O(steps) a scrub (2.5 s for 12,000 steps). For a finished run it is built once and kept in the
column (``Column.cache``), and a scrub only moves its marker: the marker rectangles of the figure as
``viz.theory.theory_panel`` draws them, placed on the step's drafted positions (an index built once).
The cache lives and dies with the column: a new run or replay, or the session's end
(``Explorer.session_deleted``), drops it with the trace.

A long run's text is sent as a window of ``TEXT_WINDOW`` steps around the current one (``text_value``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import plotly.graph_objects as go

from specviz import metrics, viz
from specviz.ui.runner import Column
from specviz.ui.textbox import TextValue
from specviz.ui.textbox import text_value as text_value_of
from specviz.viz.theory import _overlay, theory_panel
from specviz.viz.tokens import step_span


def _frozen(col: Column) -> bool:
    """A run whose steps no longer change: finished (or replayed) and not failed midway."""
    return col.done and col.trace is not None and bool(col.trace.steps)


def _positions_index(col: Column) -> dict[int, tuple[int, int]]:
    """Step (0-based) -> its first and last drafted position (1-based), as ``viz.theory._step_positions``."""
    index: dict[int, tuple[int, int]] = {}
    for i, s in enumerate(_overlay(col.trace)["step"]):
        first, _ = index.get(s, (i + 1, i + 1))
        index[s] = (first, i + 1)
    return index


def theory_figure(col: Column, k: int) -> go.Figure | None:
    """``theory_panel(col.trace, k)``: built once per finished column, its step marker moved per call."""
    t = col.trace
    if not _frozen(col):
        return theory_panel(t, k)
    key = (id(t), len(t.steps))
    cached = col.cache.get("theory")
    if cached is None or cached[0] != key:
        with metrics.reusing(t):  # its drafted positions and overlay computed once, not eight times
            index = _positions_index(col)
            marked = k if k in index else next(iter(index), k)  # a step with a marker, to copy it from
            fig = theory_panel(t, marked)
        template: list[dict[str, Any]] = []
        if fig is not None and marked in index:
            template = [s.to_plotly_json() for s in fig.layout.shapes]
        cached = col.cache["theory"] = (key, fig, index, template)
    _, fig, index, template = cached
    if fig is None:
        return None
    span = index.get(k)
    fig.layout.shapes = [] if span is None else [{**s, "x0": span[0] - 0.5, "x1": span[1] + 0.5} for s in template]
    return fig


TEXT_WINDOW = 400  # steps of a column's text sent at once; a longer run's text is a window around its step
TEXT_CHUNK = TEXT_WINDOW // 2  # the window moves by this many steps (a scrub inside it re-sends nothing)


def text_window(col: Column, k: int) -> tuple[int, int]:
    """The steps ``[a, b)`` of column ``col``'s text shown when it shows step ``k``: all of them up to
    ``TEXT_WINDOW`` steps, else ``TEXT_WINDOW`` steps around ``k``, aligned to ``TEXT_CHUNK`` so that it
    moves (and the text is re-sent) once every ``TEXT_CHUNK`` steps of a scrub, not on every one. The
    issue's 12,000-step replay sent 4.4 MB of text per column, which the browser drew for seconds."""
    n = col.n_steps
    if n <= TEXT_WINDOW:
        return 0, n
    a = max(0, min(n - TEXT_WINDOW, (k // TEXT_CHUNK) * TEXT_CHUNK - TEXT_CHUNK // 2))
    return a, a + TEXT_WINDOW


def step_spans(col: Column, diverge_at: int | None) -> list[str]:
    """``viz.tokens.step_span`` of each of the column's steps, each built once: a step does not change
    once made, so a live update builds only the steps made since the one before (a text sent with every
    update of a 1,000-token run rebuilt up to 400 steps a column each time). Kept in ``col.cache`` for
    the column's trace and marks; the caller slices it (the list grows in place)."""
    t = col.trace
    key = (id(t), diverge_at, t.lossless)
    cached = col.cache.get("spans")
    if cached is None or cached[0] != key:
        cached = col.cache["spans"] = (key, [])
    spans = cached[1]
    spans.extend(step_span(step, True, diverge_at, t.lossless) for step in t.steps[len(spans) :])
    return spans


def text_value(col: Column, k: int, current: int | None, diverge_at: int | None) -> TextValue:
    """The column's text window (``text_window``) at step ``k`` as a ``ui.textbox.TextBox`` value,
    saying how many steps before and after it are not shown. Its steps keep their numbers
    (``data-step``), so the browser moves the current step within it (``ui.style.STEP_JS``)."""
    t = col.trace
    a, b = text_window(col, k)
    spans = step_spans(col, diverge_at)[a:b]
    if (a, b) == (0, col.n_steps):
        return text_value_of(viz.text_parts(t, diverge_at=diverge_at, spans=spans), current)
    parts = viz.text_parts(replace(t, steps=t.steps[a:b]), diverge_at=diverge_at, show_prompt=a == 0, spans=spans)
    before = f'<div class="sv-elided">… steps 1–{a} not shown: move the slider there to see them</div>' if a else ""
    after = (
        f'<div class="sv-elided">… steps {b + 1}–{col.n_steps} not shown: move the slider there to see them</div>'
        if b < col.n_steps
        else ""
    )
    return text_value_of(parts, current, before=before, after=after)
