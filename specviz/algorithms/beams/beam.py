"""``beam``: beam sampling (T > 0) or beam search (T = 0) with the target alone: the reference that
``dsbd`` reproduces ("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560, Eq 1).

Each step is one target call over the current beams (tree attention in one shared cache,
``CachedLM.keep``): every beam's next-token log-probabilities give the candidate scores
``logL_beam + log p(token | beam)`` over (beams x V); ``width`` new beams are drawn i.i.d. from
``p_beam = T(softmax(scores))`` (with replacement) or, at T = 0, the ``width`` best distinct
candidates are kept (``core.beams``). Width 1 is plain sampling / greedy decoding (``ar``).

Finished beams (EOS): a kept candidate whose token is EOS ends its beam. The beam is set aside and
the step's other beams go on; the next step again keeps ``width`` beams, from the live beams only.
The set-aside beams compete at the end with the live ones by mean target log-probability per
generated token (EOS included; ``core.beams.best_beam``), so only the best finished beam so far is
kept (``Finished``). The run ends when no beam is live or the live beams reach ``max_new_tokens``.
The paper does not specify EOS (Algorithm 1 has none; Sec 2.2 and 3.1 stop at "a length limit").
This is the official code's rule (``beam_speculative_sampling``: an EOS beam becomes a candidate
scored by its mean log-probability) and the usual one of beam search. Width 1 is still ``ar``: the
one beam ends at EOS.

Committed output: a token is committed once every live beam and the best finished one agree on it
(the settled shared prefix, which no later step can change); at the end the rest of the best of
them is committed. The trace keeps every beam: per step ``StepRecord.forest`` has one node per new
beam (``root`` = the beam it extends), and ``StepRecord.controller`` (kind ``beam``) lists the beams
with their new tokens, parent beam, cumulative log-likelihood, length and whether they finished,
then the best finished beam of an earlier step (``state.beam_rows``); ``StepRecord.positions``
has one record per beam extended (``positions.layer_positions``: p_beam on its row).

Registered ``lossless=False``: in specviz "lossless" means "the output law is the target's own
sampling law (``ar``)", and beam sampling's is not (it favours likely whole sequences).

Assembly on the step loop (``step_loop``): nothing drafted (``drafters.NoDrafter``), the width kept
by ``BeamWidth`` (below), the step decided by ``beam_verifier.BeamVerifier`` over the run's
``state.BeamState`` (the bookkeeping ``dsbd`` shares).
"""

from __future__ import annotations

from typing import Iterator

from specviz.algorithms.beams.beam_verifier import BeamVerifier
from specviz.algorithms.beams.state import BeamState
from specviz.algorithms.cost import int_param, per_step
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafters import NoDrafter
from specviz.algorithms.registry import Param, register
from specviz.algorithms.step_loop import run_steps
from specviz.algorithms.step_types import Controller, Plan, StepResult
from specviz.core.trees import TreeShape
from specviz.step_state import BeamSearchState
from specviz.trace import StepRecord

WIDTH = Param("width", 4, "int", 1, 32, help="beams kept per step")


class BeamWidth(Controller):
    """``beam``'s controller: nothing to draft, ``width`` beams kept every step; its state is the
    step's beam list (``state.beam_rows``, a ``step_state.BeamSearchState``)."""

    kind = "beam"

    def __init__(self, width: int):
        self.width = width

    def step_plan(self, dec: Decoder) -> Plan:
        return Plan(TreeShape(()), width=self.width)

    def state(self, result: StepResult) -> BeamSearchState:
        return BeamSearchState(beam_list=result.outcome.rows)


@register(
    "beam",
    description="Beam sampling (T > 0) / beam search (T = 0) with the target alone; the reference for dsbd.",
    paper="Dynamic-Width Speculative Beam Decoding (arXiv 2409.16560), Eq 1",
    params=(WIDTH,),
    drafter="none",
    lossless=False,
    controller="beam",
    color="#4f46e5",
    cost=lambda params, steps: per_step(max(1, int_param(params, "width")), "width", steps, models=1),
)
def run_beam(dec: Decoder, width: int) -> Iterator[StepRecord]:
    yield from run_steps(dec, NoDrafter(), BeamVerifier(BeamState.start(dec)), BeamWidth(width))
