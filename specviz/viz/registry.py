"""The registry of state views: which function draws which panel of a step's typed controller state
(``specviz.step_state``), by the state's **type** (found along its MRO, so a view registered for a base
type serves its subclasses). The views live with their figures (``viz.controller``, ``viz.thompson``,
``viz.sequoia``, ``viz.beams``, ``viz.beam_story``, ``viz.theory``) and register themselves there;
``viz.controller`` imports them all, so importing it is enough to find every view.

Panels, and what their views take and return:

* ``"controller"``: ``(trace, step) -> Figure | None``, the state's own figure
  (``viz.controller.controller_figure``; ``None`` when the state has nothing it can draw: then, as for
  a type with no view, the generic view);
* ``"column"``: the controller plot of the app's column (``viz.controller.column_figure``; by default
  the ``"controller"`` figure; registered ``None`` (``hide_panel``) where another panel draws the state);
* ``"lengths"`` (drafted vs accepted per round), ``"tree"`` (the step's tree or forest) and
  ``"beams"`` (HTML): ``(trace, step)``; ``"narrative"``: ``(trace, step, selected node) -> markdown``.
"""

from __future__ import annotations

from typing import Any, Callable

from specviz.step_state import ControllerState, UnknownState
from specviz.trace import RunTrace

View = Callable[..., Any]
PANELS = ("controller", "column", "lengths", "tree", "beams", "narrative")
VIEWS: dict[tuple[type, str], View | None] = {}
ABSENT: Any = object()  # nothing registered for a type and panel


def register_view(state: type[ControllerState], panel: str = "controller") -> Callable[[View], View]:
    """Register the decorated function as ``panel``'s view of ``state`` (and its subclasses)."""
    if not (isinstance(state, type) and issubclass(state, ControllerState)):
        raise TypeError(
            f"register_view takes a state type (a specviz.step_state.ControllerState subclass), "
            f"not {state!r}: views are found by the state's type, not its kind's name"
        )
    if panel not in PANELS:
        raise ValueError(f"unknown panel {panel!r}; one of {', '.join(PANELS)}")

    def wrap(fn: View) -> View:
        VIEWS[state, panel] = fn
        return fn

    return wrap


def hide_panel(state: type[ControllerState], panel: str) -> None:
    """``panel`` is not shown for ``state`` (another panel draws it)."""
    VIEWS[state, panel] = None


def view_for(state: type | None, panel: str) -> Any:
    """The view registered for ``state`` (or its nearest base type) and ``panel``: ``None`` when the panel
    is hidden for it, ``ABSENT`` when nothing is registered."""
    for cls in state.__mro__ if state is not None else ():
        if (cls, panel) in VIEWS:
            return VIEWS[cls, panel]
    return ABSENT


def state_type(trace: RunTrace | None) -> type[ControllerState] | None:
    """The type of the first state the trace's steps carry, or ``None``."""
    for s in trace.steps if trace is not None else ():
        if s.controller is not None:
            return type(s.controller)
    return None


def controller_kind(trace: RunTrace | None) -> str | None:
    """The controller kind of the first step that carries a state, or ``None``."""
    for s in trace.steps if trace is not None else ():
        if isinstance(s.controller, UnknownState):
            return s.controller.kind_name
        if s.controller is not None:
            return s.controller.kind
    return None


def panel_view(trace: RunTrace | None, panel: str, state: type | None = ABSENT) -> View | None:
    """The view of ``panel`` for the trace's state type (``state`` when given: ``state_type(trace)``), or
    ``None`` (none registered, or hidden)."""
    view = view_for(state_type(trace) if state is ABSENT else state, panel)
    return None if view is ABSENT else view
