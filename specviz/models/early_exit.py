"""Early-exit draft head for EESD (specs/eesd.md section 2).

``p(y_t) = softmax(W^T · Norm(Layer_e(H_t^N)))``: the target's own first ``N`` decoder layers (the
frozen, shared trunk) produce ``H^N`` (= ``hidden_states[N]``, the residual stream before any final
norm); one extra decoder layer, initialised as a copy of the target's **last** layer, a copy of the
final norm and an **untied** copy of the LM head turn it into draft logits. Only the head is stored
(``early_exit.safetensors`` + ``early_exit.json``); the trunk is always the base model's.

Works with stock ``transformers`` decoder-only models that keep their blocks as ``model.layers``, a
final ``model.norm`` and a ``model.rotary_emb`` (Llama, Qwen2, Qwen3, Mistral, ...). The head's
layer gets ``layer_idx = 0`` so it uses slot 0 of *its own* KV cache (a ``DynamicCache`` separate
from the target's); the rotary embedding module of the base model supplies the position embeddings,
so the exit layer sees the same absolute positions as the trunk.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import torch
from torch import nn

HEAD_WEIGHTS = "early_exit.safetensors"
HEAD_CONFIG = "early_exit.json"
FORMAT = "specviz-early-exit"


def _backbone(base: nn.Module) -> nn.Module:
    inner = getattr(base, "model", None)
    needed = ("layers", "norm", "rotary_emb", "embed_tokens")
    if inner is None or not all(hasattr(inner, n) for n in needed):
        raise TypeError(
            f"{type(base).__name__} is not supported by the early-exit head: it needs a Llama-like layout "
            "(model.embed_tokens, model.layers, model.norm, model.rotary_emb), as in Llama, Qwen2 or Mistral"
        )
    return inner


def _causal_mask(config, hidden: torch.Tensor, attention_mask, past_key_values, position_ids):
    """The model's own causal mask (None lets SDPA use is_causal); a given 4D mask is used as is."""
    if attention_mask is not None and attention_mask.dim() == 4:
        return attention_mask
    from transformers.masking_utils import create_causal_mask

    return create_causal_mask(
        config=config,
        inputs_embeds=hidden,
        attention_mask=attention_mask,
        past_key_values=past_key_values,
        position_ids=position_ids,
        layer_idx=0 if past_key_values is not None else None,
    )


def _run_layer(layer, hidden, mask, position_ids, pos_emb, past_key_values, use_cache) -> torch.Tensor:
    """One decoder layer call as the backbone makes it (caching whenever a cache is given)."""
    out = layer(
        hidden,
        attention_mask=mask,
        position_ids=position_ids,
        past_key_values=past_key_values,
        use_cache=use_cache if use_cache is not None else past_key_values is not None,
        position_embeddings=pos_emb,
    )
    return out[0] if isinstance(out, tuple) else out


def first_n(
    base: nn.Module,
    input_ids: torch.Tensor,
    n: int,
    position_ids: torch.Tensor | None = None,
    attention_mask: torch.Tensor | None = None,
    past_key_values=None,
    use_cache: bool | None = None,
) -> torch.Tensor:
    """The frozen trunk: embeddings then decoder layers ``[0, n)``, no final norm. Returns ``H^N``.

    ``past_key_values`` (optional) is a cache for the trunk's layers 0..n-1 (the target's own cache
    can be shared: these layers' keys and values are identical in the target pass).
    """
    inner = _backbone(base)
    hidden = inner.embed_tokens(input_ids)
    if position_ids is None:
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        position_ids = (torch.arange(hidden.shape[1], device=hidden.device) + past).unsqueeze(0)
    mask = _causal_mask(base.config, hidden, attention_mask, past_key_values, position_ids)
    pos_emb = inner.rotary_emb(hidden, position_ids=position_ids)
    for layer in inner.layers[:n]:
        hidden = _run_layer(layer, hidden, mask, position_ids, pos_emb, past_key_values, use_cache)
    return hidden


