"""Typed step state: what a controller (or a probe) records per step, as ``StepRecord.controller``.

Each controller kind has one frozen dataclass (a ``ControllerState``), each row inside it a small
frozen ``Record``: the views read typed fields, never a dict. A state writes itself as the same JSON
object the dict-based controllers wrote (``to_json``: ``{"kind": ..., fields in declaration order}``,
so traces and ``tests/data/golden`` are unchanged) and reads itself back once, checking every field's
type (``read_state``: a ``TraceFormatError`` sentence names the bad field). The codec is declarative:
a field's annotation is its schema (``int``, ``float``, ``bool``, ``str``, ``X | None``,
``tuple[T, ...]`` from a JSON list, a nested ``Record``, ``dict[str, Any]`` free-form); ``field``
metadata: ``key`` (a JSON key that is no identifier, ``"continue"``), ``flat`` (a nested record whose
keys sit in the parent object), ``omit_none`` (written only when set; absent reads as ``None``). A
field with a default may be absent (keys an older trace did not write).

``STATE_TYPES`` maps each ``kind`` to its type (filled by subclassing); an unknown kind reads as
``UnknownState`` (the raw object kept, drawn by the generic view with a note), as does a state of a
known kind in a trace older than schema 6 whose layout this version cannot type (the migration: an
old trace still replays). ``STATE_VERSION`` is the version of this layout (trace schema 6).

The package, one module per family of controllers, each mirroring where its controller lives:

* ``codec``: ``Record``, ``ControllerState``, ``UnknownState``, ``read_state`` and the field markers;
* ``length``: the draft-length controllers (``algorithms.length_controllers``);
* ``beams``: ``beam`` and ``dsbd`` (``algorithms.beams``);
* ``trees``: ``dyntree`` and ``sequoia``;
* ``theory``: the theory probes (``algorithms.theory_probe``).

Every name is imported here (``from specviz.step_state import BetaTSState``), and importing the package
registers every kind. No torch here (nor in ``trace_check``'s checks of the states' values): a trace is
read and drawn without the model stack; the controllers' maths, which needs torch, stays in
``specviz.algorithms`` and ``specviz.core``.
"""
from specviz.step_state.beams import (BeamList, BeamRow, BeamSearchState, BeamStepState, BonusLayer, DsbdState,
                                      VerifiedLayer)
from specviz.step_state.codec import STATE_TYPES, STATE_VERSION, ControllerState, Record, UnknownState, read_state
from specviz.step_state.length import (AdaptiveSnapshot, AdaptiveState, AdaptiveUpdate, BetaSnapshot, BetaTSState,
                                       BetaUpdate, CaliDraw, CaliSnapshot, CaliTSState, CaliUpdate, ConfidenceDraw,
                                       ConfidenceSnapshot, ConfidenceState, FixedSnapshot, FixedState, HeuristicState,
                                       HeuristicUpdate, LengthSnapshot, LengthState, StopDraw, ThetaDraw, ThompsonState)
from specviz.step_state.theory import RejectionProbe, TheoryState, TradeoffProbe, read_probe
from specviz.step_state.trees import (DynTreeState, SequoiaRun, SequoiaSpeedup, SequoiaState, SequoiaTiming,
                                      SequoiaTree, SizeBest)

__all__ = [
    "STATE_TYPES", "STATE_VERSION", "AdaptiveSnapshot", "AdaptiveState", "AdaptiveUpdate", "BeamList", "BeamRow",
    "BeamSearchState", "BeamStepState", "BetaSnapshot", "BetaTSState", "BetaUpdate", "BonusLayer", "CaliDraw",
    "CaliSnapshot", "CaliTSState", "CaliUpdate", "ConfidenceDraw", "ConfidenceSnapshot", "ConfidenceState",
    "ControllerState", "DsbdState", "DynTreeState", "FixedSnapshot", "FixedState", "HeuristicState",
    "HeuristicUpdate", "LengthSnapshot", "LengthState", "Record", "RejectionProbe", "SequoiaRun", "SequoiaSpeedup",
    "SequoiaState", "SequoiaTiming", "SequoiaTree", "SizeBest", "StopDraw", "ThetaDraw", "ThompsonState",
    "TheoryState", "TradeoffProbe", "UnknownState", "VerifiedLayer", "read_probe", "read_state",
]
