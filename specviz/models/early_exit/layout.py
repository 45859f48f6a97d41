"""Architecture discovery for the early-exit head: where a Hugging Face decoder-only causal LM keeps
its decoder layers and final norm (``layout``), and reading hidden states out of a forward
(``first_n``, ``capture_output``, ``final_norm``)."""

from __future__ import annotations

import contextlib

import torch
from torch import nn

NORM_NAMES = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f", "final_norm")


def text_config(config):
    """The decoder's config (a multimodal model's text config)."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def layout(base: nn.Module) -> tuple[nn.Module, str, str]:
    """``(backbone, layers_attribute, final_norm_attribute)`` of a decoder-only causal LM.

    The layer list is the backbone's ``ModuleList`` with ``num_hidden_layers`` blocks; the final norm
    is the first of ``NORM_NAMES`` the backbone has. ``TypeError`` names what is missing.
    """
    backbone = getattr(base, "base_model", None)
    if backbone is None or backbone is base:
        raise TypeError(f"{type(base).__name__} has no backbone (base_model): not a *ForCausalLM model")
    n_layers = text_config(base.config).num_hidden_layers
    lists = [n for n, c in backbone.named_children() if isinstance(c, nn.ModuleList) and len(c) == n_layers]
    norms = [n for n in NORM_NAMES if isinstance(getattr(backbone, n, None), nn.Module)]
    if len(lists) != 1 or not norms:
        raise TypeError(
            f"{type(base).__name__} is not supported by the early-exit head: it needs one list of "
            f"{n_layers} decoder layers and a final norm ({', '.join(NORM_NAMES)}) in its backbone"
        )
    return backbone, lists[0], norms[0]


def decoder_layers(base: nn.Module) -> nn.ModuleList:
    """The backbone's list of decoder layers."""
    backbone, layers, _ = layout(base)
    return getattr(backbone, layers)


def set_layer_idx(module: nn.Module, idx: int) -> None:
    """Point every ``layer_idx`` under ``module`` at cache slot ``idx``."""
    for m in module.modules():
        if hasattr(m, "layer_idx"):
            m.layer_idx = idx


@contextlib.contextmanager
def capture_output(module: nn.Module):
    """Collect ``module``'s outputs (a list, last call last) while the context is open."""
    seen: list[torch.Tensor] = []
    handle = module.register_forward_hook(lambda _m, _a, out: seen.append(out[0] if isinstance(out, tuple) else out))
    try:
        yield seen
    finally:
        handle.remove()


def first_n(base: nn.Module, input_ids: torch.Tensor, n: int, **kwargs) -> torch.Tensor:
    """``H^N``: the base's residual stream after its first ``n`` layers (``hidden_states[n]``)."""
    out = base(input_ids=input_ids, output_hidden_states=True, use_cache=False, **kwargs)
    return out.hidden_states[n]


def final_norm(model: nn.Module) -> nn.Module:
    """The backbone's final norm: its output is the last-layer hidden state H^(T) Cali-TS reads
    (capture it with ``capture_output(final_norm(target))`` around a target forward)."""
    backbone, _, norm = layout(model)
    return getattr(backbone, norm)
