"""Model sizes of the bundled pair (and tiny ones for tests), as ``LlamaConfig`` objects.

``target``: 6 layers, d=256 (5.8M parameters with tied embeddings). ``draft``: 2 layers, d=160
(1.3M): 4.5x fewer multiply-adds per token than the target, LM head included. Two layers rather
than one so that the draft can form induction heads (copying an identifier seen earlier), which is
most of what makes code predictable; its embedding starts as a PCA projection of the target's and it
is then distilled.
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
    "target": ModelSize(layers=6, hidden=256, heads=4, intermediate=688),
    "draft": ModelSize(layers=2, hidden=160, heads=2, intermediate=432),
    # GPU recipe (not yet run): 8.75M target with the same draft (6.6x fewer multiply-adds), 2.6M head: 50 MB.
    "target-gpu": ModelSize(layers=6, hidden=320, heads=5, intermediate=864),
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


def macs_per_token(size: ModelSize | str, vocab_size: int) -> int:
    """Multiply-adds per decoded token: the decoder layers' projections plus the LM head (attention
    over the cache, norms and the embedding lookup are left out)."""
    if isinstance(size, str):
        size = SIZES[size]
    h = size.hidden
    return size.layers * (4 * h * h + 3 * h * size.intermediate) + h * vocab_size


def count_parameters(model) -> int:
    """Unique parameters (tied matrices counted once)."""
    seen, total = set(), 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total
