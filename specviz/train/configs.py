"""Model sizes of the bundled pair (and tiny ones for tests), as ``LlamaConfig`` objects.

``target``: 4 layers, d=256 (4.2M parameters with tied embeddings). ``draft``: 1 layer, d=256 — its
embedding, final norm and LM head start as copies of the target's and it is then distilled, so one
decoder layer instead of four (about 2.3x fewer multiply-adds per token including the LM head, and
about 3x less wall time per forward on a CPU, where the per-layer overhead dominates).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ModelSize:
    layers: int
    hidden: int
    heads: int
    intermediate: int
    max_positions: int = 1024
    tie_embeddings: bool = True

    def as_dict(self) -> dict:
        return asdict(self)


SIZES: dict[str, ModelSize] = {
    "target": ModelSize(layers=4, hidden=256, heads=4, intermediate=688),
    "draft": ModelSize(layers=1, hidden=256, heads=4, intermediate=688),
    "draft-narrow": ModelSize(layers=1, hidden=192, heads=3, intermediate=512),
    "draft-2l": ModelSize(layers=2, hidden=128, heads=2, intermediate=344),
    # GPU recipe (untested here): 8.75M target, 2.55M draft, 2.55M head = about 55 MB in float32.
    "target-gpu": ModelSize(layers=6, hidden=320, heads=5, intermediate=864),
    "draft-gpu": ModelSize(layers=1, hidden=320, heads=5, intermediate=864),
    "tiny-target": ModelSize(layers=2, hidden=32, heads=2, intermediate=64, max_positions=256),
    "tiny-draft": ModelSize(layers=1, hidden=32, heads=2, intermediate=64, max_positions=256),
}


def llama_config(size: ModelSize | str, vocab_size: int, eos_token_id: int = 0):
    """A ``LlamaConfig`` for ``size`` (a name from ``SIZES`` or a ``ModelSize``)."""
    from transformers import LlamaConfig

    if isinstance(size, str):
        size = SIZES[size]
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=size.hidden,
        intermediate_size=size.intermediate,
        num_hidden_layers=size.layers,
        num_attention_heads=size.heads,
        num_key_value_heads=size.heads,
        max_position_embeddings=size.max_positions,
        rms_norm_eps=1e-5,
        rope_theta=10000.0,
        tie_word_embeddings=size.tie_embeddings,
        bos_token_id=eos_token_id,
        eos_token_id=eos_token_id,
        pad_token_id=eos_token_id,
        attention_dropout=0.0,
        initializer_range=0.02,
        attn_implementation="sdpa",
    )


def count_parameters(model) -> int:
    """Unique parameters (tied matrices counted once)."""
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total
