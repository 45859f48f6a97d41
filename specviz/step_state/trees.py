"""The tree controllers' step states: ``dyntree`` (``algorithms.dyntree``) and ``sequoia``
(``algorithms.sequoia``: the chosen tree, its timing and the predicted and measured speed-ups)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from specviz import trace_values as check
from specviz.step_state.codec import ControllerState, Record, flat


@dataclass(frozen=True, kw_only=True)
class DynTreeState(ControllerState):
    """``dyntree``: each drafted node's cumulative draft probability (``cum_q``, the rank it was kept
    by), their sum, drafted and accepted counts."""

    kind: ClassVar[str] = "dyntree"
    drafted: int
    accepted: int
    expected_accepted: float = 0.0
    cum_q: tuple[float, ...]

    def check_values(self, path: str, nodes: int | None = None) -> None:
        """The cumulative draft probabilities: probabilities, at most one per drafted node."""
        check.probs(f"{path}.cum_q", list(self.cum_q), optional=False)
        if nodes is not None and len(self.cum_q) > nodes:
            raise check._refuse(f"{path}.cum_q", f"at most one entry per node of the step ({nodes})", list(self.cum_q))


@dataclass(frozen=True)
class SequoiaTree(Record):
    """The chosen tree, root included: parents (-1 for the root), sibling ranks, levels, f (P(node
    accepted)) and nodes per level."""

    parents: tuple[int, ...]
    ranks: tuple[int, ...]
    levels: tuple[int, ...]
    f: tuple[float, ...]
    level_widths: tuple[int, ...]


@dataclass(frozen=True)
class SequoiaTiming(Record):
    """Measured verify time t(n) per size and the draft's call time (ms)."""

    sizes: tuple[int, ...]
    verify_ms: tuple[float, ...]
    draft_ms: float


@dataclass(frozen=True)
class SizeBest(Record):
    n: int
    d: int
    expected_tokens: float
    verify_ms: float
    speedup: float


@dataclass(frozen=True)
class SequoiaSpeedup(Record):
    """The surface the hardware-aware choice maximised: ``table[i][j]`` = speed-up(sizes[i], depths[j])."""

    sizes: tuple[int, ...]
    depths: tuple[int, ...]
    table: tuple[tuple[float | None, ...], ...]
    best_per_size: tuple[SizeBest, ...]
    n: int
    d: int
    speedup: float


@dataclass(frozen=True)
class SequoiaRun(Record):
    """The run's calibration and DP choice (``algorithms.sequoia``), the same every step."""

    acceptance: tuple[float, ...]
    acceptance_source: str
    acceptance_steps: int
    rejection: tuple[float, ...]
    n: int
    d: int
    hardware_aware: bool
    tree: SequoiaTree
    expected_tokens: float
    timing: SequoiaTiming | None
    speedup: SequoiaSpeedup | None


@dataclass(frozen=True, kw_only=True)
class SequoiaState(ControllerState):
    """``sequoia``: the run (``run``, its keys inline), the setup time (first step), the tree used this
    step and what it predicted and produced, and the sibling rank accepted at each level."""

    kind: ClassVar[str] = "sequoia"
    run: SequoiaRun = flat()
    setup_ms: float = 0.0
    step_n: int
    step_d: int
    predicted_tokens: float
    measured_tokens: int
    accepted_ranks: tuple[int, ...]

    def check_values(self, path: str, nodes: int | None = None) -> None:
        """The predicted and measured tokens."""
        check.finite(f"{path}.predicted_tokens", self.predicted_tokens)
        check.whole(f"{path}.measured_tokens", self.measured_tokens, 0)
