"""Session -> what each component shows, as plain values (HTML strings, Plotly figures).

Plain values, no Gradio components, so the views can be tested and timed directly; ``ui.views`` makes
them component updates (each panel's ``update`` in ``layout.PANELS``). A scrub calls ``slot_view``
only for the columns whose step changed: one tree, one text and one controller figure each, all
computed from the stored traces.
"""

from __future__ import annotations

import html
from dataclasses import field, make_dataclass
from typing import Any

from specviz import viz
from specviz.algorithms.registry import ALGORITHMS
from specviz.trace import RunTrace
from specviz.ui import stepcache
from specviz.ui.columns import short
from specviz.ui.layout import FIGURES, PANELS
from specviz.ui.runner import Column, Session, effective_params
from specviz.ui.textbox import TextValue, text_value
from specviz.viz import controller as viz_controller
from specviz.viz import registry as viz_registry
from specviz.viz.distribution import distribution_figure
from specviz.viz.narrative import informative_step, step_narrative
from specviz.viz.style import algorithm_color

# a column's panels as plain values, one field per ``layout.PANELS`` entry (its ``hidden`` value the
# default): ``SlotView(header=..., tree=...)``, read as ``view.tree``; an unknown name is a TypeError
SlotView = make_dataclass("SlotView", [(p.name, Any, field(default=p.hidden)) for p in PANELS])
SlotView.__doc__ = "What each panel of a column shows (``layout.PANELS``), as plain values."
SlotView.__module__ = __name__


def column_color(col: Column) -> str:
    """The column's colour (``ui.columns.column_colors``: its algorithm's, a shade of it for a further
    column of that algorithm), the same live, in replay and in every comparison figure."""
    return col.color or algorithm_color(col.algorithm)


def _chip(col: Column) -> str:
    return f'<span class="sv-chip" style="background:{column_color(col)}"></span>'


def column_header(col: Column, i: int, step: int, running: bool) -> str:
    name = html.escape(col.label or col.algorithm)  # the configuration's label: "sd · gamma 2"
    params = ", ".join(
        f"{html.escape(str(k))}={html.escape(short(v, 60))}"
        for k, v in effective_params(col.algorithm, col.params).items()
    )
    head = f'<div class="sv-colhead">{_chip(col)}<b>{name}</b>'
    if params:
        head += f' <span class="sv-params">{params}</span>'
    head += "</div>"
    if col.replayed:
        head += f'<div class="sv-replayed">{replay_note(col.algorithm)}</div>'
    if col.error:
        return head + f'<div class="sv-error">⚠ {html.escape(col.error)}</div>'
    t = col.trace
    if t is None or not t.steps:
        state = "starting…" if running and not col.done else "no steps"
        return head + f'<div class="sv-stepinfo">{state}</div>'
    n = len(t.steps)
    k = col.step_shown(step)
    s = t.steps[k]
    bits = [
        f"step <b>{k + 1}</b>/{n}",
        f"drafted {s.n_drafted}",
        f"accepted {s.n_accepted}",
        f"+{len(s.committed)} tok",
    ]
    if col.pin is not None:
        bits[0] += " (its most informative step)"
    elif step > n - 1 and col.done:
        bits[0] = f"last step <b>{n}</b> (done before step {step + 1})"
    if col.done and t.finish_reason:
        m = t.metrics or {}
        tau = m.get("tau")
        summary = f"{len(t.output_ids)} tokens in {n} calls"
        if isinstance(tau, (int, float)):
            summary += f" · τ {tau:.2f}"
        bits.append(f'<span class="sv-done">{summary} ({html.escape(t.finish_reason)})</span>')
    elif not col.done:
        bits.append('<span class="sv-running">running…</span>')
    else:
        bits.append('<span class="sv-running">stopped</span>')
    return head + f'<div class="sv-stepinfo">{" · ".join(bits)}</div>'


def replay_note(algorithm: str) -> str:
    """What a replayed column's heading says: it was read from a file (its content checked, its metrics
    recomputed, nothing run here), and whether this specviz knows its algorithm."""
    note = "↺ replayed from file · not run here; metrics recomputed from its steps"
    if algorithm not in ALGORITHMS:
        note += " · unknown algorithm (not registered in this specviz)"
    return note


def greedy_baseline(session: Session) -> RunTrace | None:
    """The finished greedy ``ar`` run among the columns, the reference for the greedy check."""
    for c in session.columns:
        t = c.trace
        if (
            c.algorithm == "ar"
            and c.done
            and t is not None
            and t.finish_reason
            and float(t.sampling.get("temperature", 1.0)) == 0.0
        ):
            return t
    return None


def divergence(col: Column, baseline: RunTrace | None) -> int | None:
    """Output position where a finished greedy column first differs from ``ar``, if it does."""
    t = col.trace
    if baseline is None or t is None or t is baseline or not col.done or not t.finish_reason:
        return None
    if float(t.sampling.get("temperature", 1.0)) != 0.0:
        return None
    i = viz.first_divergence(t.output_ids, baseline.output_ids)
    if i is not None and i >= len(baseline.output_ids) and "stopped" in (t.finish_reason, baseline.finish_reason):
        return None  # ar was stopped before this token: nothing to compare it with
    return i if i is not None and i < len(t.output_ids) else None


def no_steps_text(trace: RunTrace | None) -> TextValue:
    """The text of a column without steps (no run yet, or none made), as a ``ui.textbox.TextBox`` value."""
    return text_value(viz.text_parts(trace), None)


