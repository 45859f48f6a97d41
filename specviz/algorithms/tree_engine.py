"""The tree algorithms' assembly on the step loop: a drafter, a controller and an acceptance rule,
verified by the tree walk (``tree_verifier.TreeVerifier``; the loop itself is ``step_loop``).

``run_engine`` is every tree algorithm (``ar``, ``sd``, ``mcsd``, ``specinfer``, ``sequoia``,
``dyntree``, ``pld``, ``eesd``, ``batch_sd``, ``biased_sd``); ``run_tree`` the common case of a
static template drafted by the draft model and verified by the exact multi-candidate rule, planned by
``StaticShape`` (the trivial controller: ``sd``, ``mcsd``, ``specinfer``, ``pld``, ``ar``). The other
controllers live with their algorithms' maths (``length_controllers``, ``beams.width``, ``sequoia``,
``dyntree``, ``theory_probe``); the interface is ``step_types.Controller``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.step_loop import run_steps
from specviz.algorithms.step_types import Controller, Drafter
from specviz.algorithms.tree_verifier import TreeVerifier
from specviz.core.rules import AcceptanceRule, MultiCandidate
from specviz.core.trees import TreeShape
from specviz.trace import StepRecord

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


class StaticShape(Controller):
    """The trivial controller: the same template every step."""

    def __init__(self, shape: TreeShape):
        self.shape = shape

    def plan(self, dec: "Decoder") -> TreeShape:
        return self.shape


def run_engine(dec: "Decoder", drafter: Drafter, controller: Controller, rule: AcceptanceRule) -> Iterator[StepRecord]:
    """Yield one ``StepRecord`` per step until the decoder finishes: ``drafter`` proposes what
    ``controller`` plans, the tree walk verifies it with ``rule`` (exact match at temperature 0)."""
    yield from run_steps(dec, drafter, TreeVerifier(rule), controller)


def run_tree(dec: "Decoder", shape: TreeShape, replacement: bool, fallback: bool = False) -> Iterator[StepRecord]:
    """A static template drafted by the draft model and verified by the exact multi-candidate rule
    (``sd``, ``mcsd``, ``specinfer``)."""
    yield from run_engine(dec, ModelDrafter(dec.draft, fallback), StaticShape(shape), MultiCandidate(replacement))
