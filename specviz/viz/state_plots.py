"""What the state views share (``viz.controller``, ``viz.thompson``, ``viz.sequoia``): a trace's states,
a field of them as a series, two plots side by side, whole-number tick spacing and the selected step's
dotted line."""

from __future__ import annotations

from typing import Any, Callable

from specviz.step_state import ControllerState
from specviz.trace import RunTrace
from specviz.viz.style import CURRENT_COLOR, axis


def states_of(trace: RunTrace) -> list[ControllerState | None]:
    """The controller state of each step (``None`` where a step carries none)."""
    return [s.controller for s in trace.steps]


def series(states: list[ControllerState | None], kind: type, get: Callable[[Any], Any]) -> list[Any]:
    """``get(state)`` of each state of type ``kind``, ``None`` for the others."""
    return [get(s) if isinstance(s, kind) else None for s in states]


def two_panels(layout: dict[str, Any], split: float = 0.5, right_gap: float = 0.04) -> None:
    """Two plots side by side; ``right_gap`` is the room (a fraction of the plots' width) left of the
    right plot for its y axis's tick labels and title."""
    layout["xaxis"] = axis(None, domain=[0, split - 0.07])
    layout["yaxis"] = axis(None)
    layout["xaxis2"] = axis(None, domain=[split + right_gap, 1], anchor="y2")
    layout["yaxis2"] = axis(None, anchor="x2")


def tick_step(n: int, most: int) -> int:
    """The step between whole-number ticks of an axis of ``n`` values that shows at most ``most`` labels
    (1, 2, 5, 10, 20, 50, ...): the labels the narrowest plot holds apart, whatever its width (with a
    step of 1 Sequoia's 32 ranks ran into one another)."""
    step = 1
    while -(-n // step) > most:
        step = next(s * 10**e for e in range(12) for s in (1, 2, 5) if s * 10**e > step)
    return step


def mark_line(x: float, xref: str, yref: str) -> dict[str, Any]:
    """A dotted vertical line at ``x`` across the ``yref`` extent: the selected step (or choice)."""
    return {
        "type": "line",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "yref": yref,
        "xref": xref,
        "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
    }


def mark(layout: dict[str, Any], step: int, xref: str, yref: str) -> None:
    """Add the selected step's (0-based ``step``) dotted line to ``layout``'s shapes."""
    layout.setdefault("shapes", []).append(mark_line(step + 1, xref, yref))
