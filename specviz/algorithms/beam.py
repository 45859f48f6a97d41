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
then the best finished beam of an earlier step (``beam_state``); ``StepRecord.positions`` has one
record per beam extended (``layer_positions``: p_beam on its row).

Registered ``lossless=False``: in specviz "lossless" means "the output law is the target's own
sampling law (``ar``)", and beam sampling's is not (it favours likely whole sequences).

The bookkeeping shared with ``dsbd`` lives here: ``Beam`` (tokens, how each was produced, score),
``Slot`` (where a beam sits in one model's cache), ``feed`` (one forward over several beams plus a
forest), ``Finished`` (EOS beams set aside) and ``settle`` (commit the shared prefix / the best beam
at the end).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import torch

from specviz.algorithms.decoder import Decoder
from specviz.algorithms.positions import Site, position_records, rounded
from specviz.algorithms.registry import Param, register
from specviz.core import beams as B
from specviz.core.trees import ROOT
from specviz.models.tree_forward import CachedLM
from specviz.trace import PositionRecord, StepRecord, TreeNode

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


def best_of(beams: Sequence[Beam]) -> int:
    """Index of the best of ``beams`` by mean target log-probability per generated token
    (``core.beams.best_beam``, ties to the first)."""
    return B.best_beam([b.loglik for b in beams], [len(b.tokens) for b in beams])


def ended(dec: Decoder, beam: Beam) -> bool:
    """Whether ``beam`` finished: its last token is EOS."""
    return bool(beam.tokens) and dec.is_eos(beam.tokens[-1])


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


@dataclass
class Finished:
    """The beams that ended with EOS, set aside: only the best so far (``beam``) can still be the
    output. ``row``: its index in the last step's beam list (``beam_state``); ``parent``: its row in
    the step before when it finished earlier (listed again, after the step's new beams), else None."""

    beam: Beam | None = None
    row: int | None = None
    parent: int | None = None

    def set_aside(self, dec: Decoder, new: Sequence[Beam]) -> list[int]:
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


def settle(dec: Decoder, step: StepRecord, live: Sequence[Beam], done: Beam | None, settled: int) -> int:
    """Commit the tokens every live beam and the best finished one agree on past ``settled``, or,
    once no beam is live or the live ones are at the budget, the rest of ``final_choice``; returns
    the new number of settled tokens."""
    cands = contenders(live, done)
    at_end = not live or len(live[0].tokens) >= dec.max_new_tokens
    if at_end:
        best = final_choice(live, done)
        upto = len(best.tokens)
    else:
        best, upto = cands[0], settled
        while all(upto < len(c.tokens) and c.tokens[upto] == best.tokens[upto] for c in cands):
            upto += 1
    dec.emit(step, [(best.tokens[i], best.kinds[i], None) for i in range(settled, upto)])
    if not dec.finished and at_end:
        dec.finish_reason = "length"
    return upto


def beam_state(dec: Decoder, new: Sequence[tuple[int, list[int]]], beams: Sequence[Beam],
               carried: Sequence[int], done: Finished) -> dict[str, Any]:
    """The per-step beam list for the trace: each new beam's parent (index into the previous step's
    ``beams``), its new tokens and text, its cumulative log-likelihood, length and whether it
    finished (EOS); then, if the best finished beam is from an earlier step, that beam again (parent:
    its row there) with no new tokens. ``best``: the row of ``final_choice``; ``carried``: the
    beams the next step extends; ``length``: the live beams' length (the best's when none is live)."""
    rows = [{"parent": parent, "tokens": toks, "text": "".join(dec.text(t) for t in toks),
             "loglik": round(b.loglik, 6), "length": len(b.tokens),
             "finished": ended(dec, b)} for (parent, toks), b in zip(new, beams)]
    listed = list(beams)
    if done.beam is not None and done.parent is not None:
        rows.append({"parent": done.parent, "tokens": [], "text": "", "loglik": round(done.beam.loglik, 6),
                     "length": len(done.beam.tokens), "finished": True})
        listed.append(done.beam)
    live = [beams[i] for i in carried]
    best = final_choice(live, done.beam)
    length = len(live[0].tokens) if live else len(best.tokens)
    return {"beams": rows, "best": next(i for i, b in enumerate(listed) if b is best), "carried": list(carried),
            "length": length}


