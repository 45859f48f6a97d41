"""Per-visitor limits over a sliding minute (public mode): runs (``RunLimiter``) and, through
``ui.uploadlimit``, uploads; both count in a ``SlidingWindow``.

Runs: visitors are told apart by Gradio's session hash (one per open page), not by IP address, which
behind a proxy or a Space is the proxy's. The hash is chosen by the client, so this paces a page, not
a determined client: the queue and the decode slots bound those (docs/hosting.md)."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, deque
from typing import Any, Callable, Hashable, Sequence

WINDOW_S = 60.0
MAX_VISITORS = 4096  # visitors remembered at once (the least recently seen are forgotten first)


class SlidingWindow:
    """What each key was charged in the last ``window_s`` seconds, against one limit per kind of amount
    (runs; uploads and bytes). ``charge`` counts a new charge if it fits every limit (None: no limit).
    At most ``max_keys`` keys are remembered, the least recently charged forgotten first."""

    def __init__(
        self,
        limits: Sequence[int | None],
        clock: Callable[[], float],
        *,
        window_s: float = WINDOW_S,
        max_keys: int = MAX_VISITORS,
    ):
        self.limits, self.clock, self.window_s, self.max_keys = tuple(limits), clock, window_s, max_keys
        self._charges: OrderedDict[Hashable, deque[tuple[float, tuple[int, ...]]]] = OrderedDict()
        self._lock = threading.Lock()

    def charge(self, key: Hashable, amounts: Sequence[int]) -> float | None:
        """None if ``amounts`` (one per limit) fit now, and they are counted; else the seconds until they
        would fit (``inf`` if one is larger than its limit), and nothing is counted."""
        now = self.clock()
        with self._lock:
            charges = self._charges.pop(key, None) or deque()
            while charges and charges[0][0] <= now - self.window_s:
                charges.popleft()
            self._charges[key] = charges
            while len(self._charges) > self.max_keys:
                self._charges.popitem(last=False)
            wait = 0.0
            for i, (limit, amount) in enumerate(zip(self.limits, amounts)):
                if limit is None:
                    continue
                if amount > limit:
                    return math.inf
                excess = sum(c[1][i] for c in charges) + amount - limit
                for t, counted in charges:  # the oldest charges leave the window first
                    if excess <= 0:
                        break
                    excess -= counted[i]
                    wait = max(wait, t + self.window_s - now)
            if wait > 0:
                return wait
            charges.append((now, tuple(amounts)))
            return None


def seconds(wait: float) -> int:
    """A wait as whole seconds for a message, at least 1."""
    return max(1, int(wait + 0.999))


class RunLimiter:
    """``allow(key)``: None if this visitor may start a run now (and counts it), else a sentence."""

    def __init__(self, per_minute: int | None, clock: Callable[[], float]):
        self.per_minute = per_minute if per_minute is not None and per_minute > 0 else None  # 0: none (as the variable)
        self.window = SlidingWindow([per_minute], clock)

    def allow(self, key: Hashable) -> str | None:
        if self.per_minute is None:
            return None
        wait = self.window.charge(key, [1])
        if wait is None:
            return None
        return f"This app allows {self.per_minute} runs a minute per visitor; try again in {seconds(wait)} s."


def visitor_key(fallback: Any) -> Hashable:
    """The Gradio session hash of the request being handled, or ``id(fallback)`` outside one."""
    try:
        from gradio.context import LocalContext

        request = LocalContext.request.get(None)
    except (ImportError, LookupError):
        request = None
    session_hash = getattr(request, "session_hash", None)
    return ("session", session_hash) if isinstance(session_hash, str) and session_hash else ("state", id(fallback))
