"""Controllers: the policy that decides, step by step, what to draft.

A controller is one object per run. The step loop (``step_loop``) calls

1. ``step_plan(dec)`` before a step: the frozen ``plans.Plan`` the drafter gets. By default it is
   ``plan(dec)``, the template ``TreeShape`` (a chain of n nodes is a maximum draft length n; a
   drafter may realise less of it), with the controller's two expansion decisions:
   ``go_on(tree, node)`` after **every** drafted token (whether to draft on beneath it: EESD's
   stop-after-each-token rule, Liu et al. 2024, arXiv 2406.03853, Algorithm 1) and
   ``keep(tree, level, nodes)`` after each drafted level (which of its nodes are expanded further);
2. ``update(dec, result)`` after verification (learn from the ``outcomes.StepResult``), then
   ``state(result)``: the typed ``step_state.ControllerState`` stored as ``StepRecord.controller`` (the
   only way controller state reaches the trace; its JSON is its kind's object).

The drafter calls the decisions through the plan and never sees the controller; they only decide
what is *expanded*: every drafted node stays in the tree, so the sibling groups the rule tests are
still drawn exactly as it assumes and losslessness is untouched.

``StaticShape``: the same template every step (``sd``, ``mcsd``, ``specinfer``, ``pld``, ``ar``);
``BeamWidth``: ``beam``'s fixed width. The others live with their algorithms' maths
(``ts_controllers``, ``width_controller``, ``sequoia``, ``dyntree``, ``theory_probe``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from specviz.algorithms.drafted_tree import DraftedTree
from specviz.algorithms.outcomes import StepResult
from specviz.algorithms.plans import Plan
from specviz.core.trees import TreeShape
from specviz.step_state import BeamSearchState, ControllerState

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


class Controller:
    """Base controller: every hook is the neutral choice. ``kind`` names its state's kind."""

    kind: str | None = None

    def plan(self, dec: "Decoder") -> TreeShape:
        raise NotImplementedError

    def step_plan(self, dec: "Decoder") -> Plan:
        return Plan(self.plan(dec), go_on=self.go_on, keep=self.keep)

    def go_on(self, tree: DraftedTree, node: int) -> bool:
        return True

    def keep(self, tree: DraftedTree, level: int, nodes: list[int]) -> list[int]:
        return nodes

    def update(self, dec: "Decoder", result: StepResult) -> None:
        return None

    def state(self, result: StepResult) -> ControllerState | None:
        return None


class StaticShape(Controller):
    """The trivial controller: the same template every step."""

    def __init__(self, shape: TreeShape):
        self.shape = shape

    def plan(self, dec: "Decoder") -> TreeShape:
        return self.shape


class BeamWidth(Controller):
    """``beam``'s controller: nothing to draft, ``width`` beams kept every step; its state is the
    step's beam list (``beam_state.beam_rows``, a ``step_state.BeamSearchState``)."""

    kind = "beam"

    def __init__(self, width: int):
        self.width = width

    def step_plan(self, dec: "Decoder") -> Plan:
        return Plan(TreeShape(()), width=self.width)

    def state(self, result: StepResult) -> BeamSearchState:
        return BeamSearchState(beam_list=result.outcome.rows)
