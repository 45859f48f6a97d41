"""Stopping long setup work from outside, between two of its steps (issue #21: a deadline checked
inside calibration).

A caller that iterates a run (the app) wraps each step in ``checking(should_stop)``; work that can run
long before a run's first step (Sequoia's calibration and timing) calls ``check()`` between its own
steps and raises ``RunInterrupted`` when the caller says stop. The flag is thread-local and set only
for the duration of one step, so a worker thread that goes on to serve another visitor never sees
it. Without a caller that sets it (the Python API, the CLI), ``check()`` does nothing.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from specviz.errors import SpecvizError

_local = threading.local()


class RunInterrupted(SpecvizError):
    """The caller asked the run to stop (Stop, a deadline) while it was still preparing."""


@contextmanager
def checking(should_stop: Callable[[], bool] | None) -> Iterator[None]:
    """Within this block (one step of a run, on this thread), ``check()`` asks ``should_stop``."""
    previous = getattr(_local, "should_stop", None)
    _local.should_stop = should_stop
    try:
        yield
    finally:
        _local.should_stop = previous


def check(what: str) -> None:
    """Raise ``RunInterrupted`` (its message says what was stopped) if the caller asked to stop."""
    should_stop = getattr(_local, "should_stop", None)
    if should_stop is not None and should_stop():
        raise RunInterrupted(f"Stopped during {what}: the run was stopped or reached this app's time limit.")
