"""``dsbd``: Dynamic-Width Speculative Beam Decoding (Qin et al., AAAI 2025, arXiv 2409.16560).

One iteration = one target call:

1. **Draft** (``forest.ForestDrafter``): the draft model beam-samples ``gamma`` layers of ``width``
   (W_S) beams over the current beams: a forest with one tree per beam (Sec 3.1, Fig 2).
2. **Verify the forest in one target forward** (Sec 3.3, Fig 3): every beam's uncached token and
   every forest node in one ``CachedLM.forward`` over the shared cache (tree attention), so every
   node's target distribution is known.
3. **Layer by layer** (Algorithm 1, corrected; ``core.beams``): layer l's target beam distribution
   ``p_beam`` over (layer l - 1 nodes x V) weights each parent by its cumulative target
   log-likelihood, parents rejected earlier get zero mass (Eq 1); the width W_L^(l) is chosen
   from (p_beam, q_beam) before looking at the drafts (``WidthController``: Eqs 2-7); the drafts
   are tested in draw order with ``min(1, p'/q_beam)``, reset after an acceptance, one residual
   after each rejection (``LayerRule``; the printed ratio ``q/p'`` is ``literal_ratio=True``). A
   layer with W_L^(l) acceptances passes; the first layer that does not is repaired (one beam from
   the residual, the rest fresh from p_beam) and ends the iteration; after gamma passed layers a
   bonus layer samples the beams from the target. At T = 0 the layer keeps the target's beam-search
   top W (``core.beams.verify_layer_greedy``).
4. **Keep** the output beams in both caches (``CachedLM.keep``); with ``single_beam`` (the
   memory-saving mode, Sec 3.4) only the best output beam (highest target log-likelihood; all
   outputs have equal length) is carried into the next iteration.

Widths: ``dynamic=False`` keeps W_L = ``min_width`` in every layer (and as the number of output
beams): exactly fixed-width beam sampling with ``min_width`` beams, i.e. ``beam`` with
``width=min_width`` in law (T > 0) and token for token (T = 0). With ``dynamic=True`` each layer is
still an exact beam-sampling step *for the width it chose*, but the width changes with the context,
so the run is not fixed-width beam sampling; the number of output beams is the width of the layer
the iteration ended in (the last draft layer's after a bonus layer). At T = 0 p_beam is one-hot on
the target's best candidate c*, so the law of Eqs 2-3 is Binomial(W_S, q_beam(c*)) and the run is
beam search with a per-position width schedule: a narrowing keeps the best prefix so far, which can
end below greedy decoding (docs/algorithms.md). The memory-saving mode is not fixed-width beam
sampling either. Registered ``lossless=False`` like ``beam``: its reference is
``beam``, not ``ar``.

Committing and EOS as in ``beam``: an accepted EOS draft (in a passed layer) or an EOS output beam
finishes its beam, which is set aside (``beam.Finished``) and is no parent in the next layer; the
iteration ends early when every kept beam finished. Counting: ``target_calls`` is the target
cache's call count over the iteration (1), ``draft_calls`` the draft's (the forest's depth,
``gamma`` unless cut by the budget or a layer of EOS drafts). ``StepRecord.controller`` (kind ``dsbd``):
per layer the parents still valid, the drafts, the chosen width and its unfloored value, the law
P(m accepted) and its survival function behind the choice with the threshold, accepted and kept
counts and whether the layer passed; ``l_last`` (the layer where the iteration ended), ``kept``
(trace node ids of the output beams) and the beams (``beam.beam_state``). ``StepRecord.positions``:
one record per parent row of each verified layer, on the joint scale (``beam.layer_positions``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import torch

from specviz import validation
from specviz.algorithms.beam import (Beam, Finished, Slot, beam_state, best_of, by_row, feed, keep_slots,
                                    layer_positions, logprobs_at, settle)
from specviz.algorithms.controllers import Controller
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.forest import DraftForest, ForestDrafter
from specviz.algorithms.registry import Param, register
from specviz.core import beams as B
from specviz.core.trees import ROOT, TreeShape, chain_shape
from specviz.errors import InvalidParameterError
from specviz.trace import PositionRecord, StepRecord, TreeNode

PARAMS = (
    Param("width", 4, "int", 1, 16, help="W_S: draft beams per layer"),
    Param("min_width", 1, "int", 1, 16, help="W_min: floor of the width (the fixed width when dynamic is off)"),
    Param("threshold", 0.7, "float", 0.0, 1.0, help="t: keep the largest K with P(#accepted >= K) >= t"),
    Param("gamma", 3, "int", 1, 16, help="draft layers per iteration"),
    Param("dynamic", True, "bool", help="dynamic width (Eqs 5-7); off: fixed at min_width, exact beam sampling"),
    Param("single_beam", False, "bool", help="memory-saving mode: carry only the best beam (Sec 3.4)"),
    Param("literal_ratio", False, "bool", help="Algorithm 1's printed ratio min(1, q/p') (wrong; for comparison)"),
)



def check_widths(params: dict[str, Any]) -> None:
    """``min_width`` is the width's floor, so it may not exceed ``width``."""
    if params["min_width"] > params["width"]:
        raise validation.about(InvalidParameterError(
            f"dsbd: parameter 'min_width' must be in [1, width = {params['width']}], got {params['min_width']}."),
            "min_width", "dsbd: parameter 'min_width'")


