"""Prompt-lookup drafting: propose what followed the last n-gram the last time it occurred.

No draft model (Saxena 2023, "Prompt Lookup Decoding"; transformers' ``prompt_lookup_num_tokens`` /
``max_matching_ngram_size``): for n = ``max_ngram`` down to 1, find the most recent earlier
occurrence of the last n tokens of prompt + output; the first n with a match proposes the (up to)
``num_tokens`` tokens that followed it. No match: nothing is proposed and the step is one plain
target call.

The proposal is a deterministic function of the committed text, so its draft distribution at every
position is the **one-hot** of the proposed token. Verifying it with the standard rule against that
one-hot (accept x with ``min(1, p(x) / 1) = p(x)``, else draw from ``norm(max(0, p - onehot(x)))``,
Leviathan et al. 2023, Algorithm 1) is exact at any temperature and with any warp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from specviz.algorithms.step_types import DraftedTree, Plan
from specviz.core.rules import AcceptanceRule
from specviz.core.trees import ROOT

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


def lookup(tokens: list[int], num_tokens: int, max_ngram: int) -> list[int]:
    """The tokens that followed the most recent earlier occurrence of the longest matching suffix
    n-gram (n = ``max_ngram`` .. 1), at most ``num_tokens`` of them; ``[]`` if none matches."""
    length = len(tokens)
    for n in range(min(max_ngram, length - 1), 0, -1):
        tail = tokens[length - n :]
        for start in range(length - n - 1, -1, -1):  # most recent first, the suffix itself excluded
            if tokens[start : start + n] == tail:
                return tokens[start + n : start + n + num_tokens]
    return []


class PromptLookupDrafter:
    """A chain from ``lookup`` (cut to the plan's depth, its ``go_on`` and ``keep`` and the first EOS),
    with one-hot ``parent_q``; makes no forward calls."""

    fed: tuple[int, ...] = ()

    def __init__(self, num_tokens: int, max_ngram: int):
        self.num_tokens = num_tokens
        self.max_ngram = max_ngram

    def propose(self, dec: "Decoder", plan: Plan, rule: AcceptanceRule) -> DraftedTree:
        tree = DraftedTree()
        parent = ROOT
        for tok in lookup(dec.tokens, min(self.num_tokens, plan.shape.depth), self.max_ngram):
            q = torch.zeros(dec.pair.vocab_size)
            q[tok] = 1.0
            tree.parent_q[parent] = q
            parent = tree.add(tok, parent, len(tree), 1.0)
            if dec.is_eos(tok) or not plan.go_on(tree, parent) or not plan.keep(tree, len(tree), [parent]):
                break
        return tree

    def observe(self, dec: "Decoder", tree: DraftedTree, outcome: Any) -> None:
        return None
