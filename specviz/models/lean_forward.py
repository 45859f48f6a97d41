"""A direct forward pass for Llama-architecture decoders: the same operations as ``transformers``'
own modules, in the same order, called without the framework around them.

A one-token call on the bundled pair spends more time in per-call Python than in arithmetic: module
``__call__`` hooks, output dataclasses, mask and cache bookkeeping, keyword plumbing. For the
decoders whose layer is the Llama layer (Llama, Mistral, Qwen2: RMSNorm, rotary q/k, SDPA attention,
gated MLP) this module reads the model's own weights and runs the layer as plain ``torch`` calls, in
the spirit of gpt-fast's ``generate.py``. It computes what ``model(...)`` computes, kernel for
kernel: the tests compare logits with the stock forward (bitwise equal on the CPU in float32, but for
the weight-major calls below), on
trees, after keep/rollback, and for grouped-query attention. Anything it does not know (another
architecture, an attention implementation other than SDPA, hooks from ``accelerate`` offloading,
quantised or tensor-parallel linears) keeps the stock forward: ``LeanForward.build`` returns None.

The KV cache stays the ``transformers`` cache the rest of ``specviz`` manipulates (``CachedLM``'s
keep/rollback, the early-exit drafter's shared trunk), updated through ``Cache.update``.

**Weight-major products on a multi-threaded CPU.** A call on a few tokens is where speculative
decoding gains: verifying n tokens should cost about what one does, since each call streams every
weight from memory once. MKL's ``x @ W.T`` (what ``F.linear`` runs) does not deliver that for a few
rows on a CPU: on the 2-core machine this project is built on, SmolLM2-135M's layer matmuls took
42 ms for one token and 69 ms for two. The same product computed as ``(W @ x.T).T`` lets the
library split the weight matrix's rows between the threads, and two tokens cost what one does
(2 threads: 37 against 43 ms, four tokens 36 ms; ``docs/bench.md``). So on a CPU with more than one
thread, calls on 2 to ``WEIGHT_MAJOR_MAX`` tokens use it (``SPECVIZ_WEIGHT_MAJOR=0`` turns it off,
``=1`` forces it on any device and thread count). Its sums run in another order, so those calls'
logits equal the stock forward's to float32 rounding (tested to 1e-5), not bit for bit; one-token
calls, single-threaded runs and GPUs keep the stock kernels exactly.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers.cache_utils import get_layer_types_and_kwargs

SUPPORTED = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM")
WEIGHT_MAJOR_MAX = 32  # the most tokens a call computes weight-major (module docstring)
WEIGHT_MAJOR = os.environ.get("SPECVIZ_WEIGHT_MAJOR", "auto").strip().lower()  # auto, 0 or 1
# rotary module -> {position: (cos, sin)} of one-token calls, kept across runs while the model lives
_ROPE_MEMO: "weakref.WeakKeyDictionary[nn.Module, dict[int, tuple[torch.Tensor, torch.Tensor]]]" = (
    weakref.WeakKeyDictionary()
)


@dataclass(frozen=True)
class _Layer:
    """One decoder layer's weights (biases may be None), its norms' epsilon and its attention type."""

    norm1: torch.Tensor
    q: tuple
    k: tuple
    v: tuple
    o: tuple
    norm2: torch.Tensor
    gate: tuple
    up: tuple
    down: tuple
    eps: float
    kind: str  # attention type: the key of its mask
    index: int  # its layer in the cache


def _linear(module: nn.Module) -> tuple:
    return module.weight, module.bias


def _weight_major(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` for ``x`` of shape ``(1, n, k)``, computed as ``(weight @ x.T).T``."""
    y = torch.mm(weight, x[0].t()).t()
    return (y if bias is None else y + bias).unsqueeze(0)


