"""``beam``: beam sampling (T > 0) or beam search (T = 0) with the target alone: the reference that
``dsbd`` reproduces ("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560, Eq 1).

Each step is one target call over the current beams (tree attention in one shared cache,
``CachedLM.keep``): every beam's next-token log-probabilities give the candidate scores
``logL_beam + log p(token | beam)`` over (beams x V); ``width`` new beams are drawn i.i.d. from
``p_beam = T(softmax(scores))`` (with replacement) or, at T = 0, the ``width`` best distinct
candidates are kept (``core.beams``). Width 1 is plain sampling / greedy decoding (``ar``).

Committed output: a token is committed once every beam agrees on it (the settled shared prefix,
which no later step can change); when the beams reach ``max_new_tokens`` the rest of the best beam
(highest mean target log-probability, ``core.beams.best_beam``) is committed. EOS is an ordinary
token inside a beam (beams run to the budget); the output is cut at the first EOS of what is
committed. The trace keeps every beam: per step ``StepRecord.forest`` has one node per new beam
(``root`` = the beam it extends), and ``StepRecord.controller`` (kind ``beam``) lists the beams with
their new tokens, parent beam and cumulative log-likelihood (``beam_state``).

Registered ``lossless=False``: in specviz "lossless" means "the output law is the target's own
sampling law (``ar``)", and beam sampling's is not (it favours likely whole sequences).

The bookkeeping shared with ``dsbd`` lives here: ``Beam`` (tokens, how each was produced, score),
``Slot`` (where a beam sits in one model's cache), ``feed`` (one forward over several beams plus a
forest) and ``settle`` (commit the shared prefix / the best beam at the end).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch

from specviz.algorithms.decoder import Decoder
from specviz.algorithms.registry import Param, register
from specviz.core import beams as B
from specviz.core.trees import ROOT
from specviz.models.tree_forward import CachedLM
from specviz.trace import StepRecord, TreeNode

WIDTH = Param("width", 4, "int", 1, 32, help="beams kept per step")


@dataclass
class Beam:
    """One hypothesis: its generated tokens, how each was produced (``draft``/``resampled``/``bonus``)
    and its cumulative target log-likelihood (untempered, unwarped: Eq 1's ``p``)."""

    tokens: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    loglik: float = 0.0

    def extend(self, tokens: Sequence[int], kinds: Sequence[str], loglik: float) -> "Beam":
        return Beam(self.tokens + list(tokens), self.kinds + list(kinds), loglik)


@dataclass
class Slot:
    """A beam's place in one model's cache: ``anchor`` the pending index of its last fed token
    (``ROOT``: the end of the prefix) and ``suffix`` the tokens not fed yet (never empty at a feed)."""

    anchor: int
    suffix: list[int]


def feed(lm: CachedLM, slots: Sequence[Slot], tokens: Sequence[int] = (),
         parents: Sequence[tuple[str, int]] = ()) -> tuple[torch.Tensor, list[int], list[int]]:
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


def settle(dec: Decoder, step: StepRecord, beams: Sequence[Beam], settled: int) -> int:
    """Commit the tokens every beam agrees on past ``settled`` (or, once the beams are at the budget,
    the rest of the best beam); returns the new number of settled tokens."""
    length = len(beams[0].tokens)
    if length >= dec.max_new_tokens:
        best = beams[B.best_beam([b.loglik for b in beams], [len(b.tokens) for b in beams])]
        upto = length
    else:
        best, upto = beams[0], settled
        while upto < length and all(b.tokens[upto] == best.tokens[upto] for b in beams):
            upto += 1
    dec.emit(step, [(best.tokens[i], best.kinds[i], None) for i in range(settled, upto)])
    if not dec.finished and length >= dec.max_new_tokens:
        dec.finish_reason = "length"
    return upto


def beam_state(dec: Decoder, new: Sequence[tuple[int, list[int]]], beams: Sequence[Beam],
               carried: Sequence[int]) -> dict[str, Any]:
    """The per-step beam list for the trace: each beam's parent (index into the previous step's
    ``beams``), its new tokens and text, its cumulative log-likelihood; ``best`` (by
    ``core.beams.best_beam``) and ``carried`` (the beams the next step extends)."""
    rows = [{"parent": parent, "tokens": toks, "text": "".join(dec.text(t) for t in toks),
             "loglik": round(b.loglik, 6)} for (parent, toks), b in zip(new, beams)]
    best = B.best_beam([b.loglik for b in beams], [len(b.tokens) for b in beams])
    return {"beams": rows, "best": best, "carried": list(carried), "length": len(beams[0].tokens)}


@register("beam", description="Beam sampling (T > 0) / beam search (T = 0) with the target alone; "
                               "the reference for dsbd.",
          paper="Dynamic-Width Speculative Beam Decoding (arXiv 2409.16560), Eq 1", params=(WIDTH,),
          needs_draft=False, lossless=False, controller="beam")
def run_beam(dec: Decoder, width: int) -> Iterator[StepRecord]:
    beams = [Beam()]
    slots = [Slot(ROOT, list(dec.tokens))]
    settled, index = 0, 0
    while not dec.finished:
        step = dec.new_step(index)
        before = dec.target.calls
        start = len(dec.target.tree)
        with dec.timed("verify_ms"):
            logits, last, _ = feed(dec.target, slots)
        scores = B.candidate_scores(torch.tensor([b.loglik for b in beams], dtype=torch.float64),
                                    logprobs_at(logits, start, last))
        vocab = scores.shape[1]
        if dec.sampling.greedy:
            kept, probs = B.beam_search_select(scores, width), None
        else:
            probs = B.beam_distribution(scores, dec.sampling)
            kept = B.sample_beams(probs, width, dec.generator)
        flat = scores.reshape(-1)
        split = [B.split_candidate(c, vocab) for c in kept]
        beams = [beams[r].extend([t], ["bonus"], float(flat[c])) for c, (r, t) in zip(kept, split)]
        slots = keep_slots(dec.target, [(last[r], [t]) for r, t in split])
        step.forest = [TreeNode(i, None, 0, t, dec.text(t), p=None if probs is None else float(probs[c]),
                                status="bonus", root=r) for i, (c, (r, t)) in enumerate(zip(kept, split))]
        settled = settle(dec, step, beams, settled)
        step.target_calls = dec.target.calls - before
        step.controller = {"kind": "beam", **beam_state(dec, [(r, [t]) for r, t in split], beams,
                                                        range(len(beams)))}
        step.timings = dec.timings
        yield step
        index += 1