_DIGITS = 6
_KIND = {"accepted": "draft", "residual": "resampled", "target": "resampled", "fresh": "bonus", "bonus": "bonus"}


class WidthController(Controller):
    """The width rule as the engine's controller: ``plan`` is the forest depth; ``choose`` is
    W_L^(l) from (p_beam, q_beam) before a layer is verified (Eqs 2-7, ``core.beams.width_rule``)."""

    kind = "dsbd"

    def __init__(self, width: int, min_width: int, threshold: float, gamma: int, dynamic: bool):
        self.width, self.min_width, self.threshold = width, min_width, threshold
        self.gamma, self.dynamic = gamma, dynamic

    def plan(self, dec: Decoder) -> TreeShape:
        return chain_shape(self.gamma)

    def choose(self, p_beam: torch.Tensor, q_beam: torch.Tensor) -> B.WidthChoice:
        return B.width_rule(p_beam, q_beam, self.width, self.threshold, self.min_width, self.dynamic)


@dataclass(frozen=True)
class LayerRule:
    """The acceptance rule of one beam layer (Algorithm 1, corrected): ``verify_layer`` at T > 0,
    ``verify_layer_greedy`` (the target's beam-search top W) at T = 0."""

    literal_ratio: bool = False

    @property
    def lossless(self) -> bool:
        return not self.literal_ratio

    def verify(self, dec: Decoder, p_beam: torch.Tensor, q_beam: torch.Tensor, scores: torch.Tensor,
               drafts: list[int], width: int) -> B.LayerVerdict:
        if dec.sampling.greedy:
            return B.verify_layer_greedy(scores, drafts, width)
        return B.verify_layer(p_beam, q_beam, drafts, width, dec.generator, paper_literal_ratio=self.literal_ratio)

    def record(self, greedy: bool) -> dict[str, Any]:
        """``StepRecord.rule`` (``core.rule_words``: ``dsbd_greedy`` at T = 0, else ``dsbd_layer``)."""
        return {"name": "dsbd_greedy"} if greedy else {"name": "dsbd_layer", "literal_ratio": self.literal_ratio}


def _rounded(values) -> list[float]:
    return [float(f"{v:.{_DIGITS}g}") for v in values]


def _draft_chain(forest: DraftForest, slot: Slot, root: int, path: list[int], token: int) -> tuple[int, list[int]]:
    """Where a new beam sits in the draft's cache: its deepest fed node and the tokens after it."""
    fed = [i for i, n in enumerate(path) if n in forest.draft_index]
    if fed:
        k = fed[-1]
        return forest.draft_index[path[k]], [forest.tokens[n] for n in path[k + 1:]] + [token]
    tail = [forest.tokens[n] for n in path] + [token]
    if forest.root_index:
        return forest.root_index[root], tail
    return slot.anchor, slot.suffix + tail


@dataclass
class Iteration:
    """What verifying one forest decided (Algorithm 1): ``levels`` for the trace; ``outputs`` the
    beams of the layer the iteration ended in as (candidate, source, index of the kept draft or
    None) over that layer's candidate space, whose rows extend ``par_ids`` (None: a root) with
    ``scores`` and ``p_beam``; ``ended``: drafts accepted in a passed layer that are EOS (finished
    beams, set aside), in order; ``positions``: the verified positions, layer by layer
    (``beam.layer_positions``)."""

    levels: list[dict[str, Any]]
    outputs: list[tuple[int, str, int | None]]
    par_ids: list[int | None]
    scores: torch.Tensor
    p_beam: torch.Tensor
    ended: list[int]
    positions: list[PositionRecord]


