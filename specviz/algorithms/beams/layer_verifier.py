"""``LayerVerifier``: DSBD's verification of a drafted beam forest, layer by layer, in one target
call ("Dynamic-Width Speculative Beam Decoding", Qin et al., AAAI 2025, arXiv 2409.16560, Sec 3.3,
Algorithm 1, corrected; ``core.beams``).

**Score** (Sec 3.3, Fig 3): every beam's uncached token and every forest node in one
``CachedLM.forward`` over the shared cache (tree attention), so every node's target distribution is
known.

**Walk** (``walk_layers``): layer l's target beam distribution ``p_beam`` over (layer l - 1 nodes x
V) weights each parent by its cumulative target log-likelihood, parents rejected earlier get zero mass
(Eq 1); the width W_L^(l) is chosen from (p_beam, q_beam) before looking at the drafts (the plan's
``layer_width``: Eqs 2-7); the drafts are tested in draw order with ``min(1, p'/q_beam)``, reset after
an acceptance, one residual after each rejection (``LayerRule``; the printed ratio ``q/p'`` is
``literal_ratio=True``). A layer with W_L^(l) acceptances passes; the first layer that does not is
repaired (one beam from the residual, the rest fresh from p_beam) and ends the iteration; after every
drafted layer passed a bonus layer samples the beams from the target. At T = 0 the layer keeps the
target's beam-search top W (``core.beams.verify_layer_greedy``). A layer's parents are the accepted
drafts of the layer before that are not EOS (a finished beam is not extended); the iteration also
ends when no parent is left.

**Decide** (``LayerVerifier.decide``): the walk, then the output beams (the accepted EOS drafts of
passed layers, finished, then the beams of the layer the iteration ended in), the finished ones set
aside (``state.Finished``) and, with ``single_beam`` (the memory-saving mode, Sec 3.4), only the
best output beam (highest target log-likelihood; all outputs have equal length) carried on. The
outcome (``LayerOutcome``) is typed and recording is separate (``LayerVerifier.record``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from specviz.algorithms.beams.forest import DraftForest
from specviz.algorithms.beams.positions import by_row, layer_positions
from specviz.algorithms.beams.state import Beam, BeamState, beam_rows, best_of, feed, keep_slots, logprobs_at
from specviz.algorithms.step_types import Commit, LayerWidth, Plan, Recorded
from specviz.core import beams as B
from specviz.step_state import BeamList
from specviz.trace import TreeNode

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder

# how an output beam's last token was produced, by its source in ``core.beams.LayerVerdict``
KIND = {"accepted": "draft", "residual": "resampled", "target": "resampled", "fresh": "bonus", "bonus": "bonus"}


@dataclass(frozen=True)
class LayerRule:
    """The acceptance rule of one beam layer (Algorithm 1, corrected): ``verify_layer`` at T > 0,
    ``verify_layer_greedy`` (the target's beam-search top W) at T = 0."""

    literal_ratio: bool = False
    output_width: str = "paper"  # beams an iteration outputs: "paper" W_L^(l), "code" W_S (``walk_layers``)

    @property
    def lossless(self) -> bool:
        return not self.literal_ratio

    def out_width(self, widths: LayerWidth, chosen: int) -> int:
        """Beams out of a failed layer or the bonus layer: the paper's W_L^(l) (``chosen``; Algorithm 1
        "sample W_L beams") or, with ``output_width="code"``, the official code's W_S (``widths.drafts``:
        a failed layer is filled up to W_S and the bonus layer samples W_S beams)."""
        return max(widths.drafts, chosen) if self.output_width == "code" else chosen

    def verify(
        self,
        dec: "Decoder",
        p_beam: torch.Tensor,
        q_beam: torch.Tensor,
        scores: torch.Tensor,
        drafts: list[int],
        width: int,
        fill_to: int | None = None,
    ) -> B.LayerVerdict:
        """One layer; ``fill_to``: beams a failed layer returns at T > 0 (default ``width``). At T = 0 a
        layer keeps the target's beam-search top ``width`` whatever ``fill_to`` says."""
        if dec.sampling.greedy:
            return B.verify_layer_greedy(scores, drafts, width)
        return B.verify_layer(
            p_beam, q_beam, drafts, width, dec.generator, fill_to=fill_to, paper_literal_ratio=self.literal_ratio
        )

    def record(self, greedy: bool) -> dict[str, Any]:
        """``StepRecord.rule`` (``core.rule_words``: ``dsbd_greedy`` at T = 0, else ``dsbd_layer``)."""
        return {"name": "dsbd_greedy"} if greedy else {"name": "dsbd_layer", "literal_ratio": self.literal_ratio}


@dataclass(frozen=True)
class LayerStep:
    """One walked layer: its number ``layer`` (1-based; ``gamma + 1`` for the bonus layer), how many
    ``parents`` were valid, its draft ``nodes``, each parent row as (node id or None for a root, beam)
    (``rows``), the candidate ``scores``, ``p_beam`` and ``q_beam`` (None: bonus), the width
    ``choice`` and the rule's ``verdict`` (None: bonus) and the bonus layer's ``picks``."""

    layer: int
    parents: int
    nodes: list[int]
    rows: list[tuple[int | None, int]]
    scores: torch.Tensor
    p_beam: torch.Tensor
    q_beam: torch.Tensor | None = None
    choice: B.WidthChoice | None = None
    verdict: B.LayerVerdict | None = None
    picks: list[int] | None = None


@dataclass(frozen=True)
class LayerWalk:
    """What ``walk_layers`` decided: the ``layers`` walked; ``outputs`` the beams of the layer the
    iteration ended in as (candidate, source, index of the kept draft or None) over that layer's
    candidate space, whose rows extend ``par_ids`` (None: a root) with ``scores``; ``ended`` the
    drafts accepted in a passed layer that are EOS (finished beams), in order."""

    layers: list[LayerStep]
    outputs: list[tuple[int, str, int | None]]
    par_ids: list[int | None]
    scores: torch.Tensor
    ended: list[int]


@dataclass(frozen=True)
class OutputBeam:
    """A beam the step produced: the ``beam``, its ``row`` for the beam list (parent row, new
    tokens), its forest ``node`` (a kept draft, else a node the record appends), the target cache
    ``chain`` it keeps (None: finished in a passed layer) and, for the drafter, its ``root`` beam, its
    draft ``path`` and the ``token`` after it. ``parent``, ``layer``, ``p``, ``status``: an appended
    node's parent, 1-based layer, p_beam (None at T = 0) and status (None: a kept draft)."""

    beam: Beam
    row: tuple[int, list[int]]
    node: int
    chain: tuple[int, list[int]] | None = None
    root: int = 0
    path: tuple[int, ...] = ()
    token: int = 0
    parent: int | None = None
    layer: int = 0
    p: float | None = None
    status: str | None = None


@dataclass(frozen=True)
class LayerOutcome:
    """What one iteration decided: the ``walk``, the ``outputs`` (beams, in order), the indices of
    those ``carried`` into the next iteration and the step's beam list (``rows``)."""

    walk: LayerWalk
    outputs: list[OutputBeam]
    carried: list[int]
    rows: BeamList

    @property
    def kept(self) -> list[int]:
        """Trace node ids of the output beams."""
        return [o.node for o in self.outputs]


def walk_layers(
    dec: "Decoder",
    widths: LayerWidth,
    rule: LayerRule,
    forest: DraftForest,
    root_ll: torch.Tensor,
    root_lp: torch.Tensor,
    node_ll: torch.Tensor,
    node_lp: torch.Tensor,
) -> LayerWalk:
    """Verify the forest layer by layer (module docstring); draws only the rule's and the bonus layer's."""
    par_ids: list[int | None] = [None] * len(root_ll)
    par_ll, par_lp = root_ll, root_lp
    valid = torch.ones(len(root_ll), dtype=torch.bool)
    layers: list[LayerStep] = []
    ended: list[int] = []
    out_width = rule.out_width(widths, widths.min_width)

    def rows() -> list[tuple[int | None, int]]:
        return [(None, j) if par is None else (par, forest.tree[par]) for j, par in enumerate(par_ids)]

    for lv in range(1, len(forest.layers) + 1):
        scores = B.candidate_scores(par_ll, par_lp, valid)
        p_beam = B.beam_distribution(scores, dec.sampling)
        q_beam = forest.q_beam[lv - 1]
        nodes = forest.layers[lv - 1]
        choice = widths.choose(p_beam, q_beam)
        verdict = rule.verify(
            dec,
            p_beam,
            q_beam,
            scores,
            [forest.candidate[n] for n in nodes],
            choice.width,
            rule.out_width(widths, choice.width),
        )
        layers.append(LayerStep(lv, int(valid.sum()), nodes, rows(), scores, p_beam, q_beam, choice, verdict))
        out_width = rule.out_width(widths, choice.width)
        if not verdict.passed:
            return LayerWalk(
                layers, list(zip(verdict.kept, verdict.sources, verdict.kept_draft)), par_ids, scores, ended
            )
        accepted = [nodes[k] for k in verdict.kept_draft if k is not None]
        ended += [n for n in accepted if dec.is_eos(forest.tokens[n])]
        par_ids = list(nodes)
        par_ll, par_lp = node_ll[nodes], node_lp[nodes]
        valid = torch.tensor([n in accepted and not dec.is_eos(forest.tokens[n]) for n in nodes], dtype=torch.bool)
        if not valid.any():
            return LayerWalk(layers, [], par_ids, scores, ended)
    scores = B.candidate_scores(par_ll, par_lp, valid)
    p_beam = B.beam_distribution(scores, dec.sampling)
    if dec.sampling.greedy:
        picks = B.beam_search_select(scores, out_width)
    else:
        picks = B.sample_beams(p_beam, out_width, dec.generator)
    layers.append(LayerStep(len(forest.layers) + 1, int(valid.sum()), [], rows(), scores, p_beam, picks=picks))
    return LayerWalk(layers, [(c, "bonus", None) for c in picks], par_ids, scores, ended)


class LayerVerifier:
    """DSBD's layer walk as a ``step_types.Verifier`` over ``state``'s beams (module docstring)."""

    def __init__(self, state: BeamState, rule: LayerRule, single_beam: bool = False):
        self.state, self._rule, self.single_beam = state, rule, single_beam

    def rule(self, dec: "Decoder") -> LayerRule:
        return self._rule

    def lossless(self, dec: "Decoder") -> bool:
        return self._rule.lossless

    def budget(self, dec: "Decoder") -> int:
        """Draft layers allowed: the live beams' length plus the layers and one target token fit the budget."""
        return dec.max_new_tokens - len(self.state.beams[0].tokens) - 1

    def score(self, dec: "Decoder", forest: DraftForest) -> tuple[torch.Tensor, int, list[int], list[int]]:
        start = len(dec.target.tree)
        logits, troot, tnode = feed(
            dec.target,
            self.state.slots,
            forest.tokens,
            [
                ("root", forest.row[i]) if forest.parent[i] is None else ("node", forest.parent[i])
                for i in range(len(forest))
            ],
        )
        return logits, start, troot, tnode

    def decide(
        self, dec: "Decoder", forest: DraftForest, scored: tuple[torch.Tensor, int, list[int], list[int]], plan: Plan
    ) -> LayerOutcome:
        logits, start, troot, tnode = scored
        st = self.state
        root_lp = logprobs_at(logits, start, troot)
        node_lp = logprobs_at(logits, start, tnode) if len(forest) else root_lp[:0]
        root_ll = torch.tensor([b.loglik for b in st.beams], dtype=torch.float64)
        node_ll = _node_logliks(forest, root_ll, root_lp, node_lp)
        assert plan.layer_width is not None, "dsbd plans a layer width rule"
        walk = walk_layers(dec, plan.layer_width, self._rule, forest, root_ll, root_lp, node_ll, node_lp)
        l_last = len(walk.layers)
        p_out = None if dec.sampling.greedy else walk.layers[-1].p_beam
        outputs: list[OutputBeam] = []
        for n in walk.ended:  # finished in a passed layer
            root, path = forest.tree[n], forest.path(n)
            toks = [forest.tokens[m] for m in path]
            outputs.append(
                OutputBeam(
                    st.beams[root].extend(toks, ["draft"] * len(path), float(node_ll[n])), (st.rows[root], toks), n
                )
            )
        vocab = walk.scores.shape[1]
        flat = walk.scores.reshape(-1)
        appended = len(forest)
        for c, src, kd in walk.outputs:
            r, t = B.split_candidate(c, vocab)
            parent = walk.par_ids[r]
            root = r if parent is None else forest.tree[parent]
            path = forest.path(parent)
            toks = [forest.tokens[n] for n in path] + [t]
            beam = st.beams[root].extend(toks, ["draft"] * len(path) + [KIND[src]], float(flat[c]))
            chain = (troot[root] if parent is None else tnode[parent], [t])
            common = dict(chain=chain, root=root, path=tuple(path), token=t)
            if src == "accepted" and kd is not None:
                outputs.append(OutputBeam(beam, (st.rows[root], toks), forest.layers[l_last - 1][kd], **common))
            else:
                outputs.append(
                    OutputBeam(
                        beam,
                        (st.rows[root], toks),
                        appended,
                        parent=parent,
                        layer=l_last,
                        p=None if p_out is None else float(p_out[c]),
                        status="resampled" if KIND[src] == "resampled" else "bonus",
                        **common,
                    )
                )
                appended += 1
        new = [o.beam for o in outputs]
        carried = st.done.set_aside(dec, new)
        if self.single_beam and carried:
            carried = [carried[best_of([new[i] for i in carried])]]
        rows = beam_rows(dec, [o.row for o in outputs], new, carried, st.done)
        return LayerOutcome(walk, outputs, carried, rows)

    def commit(self, dec: "Decoder", forest: DraftForest, out: LayerOutcome) -> Commit:
        """Carry the chosen beams (their paths kept in the target cache) and settle what they agree on."""
        st = self.state
        st.beams = [out.outputs[i].beam for i in out.carried]
        if out.carried:
            st.slots = keep_slots(dec.target, [out.outputs[i].chain for i in out.carried])
        st.rows = out.carried
        return st.settle(dec)

    def record(self, dec: "Decoder", forest: DraftForest, out: LayerOutcome) -> Recorded:
        """The drafted nodes with their layers' verdicts, then the output beams the target drew, and
        one position per parent row of each walked layer (``positions.layer_positions``)."""
        nodes = [
            TreeNode(
                i,
                forest.parent[i],
                forest.layer[i] - 1,
                t,
                dec.text(t),
                q=float(forest.q_beam[forest.layer[i] - 1][forest.candidate[i]]),
                root=forest.tree[i],
            )
            for i, t in enumerate(forest.tokens)
        ]
        positions = []
        for ls in out.walk.layers:
            vocab = ls.scores.shape[1]
            if ls.verdict is None:  # the bonus layer
                picks = by_row(ls.picks or [], vocab)
                positions += layer_positions(dec, ls.scores, ls.p_beam, None, ls.rows, {}, picks)
                continue
            v = ls.verdict
            for j, n in enumerate(ls.nodes):
                tn = nodes[n]
                tn.p = float(ls.p_beam[forest.candidate[n]])
                tn.status = "not_reached" if v.status[j] == "skipped" else v.status[j]
                tn.accept_prob, tn.draw, tn.p_residual = v.accept_probs[j], v.draws[j], v.p_residual[j]
            tested = by_row(
                [forest.candidate[n] for j, n in enumerate(ls.nodes) if v.status[j] in ("accepted", "rejected")], vocab
            )
            positions += layer_positions(
                dec, ls.scores, ls.p_beam, ls.q_beam, ls.rows, tested, by_row(v.kept, vocab), v.final_residual
            )
        for o in out.outputs:
            if o.status is not None:
                nodes.append(
                    TreeNode(
                        o.node, o.parent, o.layer - 1, o.token, dec.text(o.token), p=o.p, status=o.status, root=o.root
                    )
                )
        return Recorded(nodes, positions, self._rule.record(dec.sampling.greedy))


def _node_logliks(
    forest: DraftForest, root_ll: torch.Tensor, root_lp: torch.Tensor, node_lp: torch.Tensor
) -> torch.Tensor:
    """Each drafted node's beam log-likelihood: its parent's (a root's beam's, for a first-layer node) plus
    the target's log-probability of its token there (nodes in proposal order, parents first)."""
    node_ll = torch.zeros(len(forest), dtype=torch.float64)
    for i in range(len(forest)):
        par = forest.parent[i]
        base = root_ll[forest.row[i]] if par is None else node_ll[par]
        lp = root_lp[forest.row[i]] if par is None else node_lp[par]
        node_ll[i] = base + lp[forest.tokens[i]]
    return node_ll
