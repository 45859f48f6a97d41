"""What one step did, as the step loop hands it on: ``Recorded`` (a verifier's part of the
``StepRecord``) and ``StepResult`` (what the controller learns from and reports).

Kept apart from the loop (``step_loop``) so that controllers, drafters and verifiers can name these
types without importing the loop that drives them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specviz.algorithms.plans import Plan
from specviz.core.trees import TreeShape
from specviz.trace import PositionRecord, TreeNode

# a produced token: (token id, kind: draft / resampled / bonus, its node id in the step's forest or None)
Produced = tuple[int, str, "int | None"]


@dataclass(frozen=True)
class Recorded:
    """A verifier's part of the ``StepRecord``, a pure function of its outcome: the step's ``forest``
    (drafted nodes with their statuses, then the target's own tokens), ``positions``, ``tv`` (TV(p, q)
    per tested position of a tree walk; None where the walk has no such positions) and ``rule`` (the
    acceptance rule's ``record()``)."""

    forest: list[TreeNode]
    positions: list[PositionRecord]
    rule: dict[str, Any]
    tv: list[float] | None = None


@dataclass(frozen=True)
class Commit:
    """The tokens a step commits, in order, and whether the run ends after them (``final``: a beam run
    that reached its budget or has no live beam left)."""

    tokens: list[Produced]
    final: bool = False


@dataclass(frozen=True)
class StepResult:
    """One finished step for ``Controller.update`` / ``Controller.state``: its ``index``, the ``plan``
    (cut to the budget), the drafter's ``proposal`` (a ``DraftedTree`` or a ``DraftForest``), the
    verifier's ``outcome`` and the number of tokens it ``produced``."""

    index: int
    plan: Plan
    proposal: Any
    outcome: Any
    produced: int

    @property
    def shape(self) -> TreeShape:
        return self.plan.shape

    @property
    def tree(self) -> Any:
        return self.proposal

    @property
    def path(self) -> list[int]:
        """The accepted path (node ids) of a tree walk."""
        return self.outcome.path
