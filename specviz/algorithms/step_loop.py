"""The one step loop every algorithm runs on: a drafter proposes, a verifier decides, a controller
plans and learns, and one function (``record_step``) writes the step.

Per step (``take_step``; ``run_steps`` repeats it until the decoder finishes):

1. **Plan**: ``Controller.step_plan`` (a frozen ``step_types.Plan``: the template and the expansion
   decisions), cut to the verifier's ``budget``.
2. **Draft** (timed ``draft_ms``): ``Drafter.propose(dec, plan, rule)`` realises (part of) it: a
   ``DraftedTree`` (BFS order, siblings in draw order, ``parent_q`` the law each group was drawn from)
   or, for ``dsbd``, a ``DraftForest``.
3. **Verify** in one target call (timed ``verify_ms``): ``Verifier.score``; then ``decide`` walks the
   proposal with the rule and returns a typed outcome (``tree_verifier.TreeOutcome``,
   ``beams.layer_verifier.LayerOutcome``, ``beams.beam_verifier.BeamOutcome``).
4. **Commit**: the verifier keeps what was accepted in the target's cache and names the tokens; the
   drafter keeps its own state in step (``Drafter.observe``); the decoder appends the tokens
   (``Decoder.commit_tokens``: budget and EOS honoured).
5. **Learn**: ``Controller.update`` with the ``StepResult``; ``Controller.state`` (a typed
   ``step_state.ControllerState``) becomes ``StepRecord.controller``.

Each field of a ``StepRecord`` is set here once: ``timings`` (``draft_ms``, ``verify_ms``,
``total_ms`` from the plan to the record, ``bookkeeping_ms`` the rest), the call counts and the tokens
each call fed (``target_fed`` / ``draft_fed``: the target cache's and the drafter's ``fed`` logs over
the step, so a drafter that is part of the target, early exit, counts as draft calls), the verifier's
``Recorded`` part, the committed tokens and the controller's state. ``Decoder.lossless`` (the run's
rule keeps the output law) is set once, before the first step, from the verifier.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import torch

from specviz.algorithms.lens import step_lens
from specviz.algorithms.step_types import Recorded, StepResult
from specviz.step_state import ControllerState
from specviz.trace import CommittedToken, StepRecord

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder
    from specviz.algorithms.step_types import Controller, Drafter, Verifier


class StepClock:
    """Wall milliseconds of one step: ``phase(key)`` accumulates under ``key``; ``timings()`` adds
    ``total_ms`` (since the clock was made) and ``bookkeeping_ms`` (total minus the phases). On a GPU
    each phase synchronises first, so it times the work, not its launch."""

    def __init__(self, dec: "Decoder"):
        self._sync = dec.pair.device.type == "cuda"
        self._start = time.perf_counter()
        self._phases = {"draft_ms": 0.0, "verify_ms": 0.0}

    @contextmanager
    def phase(self, key: str) -> Iterator[None]:
        if self._sync:
            torch.cuda.synchronize()
        start = time.perf_counter()
        try:
            yield
        finally:
            if self._sync:
                torch.cuda.synchronize()
            self._phases[key] += 1000 * (time.perf_counter() - start)

    def timings(self) -> dict[str, float]:
        total = 1000 * (time.perf_counter() - self._start)
        return {
            **self._phases,
            "total_ms": total,
            "bookkeeping_ms": max(0.0, total - self._phases["draft_ms"] - self._phases["verify_ms"]),
        }


def record_step(
    index: int,
    n_before: int,
    recorded: Recorded,
    committed: list[CommittedToken],
    target_fed: list[int],
    draft_fed: list[int],
    controller: ControllerState | None,
    timings: dict[str, float],
) -> StepRecord:
    """The ``StepRecord`` of one step, every field from what the step did (module docstring)."""
    return StepRecord(
        index=index,
        n_before=n_before,
        forest=recorded.forest,
        committed=committed,
        controller=controller,
        tv=recorded.tv,
        timings=timings,
        target_calls=len(target_fed),
        draft_calls=len(draft_fed),
        positions=recorded.positions,
        target_fed=target_fed,
        draft_fed=draft_fed,
        rule=recorded.rule,
    )


def take_step(
    dec: "Decoder", index: int, drafter: "Drafter", verifier: "Verifier", controller: "Controller"
) -> tuple[StepRecord, StepResult]:
    """One plan-draft-verify-commit-learn step (module docstring): its record and its result."""
    clock = StepClock(dec)
    n_before = len(dec.output)
    plan = controller.step_plan(dec).cut(verifier.budget(dec))
    target_from, draft_from = dec.target.calls, len(drafter.fed)
    rule = verifier.rule(dec)
    if len(plan.shape):
        with clock.phase("draft_ms"):
            proposal = drafter.propose(dec, plan, rule)
    else:
        proposal = drafter.propose(dec, plan, rule)  # nothing to draft: no call, an empty proposal
    with clock.phase("verify_ms"):
        scores = verifier.score(dec, proposal)
    outcome = verifier.decide(dec, proposal, scores, plan)
    kept = verifier.commit(dec, proposal, outcome)
    drafter.observe(dec, proposal, outcome)
    committed = dec.commit_tokens(kept.tokens, kept.final)
    result = StepResult(index, plan, proposal, outcome, len(kept.tokens))
    controller.update(dec, result)
    recorded = verifier.record(dec, proposal, outcome)
    record = record_step(
        index,
        n_before,
        recorded,
        committed,
        dec.target.fed[target_from:],
        list(drafter.fed[draft_from:]),
        controller.state(result),
        clock.timings(),
    )
    if dec.target.lens:  # asked for (``record_lens``): read from the verify call's states, after the timings
        record.lens = step_lens(dec, proposal, outcome, committed, n_before)
    return record, result


def run_steps(
    dec: "Decoder", drafter: "Drafter", verifier: "Verifier", controller: "Controller"
) -> Iterator[StepRecord]:
    """Yield one ``StepRecord`` per step until the decoder finishes; ``Decoder.lossless`` is set here."""
    dec.lossless = verifier.lossless(dec)
    index = 0
    while not dec.finished:
        yield take_step(dec, index, drafter, verifier, controller)[0]
        index += 1
