"""A per-visitor limit on runs: at most N starts in any sliding minute (public mode).

Visitors are told apart by Gradio's session hash (one per open page), not by IP address, which behind
a proxy or a Space is the proxy's. The hash is chosen by the client, so this paces a page, not a
determined client: the queue and the decode slots bound those (docs/hosting.md)."""
from __future__ import annotations

import threading
from collections import OrderedDict, deque
from typing import Any, Callable, Hashable

WINDOW_S = 60.0
MAX_VISITORS = 4096  # visitors remembered at once (the least recently seen are forgotten first)


class RunLimiter:
    """``allow(key)``: None if this visitor may start a run now (and counts it), else a sentence."""

    def __init__(self, per_minute: int | None, clock: Callable[[], float]):
        self.per_minute, self.clock = per_minute, clock
        self._starts: OrderedDict[Hashable, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, key: Hashable) -> str | None:
        if self.per_minute is None:
            return None
        now = self.clock()
        with self._lock:
            starts = self._starts.pop(key, None) or deque()
            while starts and starts[0] <= now - WINDOW_S:
                starts.popleft()
            self._starts[key] = starts
            while len(self._starts) > MAX_VISITORS:
                self._starts.popitem(last=False)
            if len(starts) >= self.per_minute:
                wait = max(1, int(starts[0] + WINDOW_S - now + 0.999))
                return (f"This app allows {self.per_minute} runs a minute per visitor; "
                        f"try again in {wait} s.")
            starts.append(now)
            return None


def visitor_key(fallback: Any) -> Hashable:
    """The Gradio session hash of the request being handled, or ``id(fallback)`` outside one."""
    try:
        from gradio.context import LocalContext

        request = LocalContext.request.get(None)
    except (ImportError, LookupError):
        request = None
    session_hash = getattr(request, "session_hash", None)
    return ("session", session_hash) if isinstance(session_hash, str) and session_hash else ("state", id(fallback))
