"""Typed step state: what a controller (or a probe) records per step, as ``StepRecord.controller``.

Each controller kind has one frozen dataclass (a ``ControllerState``), each row inside it a small
frozen ``Record``: the views read typed fields, never a dict. Each writes itself as the JSON object its
kind always had and reads itself back once, every field's type checked; an unknown kind, or an older
trace's layout, reads as ``UnknownState`` (``codec`` says how, field by field).

The package, one module per family of controllers, each mirroring where its controller lives:

* ``codec``: ``Record``, ``ControllerState``, ``UnknownState``, ``read_state`` and the field markers;
* ``length``: the draft-length controllers (``algorithms.length_controllers``);
* ``beams``: ``beam`` and ``dsbd`` (``algorithms.beams``);
* ``trees``: ``dyntree`` and ``sequoia``;
* ``theory``: the theory probes (``algorithms.theory_probe``).

Every name is imported here (``from specviz.step_state import BetaTSState``), and importing the package
registers every kind. No torch here (nor in ``trace_values``, whose checks ``check_values`` uses): a trace is
read and drawn without the model stack; the controllers' maths, which needs torch, stays in
``specviz.algorithms`` and ``specviz.core``.
"""

from specviz.step_state.beams import (
    BeamList,
    BeamRow,
    BeamSearchState,
    BeamStepState,
    BonusLayer,
    DsbdState,
    VerifiedLayer,
)
from specviz.step_state.codec import STATE_TYPES, STATE_VERSION, ControllerState, Record, UnknownState, read_state
from specviz.step_state.length import (
    AdaptiveSnapshot,
    AdaptiveState,
    AdaptiveUpdate,
    BetaSnapshot,
    BetaTSState,
    BetaUpdate,
    CaliDraw,
    CaliSnapshot,
    CaliTSState,
    CaliUpdate,
    ConfidenceDraw,
    ConfidenceSnapshot,
    ConfidenceState,
    FixedSnapshot,
    FixedState,
    HeuristicState,
    HeuristicUpdate,
    LengthSnapshot,
    LengthState,
    StopDraw,
    ThetaDraw,
    ThompsonState,
)
from specviz.step_state.theory import RejectionProbe, TheoryState, TradeoffProbe, read_probe
from specviz.step_state.trees import (
    DynTreeState,
    SequoiaRun,
    SequoiaSpeedup,
    SequoiaState,
    SequoiaTiming,
    SequoiaTree,
    SizeBest,
)

__all__ = [
    "STATE_TYPES",
    "STATE_VERSION",
    "AdaptiveSnapshot",
    "AdaptiveState",
    "AdaptiveUpdate",
    "BeamList",
    "BeamRow",
    "BeamSearchState",
    "BeamStepState",
    "BetaSnapshot",
    "BetaTSState",
    "BetaUpdate",
    "BonusLayer",
    "CaliDraw",
    "CaliSnapshot",
    "CaliTSState",
    "CaliUpdate",
    "ConfidenceDraw",
    "ConfidenceSnapshot",
    "ConfidenceState",
    "ControllerState",
    "DsbdState",
    "DynTreeState",
    "FixedSnapshot",
    "FixedState",
    "HeuristicState",
    "HeuristicUpdate",
    "LengthSnapshot",
    "LengthState",
    "Record",
    "RejectionProbe",
    "SequoiaRun",
    "SequoiaSpeedup",
    "SequoiaState",
    "SequoiaTiming",
    "SequoiaTree",
    "SizeBest",
    "StopDraw",
    "ThetaDraw",
    "ThompsonState",
    "TheoryState",
    "TradeoffProbe",
    "UnknownState",
    "VerifiedLayer",
    "read_probe",
    "read_state",
]
