"""Moving through a session's steps: the step slider, prev / next / latest, playback, and a click on a
tree node (its distribution view). Each answers with the step's view (``ui.views.step_view``); a
session of another type or without columns changes nothing.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

from specviz.ui.layout import View
from specviz.ui.runner import Session, given_session
from specviz.ui.validate import check_pace
from specviz.ui.views import message_view, slot_views, step_view


def unpin(session: Session) -> None:
    """A scrub moves every column together again (after a run each opened on its own step)."""
    for c in session.columns:
        c.pin = None
        c.selected = None


def with_columns(state: Any) -> Session | None:
    """The visitor's session if it has columns to move through, else None."""
    session = given_session(state)
    return session if session is not None and session.columns else None


class Scrubbing:
    """The step handlers of a page of ``n_slots`` columns; playback paced within ``max_step_delay_s``."""

    def __init__(self, n_slots: int, max_step_delay_s: float):
        self.n_slots = n_slots
        self.max_step_delay_s = max_step_delay_s

    def scrub(self, session: Session, value: float) -> View:
        """The step the slider was moved to. The slider itself is sent back only where its value was
        clamped: echoing the value it already shows would overwrite a newer one the visitor set while
        this scrub was on its way (the page then re-sent the old step, and a fast second scrub was lost)."""
        session = with_columns(session)
        if session is None:
            return {}
        unpin(session)
        session.step = max(0, int(value) - 1)
        return step_view(session, self.n_slots, with_slider=session.view_step() + 1 != value)

    def shift(self, session: Session, delta: int) -> View:
        session = with_columns(session)
        if session is None:
            return {}
        unpin(session)
        session.step = max(0, min(session.view_step() + delta, session.n_steps - 1))
        return step_view(session, self.n_slots)

    def prev(self, session: Session) -> View:
        return self.shift(session, -1)

    def next(self, session: Session) -> View:
        return self.shift(session, +1)

    def latest(self, session: Session) -> View:
        session = with_columns(session)
        if session is None:
            return {}
        unpin(session)
        session.step = None
        return step_view(session, self.n_slots)

    def play(self, session: Session, pace: float) -> Iterator[View]:
        """Step through the run from the selected step (or the start) to the end."""
        session = with_columns(session)
        if session is None:
            return
        unpin(session)
        n = session.n_steps
        start = session.view_step()
        if start >= n - 1:
            start = 0
        pace, problem = check_pace(pace, self.max_step_delay_s)
        if problem:
            yield message_view(session, problem)
            return
        pace = min(max(pace, 0.15), 1.0)  # playback: at least the time to draw a step, at most a second
        for k in range(start, n):
            session.step = k
            yield step_view(session, self.n_slots)
            time.sleep(pace)

    def select_node(self, session: Session, pick: str) -> View:
        """A click on a tree node (``"column:node:nonce"`` from ``NODE_CLICK_JS``) opens its distribution view."""
        session = given_session(session)
        if session is None:
            return {}
        try:
            i, node = (int(x) for x in str(pick).split(":")[:2])
        except ValueError:
            return {}
        if not 0 <= i < len(session.columns) or session.columns[i].trace is None:
            return {}
        col = session.columns[i]
        col.selected = None if col.selected == node else node  # a second click closes it
        return slot_views(session, session.view_step(), self.n_slots, full=False)