def weight_major(n: int, device: torch.device) -> bool:
    """Whether a call on ``n`` tokens computes its products weight-major (module docstring)."""
    if WEIGHT_MAJOR in ("0", "false", "off") or not 1 < n <= WEIGHT_MAJOR_MAX:
        return False
    return WEIGHT_MAJOR in ("1", "true", "on") or (device.type == "cpu" and torch.get_num_threads() > 1)


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm exactly as ``LlamaRMSNorm.forward`` (statistics in float32, scaled in the input dtype)."""
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding as ``apply_rotary_pos_emb`` (rotate-half convention)."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


def _scan(model: nn.Module) -> tuple[int, ...] | None:
    """None when ``model`` is not one ``LeanForward`` reproduces exactly; else the identities of its
    parameters (a build made for the same parameters can be reused). One pass over the modules."""
    if type(model).__name__ not in SUPPORTED or getattr(model.config, "_attn_implementation", None) != "sdpa":
        return None
    if getattr(model.config, "pretraining_tp", 1) != 1 or getattr(model.config, "hidden_act", "silu") != "silu":
        return None
    params: list[torch.Tensor] = []
    stack = [model]  # every module, by its ``_modules`` directly (``modules()``' generators cost 3x)
    while stack:
        module = stack.pop()
        if "_hf_hook" in vars(module) or module._forward_hooks or module._forward_pre_hooks:
            return None
        if isinstance(module, nn.Linear) and type(module) is not nn.Linear:
            return None
        params += [p for p in module._parameters.values() if p is not None]
        stack += [m for m in module._modules.values() if m is not None]
    if len({p.device for p in params}) != 1:
        return None
    return tuple(id(p) for p in params)


# model -> (its parameters' identities, the LeanForward built for them): a decode builds two per run
_BUILT: "weakref.WeakKeyDictionary[nn.Module, tuple[tuple[int, ...], LeanForward]]" = weakref.WeakKeyDictionary()


class LeanForward:
    """``LeanForward.build(model)``: a callable ``(input_ids, position_ids, masks, cache) -> logits``
    equal to ``model(input_ids=..., position_ids=..., attention_mask=..., cache=cache).logits``,
    or None when ``model`` is not one it reproduces exactly. ``masks``: layer type -> additive 4D mask."""

    def __init__(self, model: nn.Module):
        base = model.model
        cfg = model.config
        self.embed = base.embed_tokens.weight
        self.norm = base.norm  # the final norm and head are called as modules: forward hooks on them
        self.head = model.lm_head  # (the early-exit drafter captures the norm's output) still fire
        self.rotary = base.rotary_emb
        static = not any(word in str(getattr(self.rotary, "rope_type", "default")) for word in ("dynamic", "longrope"))
        self.rope_memo = _ROPE_MEMO.setdefault(self.rotary, {}) if static else None
        self.head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.groups = cfg.num_attention_heads // cfg.num_key_value_heads
        self.scale = self.head_dim**-0.5
        types, _ = get_layer_types_and_kwargs(cfg.get_text_config(decoder=True))
        self.layers = [
            _Layer(
                layer.input_layernorm.weight,
                _linear(layer.self_attn.q_proj),
                _linear(layer.self_attn.k_proj),
                _linear(layer.self_attn.v_proj),
                _linear(layer.self_attn.o_proj),
                layer.post_attention_layernorm.weight,
                _linear(layer.mlp.gate_proj),
                _linear(layer.mlp.up_proj),
                _linear(layer.mlp.down_proj),
                layer.input_layernorm.variance_epsilon,
                kind,
                layer.self_attn.layer_idx,
            )
            for layer, kind in zip(base.layers[: cfg.num_hidden_layers], types)
        ]

    @classmethod
    def build(cls, model: nn.Module) -> "LeanForward | None":
        """The lean forward of ``model``, or None (module docstring). Checked on every call (a hook added
        later turns it off); built once per model while its parameters stay the same tensors."""
        key = _scan(model)
        if key is None:
            return None
        known = _BUILT.get(model)
        if known is None or known[0] != key:
            known = _BUILT[model] = (key, cls(model))
        return known[1]

    @torch.inference_mode()
    def __call__(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        masks: dict[str, torch.Tensor],
        cache,
        position: int | None = None,
        keep: tuple[int, ...] = (),
        head: torch.Tensor | None = None,
    ):
        """``position``: the position of a one-token call, as a Python int (its rotary cos/sin are memoised).
        ``keep``: also return the inputs of those layers (``hidden_states`` indices), concatenated
        ``[n, F]``: ``(logits, features)``. ``head``: the output rows to compute (a cut draft vocabulary's
        slice of the head's weight, ``CachedLM(head_rows=...)``) instead of the whole head."""
        n = input_ids.shape[1]
        major = weight_major(n, input_ids.device)
        linear = _weight_major if major else F.linear
        x = F.embedding(input_ids, self.embed)
        cos, sin = self._rope(x, position_ids, position)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        kept: dict[int, torch.Tensor] = {}
        for i, layer in enumerate(self.layers):
            if i in keep:
                kept[i] = x[0]
            h = _rms(x, layer.norm1, layer.eps)
            q = linear(h, *layer.q).reshape(1, n, -1, self.head_dim).transpose(1, 2)
            k = linear(h, *layer.k).reshape(1, n, -1, self.head_dim).transpose(1, 2)
            v = linear(h, *layer.v).reshape(1, n, -1, self.head_dim).transpose(1, 2)
            k, v = cache.update(_rotate(k, cos, sin), v, layer.index)
            x = x + linear(self._attend(_rotate(q, cos, sin), k, v, masks[layer.kind]), *layer.o)
            h = _rms(x, layer.norm2, layer.eps)
            x = x + linear(F.silu(linear(h, *layer.gate)) * linear(h, *layer.up), *layer.down)
        h = self.norm(x)
        if head is not None:
            logits = _weight_major(h, head) if major else F.linear(h, head)
        elif major and not (self.head._forward_hooks or self.head._forward_pre_hooks):
            logits = _weight_major(h, self.head.weight, self.head.bias)
        else:
            logits = self.head(h)
        return (logits, torch.cat([kept[i] for i in keep], -1)) if keep else logits

    def _rope(self, x: torch.Tensor, position_ids: torch.Tensor, position: int | None) -> tuple[torch.Tensor, ...]:
        """The rotary module's (cos, sin); for a one-token call at ``position`` the module's own output for
        that call, computed once per position and model (not for rope types that rescale with the length)."""
        if position is None or self.rope_memo is None:
            return self.rotary(x, position_ids)
        hit = self.rope_memo.get(position)
        if hit is None or hit[0].device != x.device or hit[0].dtype != x.dtype:
            hit = self.rope_memo[position] = self.rotary(x, position_ids)
        return hit

    def _attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """SDPA as ``transformers.integrations.sdpa_attention`` runs it with an explicit mask: one query
        packs its head groups onto the KV heads; several repeat the KV heads."""
        n = q.shape[2]
        if self.groups > 1:
            if n == 1:
                q = q.reshape(1, -1, self.groups, self.head_dim)
            else:
                k = k[:, :, None].expand(-1, -1, self.groups, -1, -1).reshape(1, -1, *k.shape[2:])
                v = v[:, :, None].expand(-1, -1, self.groups, -1, -1).reshape(1, -1, *v.shape[2:])
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.scale)
        return out.reshape(1, -1, n, self.head_dim).transpose(1, 2).reshape(1, n, -1)
