"""Randomly initialised pairs with real model shapes, for timing only (t(n), call overhead, the cost
model): cost needs no trained weights. Acceptance between random models is meaningless, so these pairs
are benchmarked on random token-id prompts and their tau is not reported as a result."""

from __future__ import annotations

from typing import Any

import torch

from specviz.errors import InvalidParameterError
from specviz.models.loading import ModelPair, resolve_device_dtype
from specviz.models.random_llama import llama_shape, random_llama, random_model_pair

# what the 1B target and its draft share: Llama 3's vocabulary, 4096 positions, tied embeddings
_LLAMA_3 = dict(vocab=128256, positions=4096, tied=True)
LLAMA_32_1B = llama_shape(
    hidden=2048, intermediate=8192, layers=16, heads=32, kv_heads=8, head_dim=64, rope_theta=500000.0, **_LLAMA_3
)
# the body of a 68M draft (LLaMA-68M: 2 layers, 768 wide) on the target's vocabulary
LLAMA_68M = llama_shape(hidden=768, intermediate=3072, layers=2, heads=12, kv_heads=12, **_LLAMA_3)
TINY = llama_shape(hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, vocab=512, positions=1024)
TINY_DRAFT = dict(TINY, hidden_size=32, intermediate_size=64, num_hidden_layers=1)

RANDOM_PAIRS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "llama-1b": (LLAMA_32_1B, LLAMA_68M),  # Llama-3.2-1B-sized target, 68M-sized draft
    "tiny": (TINY, TINY_DRAFT),  # a smoke test of the commands on any machine
}


def random_pair(name: str, device: str = "auto", dtype: str = "auto", seed: int = 0) -> ModelPair:
    """The named random pair (``RANDOM_PAIRS``) on ``device`` in ``dtype``, with no tokenizer."""
    if name not in RANDOM_PAIRS:
        raise InvalidParameterError(f"Unknown random pair {name!r}; known: {', '.join(RANDOM_PAIRS)}.")
    device, torch_dtype = resolve_device_dtype(device, dtype)
    models = []
    for i, cfg in enumerate(RANDOM_PAIRS[name]):
        with torch.device(device):  # initialised on the device itself (a 1B model is slow to build on a CPU)
            models.append(random_llama(cfg, seed + i).to(torch_dtype))
    target, draft = models
    return random_model_pair(name, target, draft)


def random_prompts(pair: ModelPair, count: int = 4, length: int = 32, seed: int = 0) -> dict[str, list[list[int]]]:
    """``{"random": [count token-id prompts of length]}`` for a pair without a tokenizer."""
    gen = torch.Generator().manual_seed(seed)
    return {"random": [torch.randint(0, pair.vocab_size, (length,), generator=gen).tolist() for _ in range(count)]}
