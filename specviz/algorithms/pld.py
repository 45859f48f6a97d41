"""``pld``: prompt-lookup decoding: draft by copying what followed the last n-gram earlier in the text.

No draft model (``prompt_lookup.PromptLookupDrafter``; transformers' ``prompt_lookup_num_tokens`` and
``max_matching_ngram_size``): each step proposes up to ``num_tokens`` tokens as a chain and the
target verifies them in one call with the standard rule (Leviathan et al. 2023, Algorithm 1) against
the proposal's one-hot draft distribution, so the output law is exactly the target's at any
temperature; at temperature 0 it is exact match. A step with no match is one plain target call.
"""

from __future__ import annotations

from typing import Iterator

from specviz.algorithms.cost import int_param, per_step
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.prompt_lookup import PromptLookupDrafter
from specviz.algorithms.registry import Param, register
from specviz.algorithms.tree_engine import StaticShape, run_engine
from specviz.core.rules import MultiCandidate
from specviz.core.trees import chain_shape
from specviz.trace import StepRecord


@register(
    "pld",
    description="Prompt lookup: propose the tokens that followed the last n-gram's most recent "
    "earlier occurrence; no draft model.",
    paper="Saxena 2023, Prompt Lookup Decoding; verified as Leviathan et al. 2023, Algorithm 1",
    params=(
        Param("num_tokens", 10, "int", 1, 64, help="tokens proposed per step (at most)"),
        Param("max_ngram", 3, "int", 1, 16, help="longest n-gram matched (tried from this down to 1)"),
    ),
    drafter="prompt_lookup",
    color="#0891b2",
    cost=lambda params, steps: per_step(1 + int_param(params, "num_tokens"), "num_tokens", steps, models=1),
)
def run_pld(dec: Decoder, num_tokens: int, max_ngram: int) -> Iterator[StepRecord]:
    drafter = PromptLookupDrafter(num_tokens, max_ngram)
    yield from run_engine(dec, drafter, StaticShape(chain_shape(num_tokens)), MultiCandidate(replacement=True))
