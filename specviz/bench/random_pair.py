"""Randomly initialised pairs with real model shapes, for timing only (t(n), call overhead, the cost
model): cost needs no trained weights. Acceptance between random models is meaningless, so these pairs
are benchmarked on random token-id prompts and their tau is not reported as a result."""

from __future__ import annotations

from typing import Any

import torch

from specviz.errors import InvalidParameterError
from specviz.models.loading import ModelPair, resolve_device_dtype

LLAMA_32_1B = dict(
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=64,
    vocab_size=128256,
    max_position_embeddings=4096,
    rope_theta=500000.0,
    tie_word_embeddings=True,
)
# the body of a 68M draft (LLaMA-68M: 2 layers, 768 wide) on the target's vocabulary
LLAMA_68M = dict(
    hidden_size=768,
    intermediate_size=3072,
    num_hidden_layers=2,
    num_attention_heads=12,
    num_key_value_heads=12,
    vocab_size=128256,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)
TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=512,
    max_position_embeddings=1024,
)
TINY_DRAFT = dict(TINY, hidden_size=32, intermediate_size=64, num_hidden_layers=1)

RANDOM_PAIRS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "llama-1b": (LLAMA_32_1B, LLAMA_68M),  # Llama-3.2-1B-sized target, 68M-sized draft
    "tiny": (TINY, TINY_DRAFT),  # a smoke test of the commands on any machine
}


def random_pair(name: str, device: str = "auto", dtype: str = "auto", seed: int = 0) -> ModelPair:
    """The named random pair (``RANDOM_PAIRS``) on ``device`` in ``dtype``, with no tokenizer."""
    from transformers import LlamaConfig, LlamaForCausalLM

    if name not in RANDOM_PAIRS:
        raise InvalidParameterError(f"Unknown random pair {name!r}; known: {', '.join(RANDOM_PAIRS)}.")
    device, torch_dtype = resolve_device_dtype(device, dtype)
    models = []
    for i, cfg in enumerate(RANDOM_PAIRS[name]):
        torch.manual_seed(seed + i)
        config = LlamaConfig(bos_token_id=None, eos_token_id=None, pad_token_id=None, **cfg)
        with torch.device(device):
            models.append(LlamaForCausalLM(config).to(torch_dtype).eval())
    target, draft = models
    return ModelPair(
        target,
        draft,
        None,
        target.config.vocab_size,
        target_name=f"random {name} target",
        draft_name=f"random {name} draft",
    )


def random_prompts(pair: ModelPair, count: int = 4, length: int = 32, seed: int = 0) -> dict[str, list[list[int]]]:
    """``{"random": [count token-id prompts of length]}`` for a pair without a tokenizer."""
    gen = torch.Generator().manual_seed(seed)
    return {"random": [torch.randint(0, pair.vocab_size, (length,), generator=gen).tolist() for _ in range(count)]}