def verify_forest(dec: Decoder, control: WidthController, rule: LayerRule, forest: DraftForest, step: StepRecord,
                  root_ll: torch.Tensor, root_lp: torch.Tensor, node_ll: torch.Tensor,
                  node_lp: torch.Tensor) -> Iteration:
    """Verify the forest layer by layer (Algorithm 1, corrected; widths by Eqs 2-7) and fill the
    drafted nodes of ``step.forest``. A layer's parents are the accepted drafts of the layer before
    that are not EOS (a finished beam is not extended); the iteration ends at the first failed
    layer, when no parent is left, or after a bonus layer."""
    par_ids: list[int | None] = [None] * len(root_ll)
    par_ll, par_lp = root_ll, root_lp
    valid = torch.ones(len(root_ll), dtype=torch.bool)
    levels: list[dict[str, Any]] = []
    ended: list[int] = []
    positions: list[PositionRecord] = []
    vocab = root_lp.shape[1]
    out_width = control.min_width

    def rows() -> list[tuple[int | None, int]]:
        return [(None, j) if par is None else (par, forest.tree[par]) for j, par in enumerate(par_ids)]

    for lv in range(1, len(forest.layers) + 1):
        scores = B.candidate_scores(par_ll, par_lp, valid)
        p_beam = B.beam_distribution(scores, dec.sampling)
        q_beam = forest.q_beam[lv - 1]
        nodes = forest.layers[lv - 1]
        choice = control.choose(p_beam, q_beam)
        verdict = rule.verify(dec, p_beam, q_beam, scores, [forest.candidate[n] for n in nodes], choice.width)
        for j, n in enumerate(nodes):
            tn = step.forest[n]
            tn.p = float(p_beam[forest.candidate[n]])
            tn.status = "not_reached" if verdict.status[j] == "skipped" else verdict.status[j]
            tn.accept_prob, tn.draw, tn.p_residual = verdict.accept_probs[j], verdict.draws[j], verdict.p_residual[j]
        levels.append({"layer": lv, "parents": int(valid.sum()), "candidates": len(nodes), "width": choice.width,
                       "unfloored": choice.unfloored, "p_accept": _rounded(choice.law),
                       "survival": _rounded(choice.survival), "threshold": control.threshold,
                       "min_width": control.min_width, "accepted": verdict.n_accepted, "kept": len(verdict.kept),
                       "passed": verdict.passed})
        tested = by_row([forest.candidate[n] for j, n in enumerate(nodes)
                         if verdict.status[j] in ("accepted", "rejected")], vocab)
        positions += layer_positions(dec, scores, p_beam, q_beam, rows(), tested, by_row(verdict.kept, vocab),
                                     verdict.final_residual)
        out_width = choice.width
        if not verdict.passed:
            outputs = list(zip(verdict.kept, verdict.sources, verdict.kept_draft))
            return Iteration(levels, outputs, par_ids, scores, p_beam, ended, positions)
        accepted = [nodes[k] for k in verdict.kept_draft if k is not None]
        ended += [n for n in accepted if dec.is_eos(forest.tokens[n])]
        par_ids = list(nodes)
        par_ll, par_lp = node_ll[nodes], node_lp[nodes]
        valid = torch.tensor([n in accepted and not dec.is_eos(forest.tokens[n]) for n in nodes], dtype=torch.bool)
        if not valid.any():
            return Iteration(levels, [], par_ids, scores, p_beam, ended, positions)
    scores = B.candidate_scores(par_ll, par_lp, valid)
    p_beam = B.beam_distribution(scores, dec.sampling)
    if dec.sampling.greedy:
        picks = B.beam_search_select(scores, out_width)
    else:
        picks = B.sample_beams(p_beam, out_width, dec.generator)
    levels.append({"layer": len(forest.layers) + 1, "bonus": True, "parents": int(valid.sum()), "kept": len(picks)})
    positions += layer_positions(dec, scores, p_beam, None, rows(), {}, by_row(picks, vocab))
    return Iteration(levels, [(c, "bonus", None) for c in picks], par_ids, scores, p_beam, ended, positions)


@register("dsbd", description="Dynamic-width speculative beam decoding: a drafted beam forest, verified "
                               "layer by layer in one target call.",
          paper="Dynamic-Width Speculative Beam Decoding (arXiv 2409.16560), Algorithm 1, Eqs 1-7",
          params=PARAMS, lossless=False, controller="dsbd", check=check_widths)
