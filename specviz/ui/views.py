"""What the page shows of a session, as views (``ui.layout``: ``{name: value}``; a name left out stays
as it is on screen). Every handler that changes the page returns one of these.

Every Plotly redraw and every large HTML swap costs the browser tens of milliseconds, so the column
panels are re-sent only when what they show changes (``slot_views``); moving the selected step within
a text and the step markers of the comparison figures is done in the browser (``STEP_JS``).
"""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from specviz.ui import render, stepcache
from specviz.ui.layout import PANELS, Panel, View
from specviz.ui.runner import Session

STAYS_HIDDEN = object()  # ``panel_update``'s answer for a hidden panel that stays hidden: nothing to send


def slot_views(
    session: Session,
    step: int,
    n_slots: int,
    *,
    full: bool,
    force: bool = False,
    text: bool = True,
    theory: bool = True,
) -> View:
    """Per-column panels, sending only what changed on screen unless ``force``.

    Each panel is sent as its ``layout.PANELS`` entry says: a column's text only when the text itself
    changes (new steps, finished, pinned); its step panels (tree, narrative, distribution, controller…)
    only when the step it shows changes. ``theory=False`` sends the theory panels hidden (``later_view``
    draws them).
    ``force`` re-sends everything: a run's last update carries every panel in full, so the page ends
    on the state the server has, whatever became of the updates before it. ``text=False`` leaves the
    texts as they are. A text is a ``ui.textbox.TextBox`` value (a live run's stream sends only its
    new steps). ``full`` also sets which of the ``n_slots`` columns are visible (when that changed since
    the page was last told, or with ``force``) and their download buttons.
    """
    out: View = {}
    baseline = render.greedy_baseline(session)
    shown_columns = min(len(session.columns), n_slots)
    # a column's visibility only when it changes: Gradio handles a container's update by reading back
    # every component inside it (a deep copy of each figure), ~15 ms a live step for four columns
    columns_sent = full and (force or session.columns_shown != shown_columns)
    if columns_sent:
        session.columns_shown = shown_columns
        out.update({("column", i): gr.Column(visible=i < shown_columns) for i in range(n_slots)})
    for i in range(shown_columns):
        col = session.columns[i]
        diverge_at = render.divergence(col, baseline)
        window = stepcache.text_window(col, col.step_shown(step)) if col.n_steps else None
        state = (col.n_steps, col.done, col.error, id(col.trace), diverge_at, col.pin, window)
        step_key = (col.step_shown(step) if col.n_steps else None, col.selected, *state)
        text_changed = force or (text and col.shown.get("text") != state)
        step_changed = force or col.shown.get("step") != step_key
        v = render.slot_view(col, i, step, session.running, diverge_at, text=text_changed, theory=theory)
        if text_changed and col.pin is not None and isinstance(v.tokens, dict):
            v.tokens = {**v.tokens, "pinned": True}
        sent = {"always": True, "text": text_changed, "step": step_changed, "full": full}
        shown = col.shown.setdefault("visible", {})
        if force:
            shown.clear()  # every panel as its update: the page ends on the server's state
        for panel in PANELS:  # each panel when its ``sent`` says, as its ``update``, unless it stays hidden
            update = panel_update(panel, getattr(v, panel.name), shown) if sent[panel.sent] else STAYS_HIDDEN
            if update is not STAYS_HIDDEN:
                out[panel.name, i] = update
        if text_changed:
            col.shown["text"] = state
        col.shown["step"] = step_key
    return out


def panel_update(panel: Panel, value: Any, shown: dict[str, bool]) -> Any:
    """``value`` as its panel's update, or as itself (``panel.plain``) where the panel is already shown
    as it should be for it (``shown``: what the column's panels were last sent as, updated), or
    ``STAYS_HIDDEN`` where it was sent hidden and has nothing still: each output sent costs the page a
    search of its whole component tree, and a live step of four columns had ~20 such hidden ones."""
    if panel.visible is None:
        return panel.update(value)
    visible = panel.visible(value)
    if shown.get(panel.name) == visible:
        return panel.plain(value) if visible else STAYS_HIDDEN
    shown[panel.name] = visible
    return panel.update(value)


def full_view(
    session: Session,
    n_slots: int,
    note: str = "",
    compare: bool = True,
    force: bool = False,
    text: bool = True,
    later: bool = False,
) -> View:
    """Every output. ``compare=False`` leaves the comparison table and figures as they are (a live
    run refreshes them less often than the columns); ``later=True`` sends the columns without their
    theory panels and the comparison as being drawn, for ``later_view`` to draw in a second event (a
    long replay: the columns appear first)."""
    step = session.view_step()
    view: View = {
        "session": session,
        "status": render.status_html(session, note),
        "slider": slider(session),
        "step_label": render.step_label(session),
    }
    if compare:
        view.update(render.comparison_pending(session) if later else render.comparison(session, step))
    view.update(slot_views(session, step, n_slots, full=True, force=force, text=text, theory=not later))
    return view


def later_view(session: Session, n_slots: int) -> View:
    """What ``full_view(later=True)`` left out: the comparison and each column's theory panel, at the
    step shown now."""
    step = session.view_step()
    view: View = render.comparison(session, step)
    theory = next(p for p in PANELS if p.name == "theory")
    for i, col in enumerate(session.columns[:n_slots]):
        if col.n_steps:
            shown = col.shown.setdefault("visible", {})
            update = panel_update(theory, stepcache.theory_figure(col, col.step_shown(step)), shown)
            if update is not STAYS_HIDDEN:
                view["theory", i] = update
    return view


def step_view(session: Session, n_slots: int, with_slider: bool = True) -> View:
    """Outputs of a step change: slider (unless ``with_slider=False``), label and the columns. The step
    markers of the comparison figures and the highlighted step in the texts move in the browser
    (``STEP_JS``)."""
    view: View = {
        "step_label": render.step_label(session),
        **slot_views(session, session.view_step(), n_slots, full=False),
    }
    if with_slider:
        view["slider"] = slider(session)
    return view


def message_view(session: Session, note: str) -> View:
    """Only the status line changes (a refused request)."""
    return {
        "session": session,
        "status": render.status_html(Session(), f'<span class="sv-bad">⚠ {html.escape(note)}</span>'),
    }


def buttons(running: bool) -> View:
    """Run and Measure are disabled while a run or a measurement goes; Stop only then enabled."""
    return {
        "run_btn": gr.Button(interactive=not running),
        "measure_btn": gr.Button(interactive=not running),
        "stop_btn": gr.Button(interactive=running),
    }


def slider(session: Session) -> gr.Slider:
    """The step slider over the session's steps, at the step shown."""
    n = session.n_steps
    return gr.Slider(minimum=1, maximum=max(n, 2), value=session.view_step() + 1, step=1, interactive=n > 1)
