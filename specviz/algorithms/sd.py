"""``sd``: chain speculative sampling (Leviathan et al. 2023; Chen et al. 2023; theory paper Algorithm 1).

Per step: the draft samples ``gamma`` tokens autoregressively from its warped distribution q; the
target scores all of them in one call (the one-branch case of the tree engine); token i is accepted
with probability ``min(1, p_i(x_i) / q_i(x_i))``; at the first rejection a token is drawn from the
residual ``norm(max(0, p_i - q_i))``; if all are accepted a bonus token is drawn from ``p_{gamma+1}``.
The output law is exactly the target's (theory paper Thm 1). The draft length is cut to the tokens
still allowed, and drafting stops after an EOS draft, neither of which changes the output law.
"""
from __future__ import annotations

from typing import Iterator

import torch

from specviz.algorithms.decoder import Decoder
from specviz.algorithms.registry import Param, register
from specviz.core.sampling import residual, tv_distance
from specviz.models.tree_forward import ROOT, chain_parents
from specviz.trace import StepRecord, TreeNode

GAMMA = Param("gamma", 4, "int", 1, 32, help="draft tokens per step")


def draft_chain(dec: Decoder, gamma: int) -> tuple[list[int], list[torch.Tensor]]:
    """Sample up to ``gamma`` draft tokens; returns them and their warped draft distributions q_i.

    Uses ``gamma`` draft calls (the last token is never fed; ``Decoder.context`` feeds it next step).
    """
    tokens: list[int] = []
    qs: list[torch.Tensor] = []
    logits = dec.draft.extend(dec.context(dec.draft))[0]
    while True:
        q = dec.probs(logits)
        tokens.append(dec.sample(q))
        qs.append(q)
        if len(tokens) == gamma or dec.is_eos(tokens[-1]):
            return tokens, qs
        logits = dec.draft.forward([tokens[-1]], [len(tokens) - 2 if len(tokens) > 1 else ROOT])[0]


def verify_chain(dec: Decoder, step: StepRecord, tokens: list[int], qs: list[torch.Tensor],
                 ps: torch.Tensor) -> list[tuple[int, str, int | None]]:
    """Leviathan/Chen acceptance along one chain; fills ``step.forest`` and returns the produced tokens.

    ``ps`` holds ``len(tokens) + 1`` warped target rows (the last one for the bonus token).
    """
    produced: list[tuple[int, str, int | None]] = []
    step.forest = [TreeNode(i, i - 1 if i else None, i, t, dec.text(t), q=float(qs[i][t]), p=float(ps[i][t]))
                   for i, t in enumerate(tokens)]
    step.tv = []
    for i, node in enumerate(step.forest):
        step.tv.append(tv_distance(ps[i], qs[i]))
        node.accept_prob = min(1.0, node.p / node.q)
        node.draw = dec.uniform()
        if node.draw < node.accept_prob:
            node.status = "accepted"
            produced.append((node.token_id, "draft", node.id))
            continue
        node.status = "rejected"
        extra = dec.sample(residual(ps[i], qs[i]))
        kind = "resampled"
        break
    else:
        i = len(tokens)
        extra = dec.sample(ps[i])
        kind = "bonus"
    node_id = len(step.forest)
    step.forest.append(TreeNode(node_id, i - 1 if i else None, i, extra, dec.text(extra),
                                p=float(ps[i][extra]), status=kind))
    produced.append((extra, kind, node_id))
    return produced


@register("sd", description="Chain speculative sampling: draft gamma tokens, verify in one target call.",
          paper="Leviathan et al. 2023; Chen et al. 2023; theory paper Algorithm 1", params=(GAMMA,))
def run_sd(dec: Decoder, gamma: int) -> Iterator[StepRecord]:
    index = 0
    while not dec.finished:
        step = dec.new_step(index)
        n_draft = min(gamma, dec.remaining - 1)
        tokens: list[int] = []
        qs: list[torch.Tensor] = []
        if n_draft > 0:
            calls = dec.draft.calls
            with dec.timed("draft_ms"):
                tokens, qs = draft_chain(dec, n_draft)
            step.draft_calls = dec.draft.calls - calls
        with dec.timed("verify_ms"):
            ps = dec.probs(dec.target.extend(dec.context(dec.target), tokens, chain_parents(len(tokens))))
        produced = verify_chain(dec, step, tokens, qs, ps)
        accepted = len(produced) - 1
        dec.target.commit(list(range(accepted)))
        dec.draft.commit(list(range(min(accepted, len(dec.draft.tree)))))
        dec.emit(step, produced)
        step.timings = dec.timings
        yield step
        index += 1