def layer_positions(dec: Decoder, scores: torch.Tensor, p_beam: torch.Tensor, q_beam: torch.Tensor | None,
                    rows: Sequence[tuple[int | None, int]], tested: dict[int, list[int]],
                    produced: dict[int, list[int]], final_residual: torch.Tensor | None = None) -> list[PositionRecord]:
    """The ``PositionRecord`` of each row (parent) of one layer's candidate space (beams x V) that the
    target scored (a finite row of ``scores``) or whose drafts were tested; none if
    ``dec.record_top_k`` is 0. ``rows[j]``: the parent's node id (None: a root) and its beam;
    ``tested[j]`` / ``produced[j]``: tokens tested there in draw order / kept there.

    A layer is tested as a whole against the joint (Eq 1; Algorithm 1), so every value is on its
    scale, as ``TreeNode.p`` / ``.q``: ``p`` / ``q`` are ``p_beam`` / ``q_beam`` on the row (``q`` None
    when nothing was drafted); ``residual`` the layer's first residual norm(max(p_beam - q_beam, 0))
    on the row; ``final_residual`` the residual a failed layer's repair beam was drawn from.
    ``residual_mass`` stays None: TV(p, q) of one row is no rejection probability here (a draft's is
    the layer's TV(p_beam, q_beam)), so the chain-SD theory views leave these positions out."""
    k = dec.record_top_k
    if not k:
        return []
    width = len(rows)
    live = torch.isfinite(scores.reshape(width, -1)).any(dim=1)
    p_rows = p_beam.reshape(width, -1)
    q_rows = q_beam.reshape(width, -1) if q_beam is not None else None
    final = final_residual.reshape(width, -1) if final_residual is not None else None
    first = None
    if q_beam is not None:
        gap = torch.clamp(p_beam.double() - q_beam.double(), min=0.0)
        mass = float(gap.sum())
        first = (gap / mass if mass > 0 else p_beam.double()).reshape(width, -1)
    shown = [j for j in range(width) if bool(live[j]) or tested.get(j)]
    made = {j: produced.get(j, []) for j in shown}  # the first kept token is "produced"; the rest count as tested
    sites = [Site(rows[j][0], p_rows[j], None if q_rows is None else q_rows[j], tested.get(j, []) + made[j][1:],
                  made[j][0] if made[j] else None, None if final is None else final[j], rows[j][1]) for j in shown]
    out = position_records(sites, k, dec.text)
    if first is not None:
        for j, rec in zip(shown, out):
            rec.residual = rounded(first[j][torch.tensor(rec.ids)].tolist())
            rec.residual_mass = None
    return out


def by_row(candidates: Sequence[int], vocab: int) -> dict[int, list[int]]:
    """Flat candidates (beam x V) grouped by row: {row: [tokens in order]}."""
    out: dict[int, list[int]] = {}
    for c in candidates:
        r, t = B.split_candidate(c, vocab)
        out.setdefault(r, []).append(t)
    return out


@register("beam", description="Beam sampling (T > 0) / beam search (T = 0) with the target alone; "
                               "the reference for dsbd.",
          paper="Dynamic-Width Speculative Beam Decoding (arXiv 2409.16560), Eq 1", params=(WIDTH,),
          needs_draft=False, lossless=False, controller="beam")
def run_beam(dec: Decoder, width: int) -> Iterator[StepRecord]:
    beams = [Beam()]
    slots = [Slot(ROOT, list(dec.tokens))]
    rows_prev = [0]                        # the live beams' rows in the previous step's beam list
    done = Finished()
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
        new = [beams[r].extend([t], ["bonus"], float(flat[c])) for c, (r, t) in zip(kept, split)]
        live = done.set_aside(dec, new)
        beams = [new[i] for i in live]
        slots = keep_slots(dec.target, [(last[split[i][0]], [split[i][1]]) for i in live]) if live else []
        step.forest = [TreeNode(i, None, 0, t, dec.text(t), p=None if probs is None else float(probs[c]),
                                status="bonus", root=r) for i, (c, (r, t)) in enumerate(zip(kept, split))]
        if dec.record_top_k:
            law = probs if probs is not None else B.beam_distribution(scores, dec.sampling)
            step.positions = layer_positions(dec, scores, law, None, [(None, r) for r in range(len(last))], {},
                                             by_row(kept, vocab))
        step.rule = {"name": "beam_search" if dec.sampling.greedy else "beam_sampling"}  # core.rule_words
        settled = settle(dec, step, beams, done.beam, settled)
        dec.record_calls(step, before)
        step.controller = {"kind": "beam", **beam_state(dec, [(rows_prev[r], [t]) for r, t in split], new, live,
                                                        done)}
        step.timings = dec.timings
        rows_prev = live
        yield step
        index += 1
