"""The state a beam run carries from step to step, shared by ``beam`` and ``dsbd``
("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560).

* ``Beam``: one hypothesis (tokens, how each was produced, cumulative target log-likelihood: Eq 1's
  ``p``, untempered and unwarped); ``Slot``: where a beam sits in one model's cache; ``feed``: one
  forward over several beams plus a forest (tree attention in one shared cache, ``CachedLM.forward``),
  ``keep_slots``: keep the new beams' paths (``CachedLM.keep``).
* ``Finished``: the beams that ended with EOS, set aside; only the best so far can still be the
  output. The paper does not specify EOS (Algorithm 1 has none; Sec 2.2 and 3.1 stop at "a length
  limit"); this is the official code's rule (``beam_speculative_sampling``: an EOS beam becomes a
  candidate scored by its mean log-probability) and the usual one of beam search.
* ``BeamState``: the live beams, their target cache slots, their rows in the previous step's beam
  list, the finished beam and how many output tokens are settled; ``settle``: the tokens every live
  beam and the best finished one agree on (no later step can change them), or at the end the rest of
  the best beam; ``beam_rows``: the step's beam list for ``StepRecord.controller``
  (``step_state.BeamList``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import torch

from specviz.algorithms.step_types import Commit
from specviz.core import beams as B
from specviz.core.trees import ROOT
from specviz.models.tree_forward import CachedLM
from specviz.step_state import BeamList, BeamRow

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


@dataclass
class Beam:
    """One hypothesis: its generated tokens, how each was produced (``draft``/``resampled``/``bonus``)
    and its cumulative target log-likelihood (untempered, unwarped: Eq 1's ``p``)."""

    tokens: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    loglik: float = 0.0

    def extend(self, tokens: Sequence[int], kinds: Sequence[str], loglik: float) -> "Beam":
        return Beam(self.tokens + list(tokens), self.kinds + list(kinds), loglik)


def best_of(beams: Sequence[Beam]) -> int:
    """Index of the best of ``beams`` by mean target log-probability per generated token
    (``core.beams.best_beam``, ties to the first)."""
    return B.best_beam([b.loglik for b in beams], [len(b.tokens) for b in beams])


def ended(dec: "Decoder", beam: Beam) -> bool:
    """Whether ``beam`` finished: its last token is EOS."""
    return bool(beam.tokens) and dec.is_eos(beam.tokens[-1])


@dataclass
class Slot:
    """A beam's place in one model's cache: ``anchor`` the pending index of its last fed token
    (``ROOT``: the end of the prefix) and ``suffix`` the tokens not fed yet (never empty at a feed)."""

    anchor: int
    suffix: list[int]


def feed(
    lm: CachedLM, slots: Sequence[Slot], tokens: Sequence[int] = (), parents: Sequence[tuple[str, int]] = ()
) -> tuple[torch.Tensor, list[int], list[int]]:
    """One forward: every slot's suffix (a chain under its anchor), then extra nodes whose parent is
    ``("root", b)`` (the last suffix token of slot b), ``("node", j)`` (extra node j, j earlier) or
    ``("cached", i)`` (pending node i already in the cache).

    Returns the logits of all new nodes, the pending index of each slot's last suffix token and of
    each extra node (the rows of the logits are these indices minus the pending size before)."""
    start = len(lm.tree)
    toks: list[int] = []
    pars: list[int] = []
    last: list[int] = []
    for s in slots:
        for i, t in enumerate(s.suffix):
            pars.append(s.anchor if i == 0 else start + len(toks) - 1)
            toks.append(t)
        last.append(start + len(toks) - 1)
    nodes: list[int] = []
    for t, (kind, j) in zip(tokens, parents):
        pars.append(last[j] if kind == "root" else nodes[j] if kind == "node" else j)
        nodes.append(start + len(toks))
        toks.append(t)
    logits = lm.forward(toks, pars)
    return logits, last, nodes


def logprobs_at(logits: torch.Tensor, start: int, indices: Sequence[int]) -> torch.Tensor:
    """``[len(indices), V]`` float64 log-probabilities (unwarped) at the given pending indices."""
    rows = torch.as_tensor([i - start for i in indices], dtype=torch.long)
    return torch.log_softmax(logits[rows].double().cpu(), -1)


def keep_slots(lm: CachedLM, chains: Sequence[tuple[int, list[int]]]) -> list[Slot]:
    """Keep, per new beam, the cache path ending at pending index ``chains[i][0]`` (``ROOT``: none);
    its unfed tokens are ``chains[i][1]``. Returns the new slots (``CachedLM.keep``)."""
    paths = [lm.tree.path(a) if a != ROOT else [] for a, _ in chains]
    anchors = lm.keep(paths)
    return [Slot(a, list(suffix)) for a, (_, suffix) in zip(anchors, chains)]


@dataclass
class Finished:
    """The beams that ended with EOS, set aside: only the best so far (``beam``) can still be the
    output. ``row``: its index in the last step's beam list (``beam_rows``); ``parent``: its row in
    the step before when it finished earlier (listed again, after the step's new beams), else None."""

    beam: Beam | None = None
    row: int | None = None
    parent: int | None = None

    def set_aside(self, dec: "Decoder", new: Sequence[Beam]) -> list[int]:
        """Set aside the ``new`` beams that end with EOS, keep the best finished one (an earlier one
        first on ties, then in order) and return the indices of the beams that go on."""
        done = [i for i, b in enumerate(new) if ended(dec, b)]
        pool = contenders([new[i] for i in done], self.beam)
        self.parent = None
        if pool:
            k = best_of(pool)
            if self.beam is None or k > 0:
                self.beam, self.row = pool[k], done[k - (self.beam is not None)]
            else:
                self.parent, self.row = self.row, len(new)
        return [i for i in range(len(new)) if i not in done]


def contenders(live: Sequence[Beam], done: Beam | None) -> list[Beam]:
    """The beams that can still be the output: the best finished one first, then ``live``."""
    return ([done] if done is not None else []) + list(live)


def final_choice(live: Sequence[Beam], done: Beam | None) -> Beam:
    """The output if the run stopped now: the best of ``contenders`` (``best_of``)."""
    cands = contenders(live, done)
    return cands[best_of(cands)]


def beam_rows(
    dec: "Decoder", new: Sequence[tuple[int, list[int]]], beams: Sequence[Beam], carried: Sequence[int], done: Finished
) -> BeamList:
    """The per-step beam list for the trace: each new beam's parent (index into the previous step's
    ``beams``), its new tokens and text, its cumulative log-likelihood, length and whether it
    finished (EOS); then, if the best finished beam is from an earlier step, that beam again (parent:
    its row there) with no new tokens. ``best``: the row of ``final_choice``; ``carried``: the
    beams the next step extends; ``length``: the live beams' length (the best's when none is live)."""
    rows = [
        BeamRow(
            parent, tuple(toks), "".join(dec.text(t) for t in toks), round(b.loglik, 6), len(b.tokens), ended(dec, b)
        )
        for (parent, toks), b in zip(new, beams)
    ]
    listed = list(beams)
    if done.beam is not None and done.parent is not None:
        rows.append(BeamRow(done.parent, (), "", round(done.beam.loglik, 6), len(done.beam.tokens), True))
        listed.append(done.beam)
    live = [beams[i] for i in carried]
    best = final_choice(live, done.beam)
    length = len(live[0].tokens) if live else len(best.tokens)
    return BeamList(tuple(rows), next(i for i, b in enumerate(listed) if b is best), tuple(carried), length)


@dataclass
class BeamState:
    """What a beam run carries between steps: the live ``beams``, their ``slots`` in the target's
    cache, their ``rows`` in the previous step's beam list, the ``done`` (finished) beam and how many
    output tokens are ``settled``."""

    beams: list[Beam]
    slots: list[Slot]
    rows: list[int] = field(default_factory=lambda: [0])
    done: Finished = field(default_factory=Finished)
    settled: int = 0

    @classmethod
    def start(cls, dec: "Decoder") -> "BeamState":
        """One empty beam over the prompt, nothing of it cached yet."""
        return cls([Beam()], [Slot(ROOT, list(dec.tokens))])

    def settle(self, dec: "Decoder") -> Commit:
        """The tokens every live beam and the best finished one agree on past ``settled``, or, once no
        beam is live or the live ones are at the budget, the rest of ``final_choice`` (``final``)."""
        live, done = self.beams, self.done.beam
        cands = contenders(live, done)
        at_end = not live or len(live[0].tokens) >= dec.max_new_tokens
        if at_end:
            best = final_choice(live, done)
            upto = len(best.tokens)
        else:
            best, upto = cands[0], self.settled
            while all(upto < len(c.tokens) and c.tokens[upto] == best.tokens[upto] for c in cands):
                upto += 1
        tokens = [(best.tokens[i], best.kinds[i], None) for i in range(self.settled, upto)]
        self.settled = upto
        return Commit(tokens, final=at_end)
