"""An early-exit head directory: ``early_exit.safetensors`` (the head's weights only; the trunk is always
the base model's) and ``early_exit.json`` (its exit layer, its base and what it was trained on)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

from specviz.models.early_exit.head import EarlyExitHead
from specviz.models.early_exit.layout import decoder_layers, text_config

HEAD_WEIGHTS = "early_exit.safetensors"
HEAD_CONFIG = "early_exit.json"
FORMAT = "specviz-early-exit"


def save_early_exit(
    head: EarlyExitHead,
    path: str | os.PathLike,
    base: str = "../target",
    extra: dict | None = None,
    dtype: torch.dtype = torch.float32,
) -> Path:
    """Write ``early_exit.safetensors`` (head weights only, in ``dtype``) and ``early_exit.json``."""
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in head.state_dict().items()}
    save_file(state, str(path / HEAD_WEIGHTS), metadata={"format": FORMAT})
    out = head.lm_head.weight
    meta = {
        "format": FORMAT,
        "version": 1,
        "exit_layer": head.exit_layer,
        "base": base,
        "model_type": getattr(text_config(head.base.config), "model_type", None),
        "num_base_layers": len(decoder_layers(head.base)),
        "hidden_size": out.shape[1],
        "vocab_size": out.shape[0],
        "layer_init": "copy of the base model's last decoder layer",
        "norm_init": "copy of the base model's final norm",
        "lm_head": (
            "the base model's own output embedding (shared, frozen, not saved)"
            if head.shared_head
            else "untied trainable copy of the base LM head"
        ),
        "shared_head": head.shared_head,
        "parameters": sum(v.numel() for v in state.values()),
    }
    meta.update(extra or {})
    (path / HEAD_CONFIG).write_text(json.dumps(meta, indent=2) + "\n")
    return path


def read_early_exit_config(path: str | os.PathLike) -> dict:
    path = Path(path)
    cfg_file = path / HEAD_CONFIG
    if not cfg_file.is_file():
        raise FileNotFoundError(f"{cfg_file} not found: not an early-exit head directory")
    meta = json.loads(cfg_file.read_text())
    if meta.get("format") != FORMAT or "exit_layer" not in meta:
        raise ValueError(f"{cfg_file} is not a {FORMAT} config")
    return meta


def load_early_exit(path: str | os.PathLike, base_model: nn.Module) -> EarlyExitHead:
    """Build the head on ``base_model`` and load its trained weights from ``path``.

    The head takes the base model's dtype and device. Raises ``ValueError`` if the saved head does not
    fit the base (different hidden size, vocabulary or layer count).
    """
    from safetensors.torch import load_file

    path = Path(path)
    meta = read_early_exit_config(path)
    n_layers = len(decoder_layers(base_model))
    head_w = base_model.get_output_embeddings().weight
    if (
        meta.get("num_base_layers", n_layers) != n_layers
        or meta.get("vocab_size") != head_w.shape[0]
        or meta.get("hidden_size") != head_w.shape[1]
    ):
        raise ValueError(
            f"early-exit head in {path} was trained for a base with {meta.get('num_base_layers')} layers, "
            f"hidden {meta.get('hidden_size')}, vocab {meta.get('vocab_size')}; this base has {n_layers} layers, "
            f"hidden {head_w.shape[1]}, vocab {head_w.shape[0]}"
        )
    head = EarlyExitHead(base_model, int(meta["exit_layer"]), shared_head=bool(meta.get("shared_head", False)))
    state = load_file(str(path / HEAD_WEIGHTS))
    head.load_state_dict({k: v.to(head_w.dtype) for k, v in state.items()}, strict=True)
    head.to(device=head_w.device, dtype=head_w.dtype)
    head.eval()
    return head


def resolve_base(path: str | os.PathLike) -> Path:
    """The base model directory named by ``early_exit.json`` (relative paths are relative to ``path``)."""
    meta = read_early_exit_config(path)
    return (Path(path) / meta.get("base", "..")).resolve()
