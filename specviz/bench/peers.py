"""The peers ``bench`` runs in the same process: Hugging Face ``generate`` plain (greedy), with an
``assistant_model`` (assisted generation, a constant ``gamma`` draft tokens per step), and with
``prompt_lookup_num_tokens`` (prompt lookup decoding). Forward calls are counted with forward hooks,
so tau is comparable with specviz's own count."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

PEERS = ("hf_generate", "hf_assisted", "hf_prompt_lookup")


@dataclass
class PeerRun:
    """What one peer call produced: new token ids and the forward calls of target and draft."""

    output_ids: list[int]
    target_calls: int
    draft_calls: int


@contextmanager
def counting(model) -> Iterator[list[int]]:
    """Count top-level forward calls of ``model`` while the block runs (``box[0]``)."""
    box = [0]
    handle = model.register_forward_hook(lambda *_: box.__setitem__(0, box[0] + 1)) if model is not None else None
    try:
        yield box
    finally:
        if handle is not None:
            handle.remove()


def _generate(pair, prompt_ids: list[int], max_new_tokens: int, **kwargs: Any) -> PeerRun:
    ids = torch.tensor([prompt_ids], device=pair.device)
    eos = sorted(pair.eos_token_ids) or None
    with counting(pair.target) as t_calls, counting(kwargs.get("assistant_model")) as d_calls:
        out = pair.target.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos,
            pad_token_id=eos[0] if eos else None,
            **kwargs,
        )
    return PeerRun(out[0, len(prompt_ids) :].tolist(), t_calls[0], d_calls[0])


def peer_functions(pair, gamma: int, lookup_tokens: int = 10) -> dict[str, Callable[[list[int], int], PeerRun]]:
    """Name -> ``fn(prompt_ids, max_new_tokens)`` for every peer this pair supports."""
    out: dict[str, Callable[[list[int], int], PeerRun]] = {
        "hf_generate": lambda ids, n: _generate(pair, ids, n),
        "hf_prompt_lookup": lambda ids, n: _generate(pair, ids, n, prompt_lookup_num_tokens=lookup_tokens),
    }
    if pair.draft is not None:
        out["hf_assisted"] = lambda ids, n: _generate(
            pair,
            ids,
            n,
            assistant_model=pair.draft,
            num_assistant_tokens=gamma,
            num_assistant_tokens_schedule="constant",
        )
    return {k: out[k] for k in PEERS if k in out}
