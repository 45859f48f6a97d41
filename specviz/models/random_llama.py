"""Randomly initialised Llama models of a given size: the timing pairs (``bench.random_pair``), the
GPU check's pairs (``bench.gpu.pairs``) and ``bench.figure_timing``'s pair; ``noisy_copy``, a draft
close to its target (the GPU check's and the tests' close pairs). A shape is the keyword
arguments of a ``LlamaConfig`` (a plain dict: printable, and cheap to import without transformers)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specviz.models.pair import ModelPair


def llama_shape(
    *,
    hidden: int,
    intermediate: int,
    layers: int,
    heads: int,
    kv_heads: int,
    vocab: int,
    head_dim: int | None = None,
    positions: int | None = None,
    tied: bool | None = None,
    init_range: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The ``LlamaConfig`` keyword arguments of a model of these sizes (``init_range``: the weights'
    initial spread). An optional argument left ``None`` is left out, so ``LlamaConfig``'s default
    holds (``head_dim`` hidden/heads, 2048 positions, untied embeddings, spread 0.02); ``extra`` are
    further ``LlamaConfig`` fields (``rope_theta``)."""
    shape: dict[str, Any] = dict(
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=tied,
        initializer_range=init_range,
    )
    return {k: v for k, v in shape.items() if v is not None} | extra


def random_llama(shape: dict[str, Any], seed: int):
    """A ``LlamaForCausalLM`` of ``shape`` (``llama_shape``) initialised after ``torch.manual_seed(seed)``,
    in eval mode, float32, on torch's current default device (the same weights for the same seed and
    device). No bos/eos/pad token ids: the models have no tokenizer and are prompted with random ids."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(bos_token_id=None, eos_token_id=None, pad_token_id=None, **shape)
    return LlamaForCausalLM(config).eval()


def random_model_pair(name: str, target, draft, draft_name: str | None = None) -> ModelPair:
    """A ``ModelPair`` of random models, with no tokenizer: named ``random {name} target`` and
    ``draft_name``, by default ``random {name} draft``."""
    from specviz.models.pair import ModelPair

    draft_name = draft_name or f"random {name} draft"
    return ModelPair(target, draft, None, target.config.vocab_size, f"random {name} target", draft_name)


def noisy_copy(model, scale: float, seed: int = 0):
    """A copy of ``model`` with Gaussian noise of relative size ``scale`` on every weight: a draft that
    agrees with the target often but not always (long accepted runs and rejections both happen). The
    noise is drawn on the CPU, so the copy is the same on every device."""
    import copy

    import torch

    clone = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in clone.parameters():
            noise = torch.randn(p.shape, generator=gen).to(p.device)
            p.add_(noise * scale * (p.std() if p.numel() > 1 else 0.0))
    return clone.eval()
