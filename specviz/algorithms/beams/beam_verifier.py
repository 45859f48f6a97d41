"""``BeamVerifier``: one step of beam sampling (T > 0) or beam search (T = 0) with the target alone,
the reference ``dsbd`` reproduces ("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560, Eq 1).

Nothing is drafted; the "verification" is the target's own choice. One target call over the current
beams (tree attention in one shared cache) gives every beam's next-token log-probabilities, hence the
candidate scores ``logL_beam + log p(token | beam)`` over (beams x V); ``plan.width`` new beams are
drawn i.i.d. from ``p_beam = T(softmax(scores))`` (with replacement) or, at T = 0, the ``width`` best
distinct candidates are kept (``core.beams``). A kept candidate whose token is EOS ends its beam,
which is set aside (``state.Finished``); the rest go on. The tokens all beams agree on are
committed (``BeamState.settle``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from specviz.algorithms.beams.positions import by_row, layer_positions
from specviz.algorithms.beams.state import Beam, BeamState, beam_rows, feed, keep_slots, logprobs_at
from specviz.algorithms.step_types import Commit, DraftedTree, Plan, Recorded
from specviz.core import beams as B
from specviz.step_state import BeamList
from specviz.trace import TreeNode

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


@dataclass(frozen=True)
class BeamOutcome:
    """What one beam step decided: the candidate ``scores`` (beams x V), the law ``probs`` the beams
    were drawn from (None at T = 0), the ``kept`` candidates and their (row, token) ``split``, the
    pending index ``last`` of each beam's last token in the target cache, the ``new`` beams, the
    indices of those that go on (``live``) and the step's beam list (``rows``, ``state.beam_rows``)."""

    scores: torch.Tensor
    probs: torch.Tensor | None
    kept: list[int]
    split: list[tuple[int, int]]
    last: list[int]
    new: list[Beam]
    live: list[int]
    rows: BeamList


class BeamVerifier:
    """Beam sampling / beam search over ``state``'s live beams (module docstring)."""

    def __init__(self, state: BeamState):
        self.state = state

    def rule(self, dec: "Decoder") -> None:
        return None  # nothing is drafted

    def lossless(self, dec: "Decoder") -> bool:
        return True  # the target's own beam law; ``beam`` is registered lossy (its reference is not ``ar``)

    def budget(self, dec: "Decoder") -> int:
        return 0

    def score(self, dec: "Decoder", proposal: DraftedTree) -> tuple[torch.Tensor, int, list[int]]:
        start = len(dec.target.tree)
        logits, last, _ = feed(dec.target, self.state.slots)
        return logits, start, last

    def decide(
        self, dec: "Decoder", proposal: DraftedTree, scored: tuple[torch.Tensor, int, list[int]], plan: Plan
    ) -> BeamOutcome:
        logits, start, last = scored
        st = self.state
        scores = B.candidate_scores(
            torch.tensor([b.loglik for b in st.beams], dtype=torch.float64), logprobs_at(logits, start, last)
        )
        vocab = scores.shape[1]
        if dec.sampling.greedy:
            kept, probs = B.beam_search_select(scores, plan.width), None
        else:
            probs = B.beam_distribution(scores, dec.sampling)
            kept = B.sample_beams(probs, plan.width, dec.generator)
        flat = scores.reshape(-1)
        split = [B.split_candidate(c, vocab) for c in kept]
        new = [st.beams[r].extend([t], ["bonus"], float(flat[c])) for c, (r, t) in zip(kept, split)]
        live = st.done.set_aside(dec, new)
        rows = beam_rows(dec, [(st.rows[r], [t]) for r, t in split], new, live, st.done)
        return BeamOutcome(scores, probs, kept, split, last, new, live, rows)

    def commit(self, dec: "Decoder", proposal: DraftedTree, out: BeamOutcome) -> Commit:
        """Carry the live beams (their paths kept in the target cache) and settle what they agree on."""
        st = self.state
        st.beams = [out.new[i] for i in out.live]
        st.slots = (
            keep_slots(dec.target, [(out.last[out.split[i][0]], [out.split[i][1]]) for i in out.live])
            if out.live
            else []
        )
        st.rows = out.live
        return st.settle(dec)

    def record(self, dec: "Decoder", proposal: DraftedTree, out: BeamOutcome) -> Recorded:
        """One ``bonus`` node per new beam (``root`` = the beam it extends, ``p`` its p_beam) and one
        position per beam extended (p_beam on its row)."""
        forest = [
            TreeNode(
                i, None, 0, t, dec.text(t), p=None if out.probs is None else float(out.probs[c]), status="bonus", root=r
            )
            for i, (c, (r, t)) in enumerate(zip(out.kept, out.split))
        ]
        positions = []
        if dec.record_top_k:
            law = out.probs if out.probs is not None else B.beam_distribution(out.scores, dec.sampling)
            positions = layer_positions(
                dec,
                out.scores,
                law,
                None,
                [(None, r) for r in range(len(out.last))],
                {},
                by_row(out.kept, out.scores.shape[1]),
            )
        rule = {"name": "beam_search" if dec.sampling.greedy else "beam_sampling"}  # core.rule_words
        return Recorded(forest, positions, rule)
