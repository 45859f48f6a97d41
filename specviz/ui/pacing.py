"""How fast a live run sends the page its updates (no Gradio here): the throttle, the frame gate that
waits for the page to draw the update before (issue 34), and the per-page run control (Stop, the
page's reports) with the registry of the runs in progress."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable


class Throttle:
    """When to send the next live update: at most every ``interval`` seconds, and never sooner than
    ``ratio`` times the last render took, so rendering (and Gradio's serialisation, about as long
    again) stays a small share of a run on a slow machine. ``clock`` is injectable (tests drive it)."""

    def __init__(self, interval: float, ratio: float = 8.0, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self.ratio = ratio
        self.clock = clock
        self.last = float("-inf")
        self.render_s = 0.0

    def __call__(self, force: bool = False) -> bool:
        now = self.clock()
        if force or now - self.last >= max(self.interval, self.ratio * self.render_s):
            self.last = now
            return True
        return False

    def rendered(self, seconds: float) -> None:
        self.render_s = seconds


class FrameGate:
    """Which decoded steps a live run sends the page (issue 34): a new update only once the page has
    drawn the one before it, so a browser slower than decoding costs frames, never decoding time. The
    steps decoded meanwhile are not drawn and nothing is computed for them: the latest step wins (the
    trace keeps every step, for scrubbing). A report that never comes (lost) must not stall the page:
    past a patience of ``patience`` seconds, or twice the page's last draw if that is longer (a page
    drawing slowly is not sent updates faster than it draws them: they would pile up in it and come out
    in a burst), the next update goes anyway. A page that does not report (a script, an API client) is
    sent every update its caller's pacing or throttling allows. Pure: the caller passes what the page
    has reported and the time."""

    def __init__(self, patience: float):
        self.patience = patience
        self.sent_step: int | None = None
        self.sent_at = float("-inf")
        self.draw_s = 0.0  # how long the page took to draw the last update it reported

    def sent(self, step: int, now: float) -> None:
        """An update showing ``step`` went to the page at ``now``."""
        self.sent_step, self.sent_at = step, now

    def ready(self, drawn: int, reports: bool, now: float) -> bool:
        """Whether the next update may go: the page (``reports``: it reports at all) has drawn step
        ``drawn``, the last update sent showed ``sent_step``."""
        if self.sent_step is None or not reports:
            return True
        if drawn >= self.sent_step:
            if self.sent_at > float("-inf"):
                self.draw_s = max(0.0, now - self.sent_at)  # at most this long: it was drawn by now
            self.sent_at = float("-inf")  # counted once
            return True
        return now - self.sent_at >= max(self.patience, 2.0 * self.draw_s)


class RunControl:
    """A live run's Stop flag, shared by the run's generator and the Stop callback.

    The run checks ``stopped`` between steps and paces itself with ``pause`` (an ``Event.wait``, so a
    Stop ends a pause at once); it then shows what ran, marked "stopped", in its own last update.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.shown_step = -1  # the last step the page reported drawn (see ``PAGE_JS``, ``FrameGate``)
        self.page_reports = False  # whether the page reported in this run (a browser does; tests may not)

    def stop(self) -> None:
        self._event.set()

    def report_shown(self, step: int) -> None:
        """The page has drawn the update of ``step`` (its status line says so); a late report of an
        earlier step never moves it back."""
        with self._lock:
            self.page_reports = True
            self.shown_step = max(self.shown_step, step)

    def stopped(self) -> bool:
        return self._event.is_set()

    def pause(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True if stopped meanwhile."""
        return self._event.wait(seconds) if seconds > 0 else self._event.is_set()


class RunRegistry:
    """The runs going on, one per visitor (keyed by Gradio's session hash), for Stop to find."""

    def __init__(self) -> None:
        self._runs: dict[Any, RunControl] = {}
        self._lock = threading.Lock()

    def begin(self, key: Any) -> RunControl | None:
        """A control for a new run, or None if this visitor already has one going."""
        with self._lock:
            if key in self._runs:
                return None
            control = self._runs[key] = RunControl()
            return control

    def end(self, key: Any, control: RunControl) -> None:
        with self._lock:
            if self._runs.get(key) is control:
                del self._runs[key]

    def get(self, key: Any) -> RunControl | None:
        with self._lock:
            return self._runs.get(key)
