"""Whether a model fits in memory, judged from its config before anything is allocated.

``check_fits`` refuses (``ModelLoadError``, with the parameter count, the bytes needed and the bytes
available) a config whose weights alone would not fit where they are going: a config file of a few
hundred bytes can ask for terabytes (4000 layers), and instantiating it first would take the server down.
"""

from __future__ import annotations

from typing import Any

import torch

from specviz.errors import ModelLoadError


def _field(config: Any, *names: str) -> int | None:
    """The first of ``names`` that the config sets to a positive integer."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def estimate_params(config: Any) -> int | None:
    """The weights' parameter count of a decoder config (Llama-like: embeddings, untied head, attention
    with grouped KV heads, a gated MLP; other layouts: 12 h^2 per layer), or None if the config does
    not say its sizes. Norms and biases are left out: a lower bound within a fraction of a percent."""
    config = getattr(config, "text_config", None) or config
    h = _field(config, "hidden_size", "n_embd", "d_model", "dim")
    layers = _field(config, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    if h is None or layers is None:
        return None
    vocab = _field(config, "vocab_size") or 0
    tied = getattr(config, "tie_word_embeddings", True) is not False
    heads = _field(config, "num_attention_heads", "n_head", "num_heads")
    inter = _field(config, "intermediate_size", "n_inner", "ffn_dim")
    if heads and inter:  # Llama-like: q, o of heads x head_dim; k, v of kv_heads x head_dim; gate, up, down
        head_dim = _field(config, "head_dim") or h // heads
        kv = _field(config, "num_key_value_heads") or heads
        per_layer = 2 * h * heads * head_dim + 2 * h * kv * head_dim + 3 * h * inter
    else:
        per_layer = 12 * h * h
    return vocab * h * (1 if tied else 2) + layers * per_layer


def available_bytes(device: str) -> int | None:
    """Free memory where the weights go: the GPU's free memory on CUDA (all GPUs' for ``auto``
    placement), else the host's available memory; None if unknown."""
    if device.startswith("cuda") and torch.cuda.is_available():
        if device == "cuda" or ":" not in device:
            return sum(torch.cuda.mem_get_info(i)[0] for i in range(torch.cuda.device_count()))
        return torch.cuda.mem_get_info(torch.device(device))[0]
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def check_fits(name: str, config: Any, dtype: torch.dtype, device: str) -> None:
    """Refuse ``config`` if its weights in ``dtype`` need more than the memory available on ``device``."""
    params = estimate_params(config)
    free = available_bytes(device)
    if params is None or free is None:
        return
    needed = params * torch.empty((), dtype=dtype).element_size()
    if needed > free:
        where = "GPU memory" if device.startswith("cuda") else "memory"
        raise ModelLoadError(
            f"{name!r} is too large for this machine: its config describes about {params:,} parameters, "
            f"{_size(needed)} in {str(dtype).removeprefix('torch.')}, and only {_size(free)} of {where} is "
            "available. Pick a smaller model or dtype."
        )


def _size(n: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= scale:
            return f"{n / scale:.1f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def config_of(source: str, trust_remote_code: bool) -> Any | None:
    """The model's config (a small file), or None if it cannot be read here (``from_pretrained`` then
    gives its own message)."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    except Exception:  # noqa: BLE001 - any failure is reported by the load itself
        return None
