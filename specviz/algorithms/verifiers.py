"""The verifier interface: what decides, in one target call, which drafted tokens a step keeps.

A verifier owns the target's side of a step, in the step loop's order (``step_loop``):

1. ``rule(dec)``: the acceptance rule in force (the drafter draws each sibling group as it requires);
   ``lossless(dec)``: whether that rule keeps the output law (set on the decoder once per run);
2. ``budget(dec)``: how many draft levels the step may still propose (the plan is cut to it);
3. ``score(dec, proposal)``: the one target call over the proposal (the only part timed as
   ``verify_ms``);
4. ``decide(dec, proposal, scores, plan)``: walk the proposal with the rule and return a typed
   outcome of what happened (draws, statuses, the accepted path or the kept beams), recording nothing;
5. ``commit(dec, proposal, outcome)``: keep what was accepted in the target's cache and return the
   tokens to commit (``outcomes.Commit``);
6. ``record(dec, proposal, outcome)``: the step's forest, positions, TV and rule for the trace
   (``outcomes.Recorded``), a pure function of the outcome.

Implementations: ``tree_verifier.TreeVerifier`` (the tree walk of every tree algorithm: MCSD,
arXiv:2401.06706, Algorithm 2; Sequoia's Algorithm 1; chain SD as its one-branch case),
``layer_verifier.LayerVerifier`` (DSBD's layer-by-layer walk of a beam forest, arXiv 2409.16560,
Algorithm 1, corrected) and ``beam_verifier.BeamVerifier`` (a beam-sampling step with nothing drafted:
``beam``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from specviz.algorithms.outcomes import Commit, Recorded
from specviz.algorithms.plans import Plan

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


class Verifier(Protocol):
    """See module docstring."""

    def rule(self, dec: "Decoder") -> Any: ...

    def lossless(self, dec: "Decoder") -> bool: ...

    def budget(self, dec: "Decoder") -> int: ...

    def score(self, dec: "Decoder", proposal: Any) -> Any: ...

    def decide(self, dec: "Decoder", proposal: Any, scores: Any, plan: Plan) -> Any: ...

    def commit(self, dec: "Decoder", proposal: Any, outcome: Any) -> Commit: ...

    def record(self, dec: "Decoder", proposal: Any, outcome: Any) -> Recorded: ...