class EarlyExitHead(nn.Module):
    """Exit layer + norm + untied LM head on top of the first ``exit_layer`` layers of ``base``.

    ``forward(hidden_states_N, position_ids, attention_mask=None, past_key_values=None)`` returns the
    draft logits (and the post-norm hidden state ``h_D`` with ``return_hidden=True``, which Cali-TS uses).
    ``attention_mask`` may be None (plain causal, sized from the head's own cache), a 2D padding
    mask, or a ready 4D additive mask (tree drafting).
    """

    def __init__(self, base: nn.Module, exit_layer: int):
        super().__init__()
        inner = _backbone(base)
        n_layers = len(inner.layers)
        if not 1 <= exit_layer < n_layers:
            raise ValueError(f"exit_layer must be in [1, {n_layers - 1}] for a {n_layers}-layer model, got {exit_layer}")
        self.exit_layer = int(exit_layer)
        self.config = base.config
        self.layer = copy.deepcopy(inner.layers[-1])  # initialised from the LAST layer (eesd.md 2.1)
        if hasattr(self.layer, "self_attn"):
            self.layer.self_attn.layer_idx = 0  # slot 0 of the head's own cache
        if hasattr(self.layer, "layer_idx"):
            self.layer.layer_idx = 0
        self.norm = copy.deepcopy(inner.norm)
        head = base.get_output_embeddings()
        self.lm_head = nn.Linear(head.weight.shape[1], head.weight.shape[0], bias=False)
        self.lm_head.to(device=head.weight.device, dtype=head.weight.dtype)
        with torch.no_grad():
            self.lm_head.weight.copy_(head.weight)  # an untied clone, even when the base ties its embeddings
        # The base's rotary module supplies cos/sin; kept out of this module's parameters and state dict.
        object.__setattr__(self, "_base", base)

    @property
    def base(self) -> nn.Module:
        return self._base

    def trunk(self, input_ids: torch.Tensor, **kwargs) -> torch.Tensor:
        """``H^N`` for ``input_ids`` from the base model's first ``exit_layer`` layers."""
        return first_n(self._base, input_ids, self.exit_layer, **kwargs)

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        past_key_values=None,
        use_cache: bool | None = None,
        return_hidden: bool = False,
    ):
        if position_ids.dim() == 1:
            position_ids = position_ids.unsqueeze(0)
        pos_emb = _backbone(self._base).rotary_emb(hidden_states, position_ids=position_ids)
        mask = _causal_mask(self.config, hidden_states, attention_mask, past_key_values, position_ids)
        h = _run_layer(self.layer, hidden_states, mask, position_ids, pos_emb, past_key_values, use_cache)
        h_d = self.norm(h)
        logits = self.lm_head(h_d)
        return (logits, h_d) if return_hidden else logits

    def logits_for(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Draft logits for a whole sequence, no cache (for training and evaluation)."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        h = self.trunk(input_ids, position_ids=positions)
        return self(h, positions)


def save_early_exit(head: EarlyExitHead, path: str | os.PathLike, base: str = "../target", extra: dict | None = None) -> Path:
    """Write ``early_exit.safetensors`` (head weights only, float32) and ``early_exit.json``."""
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in head.state_dict().items()}
    save_file(state, str(path / HEAD_WEIGHTS), metadata={"format": FORMAT})
    meta = {
        "format": FORMAT,
        "version": 1,
        "exit_layer": head.exit_layer,
        "base": base,
        "num_base_layers": len(_backbone(head.base).layers),
        "hidden_size": head.lm_head.weight.shape[1],
        "vocab_size": head.lm_head.weight.shape[0],
        "layer_init": "copy of the base model's last decoder layer",
        "norm_init": "copy of model.norm",
        "lm_head": "untied trainable copy of the base LM head",
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
    n_layers = len(_backbone(base_model).layers)
    head_w = base_model.get_output_embeddings().weight
    if meta.get("num_base_layers", n_layers) != n_layers or meta.get("vocab_size") != head_w.shape[0] or meta.get(
        "hidden_size"
    ) != head_w.shape[1]:
        raise ValueError(
            f"early-exit head in {path} was trained for a base with {meta.get('num_base_layers')} layers, "
            f"hidden {meta.get('hidden_size')}, vocab {meta.get('vocab_size')}; this base has {n_layers} layers, "
            f"hidden {head_w.shape[1]}, vocab {head_w.shape[0]}"
        )
    head = EarlyExitHead(base_model, int(meta["exit_layer"]))
    state = load_file(str(path / HEAD_WEIGHTS))
    head.load_state_dict(state, strict=True)
    head.to(device=head_w.device, dtype=head_w.dtype)
    head.eval()
    return head


def resolve_base(path: str | os.PathLike) -> Path:
    """The base model directory named by ``early_exit.json`` (relative paths are relative to ``path``)."""
    meta = read_early_exit_config(path)
    return (Path(path) / meta.get("base", "..")).resolve()