def run_dsbd(dec: Decoder, width: int, min_width: int, threshold: float, gamma: int, dynamic: bool,
             single_beam: bool, literal_ratio: bool) -> Iterator[StepRecord]:
    rule = LayerRule(literal_ratio)
    dec.lossless = rule.lossless
    control = WidthController(width, min_width, threshold, gamma, dynamic)
    drafter = ForestDrafter(dec.draft)
    beams = [Beam()]
    tslots = [Slot(ROOT, list(dec.tokens))]
    dslots = [Slot(ROOT, list(dec.tokens))]
    roots_prev = [0]
    done = Finished()
    settled, index = 0, 0
    while not dec.finished:
        step = dec.new_step(index)
        t_before, d_before = dec.target.calls, len(drafter.fed)
        g = min(len(control.plan(dec)), dec.max_new_tokens - len(beams[0].tokens) - 1)
        with dec.timed("draft_ms"):
            forest = drafter.propose(dec, dslots, g, width)
        start = len(dec.target.tree)
        with dec.timed("verify_ms"):
            logits, troot, tnode = feed(dec.target, tslots, forest.tokens,
                                        [("root", forest.row[i]) if forest.parent[i] is None
                                         else ("node", forest.parent[i]) for i in range(len(forest))])
        root_lp = logprobs_at(logits, start, troot)
        node_lp = logprobs_at(logits, start, tnode) if len(forest) else root_lp[:0]
        root_ll = torch.tensor([b.loglik for b in beams], dtype=torch.float64)
        node_ll = torch.zeros(len(forest), dtype=torch.float64)
        for i in range(len(forest)):
            par = forest.parent[i]
            base = root_ll[forest.row[i]] if par is None else node_ll[par]
            lp = root_lp[forest.row[i]] if par is None else node_lp[par]
            node_ll[i] = base + lp[forest.tokens[i]]
        step.forest = [TreeNode(i, forest.parent[i], forest.layer[i] - 1, t, dec.text(t),
                                q=float(forest.q_beam[forest.layer[i] - 1][forest.candidate[i]]),
                                root=forest.tree[i]) for i, t in enumerate(forest.tokens)]
        it = verify_forest(dec, control, rule, forest, step, root_ll, root_lp, node_ll, node_lp)
        step.positions = it.positions
        step.rule = rule.record(dec.sampling.greedy)
        l_last = len(it.levels)
        p_out = None if dec.sampling.greedy else it.p_beam

        new_beams, new_rows, kept_nodes = [], [], []
        chains: list[tuple[tuple[int, list[int]], tuple[int, list[int]]] | None] = []
        for n in it.ended:                                        # finished in a passed layer
            root, path = forest.tree[n], forest.path(n)
            toks = [forest.tokens[m] for m in path]
            new_beams.append(beams[root].extend(toks, ["draft"] * len(path), float(node_ll[n])))
            new_rows.append((roots_prev[root], toks))
            kept_nodes.append(n)
            chains.append(None)
        vocab = it.scores.shape[1]
        flat = it.scores.reshape(-1)
        for c, src, kd in it.outputs:
            r, t = B.split_candidate(c, vocab)
            parent = it.par_ids[r]
            root = r if parent is None else forest.tree[parent]
            path = forest.path(parent)
            toks = [forest.tokens[n] for n in path] + [t]
            new_beams.append(beams[root].extend(toks, ["draft"] * len(path) + [_KIND[src]], float(flat[c])))
            new_rows.append((roots_prev[root], toks))
            chains.append(((troot[root] if parent is None else tnode[parent], [t]),
                           _draft_chain(forest, dslots[root], root, path, t)))
            if src == "accepted" and kd is not None:
                kept_nodes.append(forest.layers[l_last - 1][kd])
            else:
                kept_nodes.append(len(step.forest))
                step.forest.append(TreeNode(len(step.forest), parent, l_last - 1, t, dec.text(t),
                                            p=None if p_out is None else float(p_out[c]),
                                            status="resampled" if _KIND[src] == "resampled" else "bonus", root=root))
        carried = done.set_aside(dec, new_beams)
        if single_beam and carried:
            carried = [carried[best_of([new_beams[i] for i in carried])]]
        beams = [new_beams[i] for i in carried]
        if carried:
            tslots = keep_slots(dec.target, [chains[i][0] for i in carried])
            dslots = keep_slots(dec.draft, [chains[i][1] for i in carried])
        settled = settle(dec, step, beams, done.beam, settled)
        dec.record_calls(step, t_before, drafter.fed, d_before)
        step.controller = {"kind": "dsbd", "gamma": len(forest.layers), "drafts": width, "min_width": min_width,
                           "threshold": threshold, "dynamic": dynamic, "single_beam": single_beam,
                           "l_last": l_last, "levels": it.levels, "kept": kept_nodes,
                           **beam_state(dec, new_rows, new_beams, carried, done)}
        step.timings = dec.timings
        roots_prev = carried
        yield step
        index += 1