def slot_view(
    col: Column,
    i: int,
    step: int,
    running: bool = False,
    diverge_at: int | None = None,
    text: bool = True,
    theory: bool = True,
) -> SlotView:
    """Header, coloured text, tree and controller figure of column ``i`` at ``step`` (0-based);
    ``text=False`` leaves the text out (``""``: it is O(steps), and a scrub does not re-send it);
    ``theory=False`` the theory panel (``None``: a long replay draws it in a second event).

    The panels follow the type of the trace's controller state (``viz.registry``):
    a view registered for its ``"tree"``, ``"beams"``, ``"narrative"``, ``"lengths"`` or ``"column"``
    panel replaces the default (the step's tree, none, the tree walk told node by node, none, the
    controller figure)."""
    t = col.trace
    header = column_header(col, i, step, running)
    if col.error and (t is None or not t.steps):
        return SlotView(
            header=header, tokens=no_steps_text(t), tree=viz.message_figure("No tree: the run did not start.")
        )
    if t is None or not t.steps:
        return SlotView(header=header, tokens=no_steps_text(t), tree=viz.tree_figure(None))
    n = len(t.steps)
    k = col.step_shown(step)
    current = k if (col.pin is not None or step < n or not col.done) else None
    tokens = stepcache.text_value(col, k, current, diverge_at) if text else ""  # a long run's: a window
    kind = viz_registry.state_type(t)
    view = lambda panel: viz_registry.panel_view(t, panel, kind)  # noqa: E731 - the state type's view, if any
    tree_view, beams_view, story_view, lengths_view = view("tree"), view("beams"), view("narrative"), view("lengths")
    tree = tree_view(t, k) if tree_view else viz.step_tree_figure(t, k)
    beams_html = beams_view(t, k) if beams_view else None
    ctrl = viz_controller.column_figure(t, k)
    theory_fig = stepcache.theory_figure(col, k) if theory else None  # built once per run, its marker moved
    story = (
        story_view(t, k, col.selected) if story_view else step_narrative(t.steps[k], col.algorithm, drafter=t.drafter)
    )
    dist = None
    if col.selected is not None:
        dist = distribution_figure(t.steps[k], col.selected)
    lengths = lengths_view(t, k) if lengths_view else None
    return SlotView(
        header=header,
        tokens=tokens,
        tree=tree,
        controller=ctrl,
        narrative=story,
        distribution=dist,
        download=col.path if col.done else None,
        beams=beams_html,
        theory=theory_fig,
        lengths=lengths,
        download_csv=col.csv_path if col.done else None,
    )


def opening_step(trace: RunTrace) -> int:
    """The step a finished run opens on: ``viz.narrative.informative_step``."""
    return informative_step(trace)


def timing_caveat(session: Session) -> str | None:
    """Why the session's wall times are not comparable, or None when they are."""
    if session.source == "replay":
        return (
            "the traces were timed in separate runs, perhaps on different machines"
            if len(session.columns) > 1
            else None
        )
    reasons = []
    if len([c for c in session.columns if c.trace is not None]) > 1:
        reasons.append("the columns ran interleaved, step by step, on one device")
    if session.pace > 0:
        reasons.append(f"the run was paced ({session.pace:g} s per step) for watching")
    return " and ".join(reasons) or None


def table_html(session: Session) -> str:
    return viz.comparison_table_html(session.runs(), not_comparable=timing_caveat(session))


def status_html(session: Session, note: str = "") -> str:
    cols = session.columns
    if not cols:
        text = note or "Choose algorithms and press <b>Run</b>, or upload a trace to replay it."
        return f'<div class="sv-status">{text}</div>'
    n = session.n_steps
    running = [c for c in cols if not c.done]
    errors = [c for c in cols if c.error]
    if session.source == "replay":
        text = f"Replaying {len(cols)} uploaded trace{'s' if len(cols) > 1 else ''} · {n} steps · no model needed"
    elif running:
        text = f"Running {len(running)} of {len(cols)} · step {n}"
    elif any(c.trace is not None and c.trace.finish_reason == "stopped" for c in cols):
        text = (
            f'<span class="sv-stopped">■ Stopped</span> · {len(cols)} run{"s" if len(cols) > 1 else ""} · '
            f"{n} steps · each column shows its last step"
        )
    else:
        text = f"Done · {len(cols)} run{'s' if len(cols) > 1 else ''} · {n} steps"
    if errors:
        text += f' · <span class="sv-bad">{len(errors)} failed</span>'
    if note:
        text += f" · {note}"
    return f'<div class="sv-status">{text}</div>'


def step_label(session: Session) -> str:
    n = session.n_steps
    if n == 0:
        return "no steps yet"
    k = session.view_step()
    if any(c.pin is not None for c in session.columns):
        return (
            f"each column opened on its most informative step (the largest tree with a rejection); "
            f"move the slider to show step {k + 1} of {n} in every column"
        )
    follow = " (following live)" if session.step is None and session.running else ""
    return f"step {k + 1} of {n}{follow}"


def comparison(session: Session, step: int) -> dict[str, Any]:
    """The comparison table and figures (``layout.FIGURES``); ``step`` places the time series' step
    marker, which the browser moves afterwards (``ui.style.STEP_JS``)."""
    runs = session.runs()
    return {"table": table_html(session), **{f.name: f.draw(runs, step) for f in FIGURES}}


def comparison_pending(session: Session) -> dict[str, Any]:
    """In place of ``comparison`` while a second event draws it (a long replay): the table and every
    figure say so, so nothing of an earlier run stays on screen beside the new columns."""
    steps = sum(c.n_steps for c in session.columns)
    said = f"Drawing the comparison of {steps:,} steps…"
    return {"table": f'<p class="sv-note">{said}</p>', **{f.name: viz.message_figure(said) for f in FIGURES}}
