"""Early-exit draft model for EESD, on any Hugging Face decoder-only causal LM.

Liu et al., "Speculative Decoding via Early-exiting for Faster LLM Inference with Thompson Sampling
Control Mechanism" (arXiv 2406.03853), Eq. (1): ``p(y_t) = softmax(W^T · Norm(Layer_e(H_t^N)))``.
The target's embeddings and first ``N`` decoder layers (the frozen, shared trunk) produce ``H^N``
(= ``hidden_states[N]``, the residual stream before any final norm); one extra decoder layer,
initialised as a copy of the target's **last** layer, a copy of the final norm and an **untied** copy of
the LM head (``EarlyExitHead``) turn it into draft logits. Only the head is stored
(``early_exit.safetensors`` + ``early_exit.json``); the trunk is always the base model's.

The draft is run as a *stock* model of the base's own class with ``N + 1`` layers (``exit_model``):
its embeddings, position embeddings/rotary module and first ``N`` layers are the base's modules
(shared, not copied), its layer ``N`` is the exit layer, its final norm and LM head are the head's.
So masks, position ids and caches behave exactly as in the base architecture, and ``EarlyExitLM``
(a ``CachedLM``) drafts with the prefix + tree conventions of ``specviz.models.tree_forward``.
Works for every family whose backbone keeps its blocks in one ``ModuleList`` and has a final norm
(Llama, Qwen2/3, Mistral, GPT-2, GPT-NeoX, Phi, ...).

KV reuse (``EarlyExitLM(..., share=target_lm)``): the trunk layers compute the same keys and values
as the target's first ``N`` layers at the same positions, so the draft reads the committed prefix of
those layers from the target's cache and keeps only its own uncommitted tail. ``CachedLM`` keeps a
full-length ``DynamicLayer`` per layer for every supported family (sliding windows are applied by the
mask), so every family shares; a target cache layer of another kind is not read (the draft computes
its own). Cutting the cache goes through ``CachedLM._select``, the one routine behind ``keep``.
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
from pathlib import Path

import torch
from torch import nn
from transformers.cache_utils import DynamicLayer

from specviz.errors import SpecvizError
from specviz.models.tree_forward import CachedLM

HEAD_WEIGHTS = "early_exit.safetensors"
HEAD_CONFIG = "early_exit.json"
CALIBRATION_WEIGHTS = "calibration.safetensors"
FORMAT = "specviz-early-exit"
NORM_NAMES = ("norm", "ln_f", "final_layer_norm", "final_layernorm", "norm_f", "final_norm")


# ------------------------------------------------------------------------------------------------
# Architecture discovery


def _text_config(config):
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def layout(base: nn.Module) -> tuple[nn.Module, str, str]:
    """``(backbone, layers_attribute, final_norm_attribute)`` of a decoder-only causal LM.

    The layer list is the backbone's ``ModuleList`` with ``num_hidden_layers`` blocks; the final norm
    is the first of ``NORM_NAMES`` the backbone has. ``TypeError`` names what is missing.
    """
    backbone = getattr(base, "base_model", None)
    if backbone is None or backbone is base:
        raise TypeError(f"{type(base).__name__} has no backbone (base_model): not a *ForCausalLM model")
    n_layers = _text_config(base.config).num_hidden_layers
    lists = [n for n, c in backbone.named_children() if isinstance(c, nn.ModuleList) and len(c) == n_layers]
    norms = [n for n in NORM_NAMES if isinstance(getattr(backbone, n, None), nn.Module)]
    if len(lists) != 1 or not norms:
        raise TypeError(f"{type(base).__name__} is not supported by the early-exit head: it needs one list of "
                        f"{n_layers} decoder layers and a final norm ({', '.join(NORM_NAMES)}) in its backbone")
    return backbone, lists[0], norms[0]


def _layers(base: nn.Module) -> nn.ModuleList:
    backbone, layers, _ = layout(base)
    return getattr(backbone, layers)


def _set_layer_idx(module: nn.Module, idx: int) -> None:
    for m in module.modules():
        if hasattr(m, "layer_idx"):
            m.layer_idx = idx


# ------------------------------------------------------------------------------------------------
# The head and the exit model


class EarlyExitHead(nn.Module):
    """Exit layer + final norm + LM head on top of the first ``exit_layer`` layers of ``base``.

    Parameters (the only trainable ones, and all that is saved): ``layer`` (a copy of the base's last
    decoder layer), ``norm`` (a copy of its final norm), ``lm_head`` (a copy of its output embedding,
    untied even when the base ties it to the input embedding). With ``shared_head`` the LM head is the
    base's own output embedding instead, shared and frozen (Eq. 1's W is then the target's): at a
    large vocabulary (SmolLM2's 49,152 x 576 = 28M weights) a copy would dwarf the rest of the head.

    * ``exit_model``: the stock ``N + 1``-layer model sharing the trunk (``exit_model(input_ids)``).
    * ``logits_for(input_ids)``: draft logits of a whole sequence, no cache.
    * ``forward(hidden_states, position_ids)``: draft logits from ``H^N`` (training reuses the
      target's ``hidden_states[N]`` instead of running the trunk twice; it briefly swaps the exit
      model's layer list, so do not call it from two threads at once).
    """

    def __init__(self, base: nn.Module, exit_layer: int, shared_head: bool = False):
        super().__init__()
        layers = _layers(base)
        if not 1 <= exit_layer < len(layers):
            raise ValueError(f"exit_layer must be in [1, {len(layers) - 1}] for a {len(layers)}-layer model, "
                             f"got {exit_layer}")
        self.exit_layer = int(exit_layer)
        self.shared_head = bool(shared_head)
        backbone, _, norm = layout(base)
        self.layer = copy.deepcopy(layers[-1])  # initialised from the LAST layer (EESD section 3.1)
        _set_layer_idx(self.layer, self.exit_layer)  # its slot in the exit model's cache
        self.norm = copy.deepcopy(getattr(backbone, norm))
        if self.shared_head:  # the base's own output embedding, frozen and not saved (not a submodule)
            object.__setattr__(self, "lm_head", base.get_output_embeddings())
        else:
            self.lm_head = copy.deepcopy(base.get_output_embeddings())  # deepcopy clones a tied weight: untied
        self.requires_grad_(True)  # all trainable, even when copied from a frozen base
        object.__setattr__(self, "_base", base)  # not a submodule: kept out of parameters and state dict
        object.__setattr__(self, "_exit_model", None)

    @property
    def base(self) -> nn.Module:
        return self._base

    @property
    def exit_model(self) -> nn.Module:
        if self._exit_model is None:
            object.__setattr__(self, "_exit_model", build_exit_model(self._base, self))
        return self._exit_model

    def logits_for(self, input_ids: torch.Tensor) -> torch.Tensor:
        """Draft logits for whole sequences ``(batch, seq)``, no cache (training and evaluation)."""
        return self.exit_model(input_ids=input_ids, use_cache=False).logits

    def forward(self, hidden_states: torch.Tensor, position_ids: torch.Tensor | None = None,
                return_hidden: bool = False):
        """Draft logits from ``H^N`` ``(batch, seq, d)`` of a full sequence (positions ``0..seq-1`` unless
        given). ``return_hidden`` also returns the post-norm hidden state ``h_D`` (Cali-TS, Eq. 5)."""
        model = self.exit_model
        backbone, layers, _ = layout(model)
        if position_ids is None:
            position_ids = torch.arange(hidden_states.shape[1], device=hidden_states.device)[None]
        elif position_ids.dim() == 1:
            position_ids = position_ids[None]

        def feed(_module, args, kwargs):  # the exit layer sees H^N, whatever the backbone computed before it
            if args:
                return (hidden_states,) + tuple(args[1:]), kwargs
            return args, {**kwargs, "hidden_states": hidden_states}

        trunk = getattr(backbone, layers)
        handle = self.layer.register_forward_pre_hook(feed, with_kwargs=True)
        try:
            setattr(backbone, layers, nn.ModuleList([self.layer]))  # skip the trunk: its output is given
            with capture_output(self.norm) as h_d:
                logits = model(inputs_embeds=torch.zeros_like(hidden_states), position_ids=position_ids,
                               use_cache=False).logits
        finally:
            setattr(backbone, layers, trunk)
            handle.remove()
        return (logits, h_d[0]) if return_hidden else logits


def build_exit_model(base: nn.Module, head: EarlyExitHead) -> nn.Module:
    """A model of ``type(base)`` with ``N + 1`` layers: the base's embeddings, position modules and first
    ``N`` layers (shared), then ``head.layer``, ``head.norm`` and ``head.lm_head``. Built on the meta
    device, so no weights are allocated; every tensor it holds belongs to ``base`` or ``head``."""
    n = head.exit_layer
    config = copy.deepcopy(base.config)
    text = _text_config(config)
    text.num_hidden_layers = n + 1
    if getattr(text, "layer_types", None):
        text.layer_types = list(text.layer_types[:n]) + [text.layer_types[-1]]
    for cfg in {id(config): config, id(text): text}.values():
        cfg.tie_word_embeddings = False
    with torch.device("meta"):
        shell = type(base)(config)
    backbone, layers, norm = layout(base)
    shell_backbone = shell.base_model
    for name, child in backbone.named_children():
        if name == layers:
            setattr(shell_backbone, name, nn.ModuleList(list(getattr(backbone, layers)[:n]) + [head.layer]))
        elif name == norm:
            setattr(shell_backbone, name, head.norm)
        else:
            setattr(shell_backbone, name, child)
    out_name = next(n_ for n_, c in base.named_children() if c is base.get_output_embeddings())
    for name, child in base.named_children():
        if child is backbone:
            continue
        setattr(shell, name, head.lm_head if name == out_name else child)
    on_meta = [k for k, t in list(shell.named_parameters()) + list(shell.named_buffers()) if t.is_meta]
    if on_meta and not next(base.parameters()).is_meta:
        raise TypeError(f"{type(base).__name__}: the exit model kept unshared tensors {on_meta[:4]}")
    shell.training = shell_backbone.training = False  # the shared modules keep their own mode
    if hasattr(base, "generation_config"):
        shell.generation_config = base.generation_config
    return shell


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


# ------------------------------------------------------------------------------------------------
# Decoding: a CachedLM over the exit model, optionally reading the target's trunk KV


class SharedPrefixLayer(DynamicLayer):
    """A trunk cache layer of the draft whose first ``shared`` positions live in the target's cache.

    ``source`` is the target's ``CachedLM`` and ``index`` the layer; the draft keeps only its tail
    (positions ``shared..``). ``keys``/``values`` read as the full sequence (prefix + tail).
    """

    def __init__(self, source: CachedLM, index: int):
        self.source, self.index, self.shared = source, index, 0
        self.tail_keys = self.tail_values = None
        super().__init__()
        self.is_initialized = False

    def _src(self):
        return self.source.cache.layers[self.index]

    def _full(self, tail: torch.Tensor | None, which: str) -> torch.Tensor | None:
        if self.shared == 0:
            return tail
        prefix = getattr(self._src(), which)[..., : self.shared, :]
        return prefix if tail is None else torch.cat([prefix, tail], dim=-2)

    @property
    def keys(self):
        return self._full(self.tail_keys, "keys")

    @keys.setter
    def keys(self, value):  # a full-length tensor (CacheLayerMixin init, or a commit through a plain view)
        self.tail_keys = None if value is None else value[..., self.shared:, :]

    @property
    def values(self):
        return self._full(self.tail_values, "values")

    @values.setter
    def values(self, value):
        self.tail_values = None if value is None else value[..., self.shared:, :]

    def sync(self, shared: int) -> None:
        """Read positions ``< shared`` from the target from now on, dropping the draft's own copies."""
        layers = self.source.cache.layers  # the target's cache creates its layers lazily
        src = layers[self.index] if self.index < len(layers) else None
        if shared <= self.shared or not (type(src) is DynamicLayer and src.is_initialized):
            return
        drop = shared - self.shared
        if self.tail_keys is not None:
            self.tail_keys, self.tail_values = self.tail_keys[..., drop:, :], self.tail_values[..., drop:, :]
        self.shared = shared
        self.is_initialized = True

    def lazy_initialization(self, key_states, value_states) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self.tail_keys = key_states if self.tail_keys is None else torch.cat([self.tail_keys, key_states], -2)
        self.tail_values = value_states if self.tail_values is None else torch.cat([self.tail_values, value_states], -2)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.shared + (0 if self.tail_keys is None else self.tail_keys.shape[-2])

    def reset(self) -> None:
        self.shared, self.tail_keys, self.tail_values, self.is_initialized = 0, None, None, False


class EarlyExitLM(CachedLM):
    """The early-exit draft as a ``CachedLM``: ``forward(tokens, parents)``, ``extend``, ``commit``,
    ``rollback`` exactly as for a draft model, returning draft logits. After each call
    ``last_hidden`` holds ``h_D`` (post-norm exit hidden state, float32) row for row with the logits
    the call returned (Cali-TS's ``H^(D)``, Eq. 5).

    ``share``: the target's ``CachedLM``. The trunk layers then read the target's committed prefix
    (positions below both models' ``prefix_len``) from its cache instead of keeping their own; the
    caller keeps both prefixes on the same committed sequence (as any engine does) and resets both
    together. The draft's trunk then stores only its uncommitted tail (the committed prefix is read,
    not copied, until a forward concatenates it as ``DynamicLayer`` does for every call).
    """

    def __init__(self, head: EarlyExitHead, vocab_size: int | None = None, share: CachedLM | None = None):
        self.head, self.share = head, share
        self.last_hidden: torch.Tensor | None = None
        super().__init__(head.exit_model, vocab_size)

    def reset(self) -> None:
        super().reset()
        if self.share is not None:  # trunk layers read the target's prefix; the exit layer keeps its own KV
            self.cache.layers = [SharedPrefixLayer(self.share, i) for i in range(self.head.exit_layer)]
            self.cache.layers.append(DynamicLayer())

    def _shared(self) -> list[SharedPrefixLayer]:
        return [layer for layer in self.cache.layers if isinstance(layer, SharedPrefixLayer)]

    @property
    def shared_len(self) -> int:
        """Positions of the trunk cache currently read from the target (0 without ``share``)."""
        shared = self._shared()
        return shared[0].shared if shared else 0

    def forward(self, tokens: list[int], parents: list[int]) -> torch.Tensor:
        if self.share is not None:
            upto = min(self.share.prefix_len, self.prefix_len)
            if upto < self.shared_len:
                raise SpecvizError("the target's cache was reset under a drafter that shares it: reset both")
            for layer in self._shared():
                layer.sync(upto)
        with capture_output(self.head.norm) as h_d:
            logits = super().forward(tokens, parents)
        self.last_hidden = h_d[-1][0].float() if h_d else None
        return logits

    def extend(self, context: list[int], tokens: list[int] = (), parents: list[int] = ()) -> torch.Tensor:
        logits = super().extend(context, tokens, parents)
        self.last_hidden = self.last_hidden[len(context) - 1:]
        return logits

    def _select(self, nodes: list[int]) -> None:
        """``CachedLM._select`` (the one routine behind ``keep``/``commit``/``rollback``) run on plain
        full-length views of the shared trunk layers; each then keeps only its new tail."""
        shared = {i: layer for i, layer in enumerate(self.cache.layers) if isinstance(layer, SharedPrefixLayer)}
        for i, layer in shared.items():
            view = DynamicLayer()
            if layer.tail_keys is not None or layer.shared:
                view.keys, view.values, view.is_initialized = layer.keys, layer.values, True
            self.cache.layers[i] = view
        try:
            super()._select(nodes)
        finally:
            for i, layer in shared.items():
                view = self.cache.layers[i]
                if view.is_initialized:
                    layer.keys, layer.values = view.keys, view.values
                self.cache.layers[i] = layer


# ------------------------------------------------------------------------------------------------
# The calibration head of Cali-TS


class CalibrationHead(nn.Module):
    """theta_M = softmax(W_p [W^j H^(T); H^(D)])[1] (EESD Eq. 5), ``j = min(i, 10)`` the 1-based index
    of the draft token in the round. ``W^1..W^10`` are d x d (identity at init), ``W_p`` is 2 x 2d; no
    biases. ``H^(T)``: the target's last-layer hidden state at the last committed position;
    ``H^(D)``: the draft's post-norm hidden state of draft token i (``EarlyExitLM.last_hidden``)."""

    def __init__(self, hidden_size: int, positions: int = 10):
        super().__init__()
        self.positions = positions
        self.w = nn.Parameter(torch.eye(hidden_size).repeat(positions, 1, 1))
        self.w_p = nn.Linear(2 * hidden_size, 2, bias=False)
        nn.init.zeros_(self.w_p.weight)  # theta_M = 0.5 before training

    def project_target(self, h_target: torch.Tensor) -> torch.Tensor:
        """``W^j H^(T)`` for j = 1..positions, ``[positions, d]``: computed once per round."""
        return torch.einsum("jde,e->jd", self.w, h_target.to(self.w.dtype))

    def forward(self, projected: torch.Tensor, h_draft: torch.Tensor, i: int) -> torch.Tensor:
        """theta_M for draft token ``i`` (1-based) from ``project_target(...)`` and its ``h_D``."""
        j = min(max(int(i), 1), self.positions)
        z = self.w_p(torch.cat([projected[j - 1], h_draft.to(self.w.dtype)], -1))
        return torch.softmax(z, -1)[..., 1]


# ------------------------------------------------------------------------------------------------
# Files


def save_early_exit(head: EarlyExitHead, path: str | os.PathLike, base: str = "../target", extra: dict | None = None,
                    dtype: torch.dtype = torch.float32) -> Path:
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
        "model_type": getattr(_text_config(head.base.config), "model_type", None),
        "num_base_layers": len(_layers(head.base)),
        "hidden_size": out.shape[1],
        "vocab_size": out.shape[0],
        "layer_init": "copy of the base model's last decoder layer",
        "norm_init": "copy of the base model's final norm",
        "lm_head": ("the base model's own output embedding (shared, frozen, not saved)" if head.shared_head
                    else "untied trainable copy of the base LM head"),
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
    n_layers = len(_layers(base_model))
    head_w = base_model.get_output_embeddings().weight
    if meta.get("num_base_layers", n_layers) != n_layers or meta.get("vocab_size") != head_w.shape[0] or meta.get(
        "hidden_size"
    ) != head_w.shape[1]:
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


def save_calibration(cal: CalibrationHead, path: str | os.PathLike, dtype: torch.dtype = torch.float32) -> Path:
    """Write a calibration head (in ``dtype``) into an early-exit head directory."""
    from safetensors.torch import save_file

    path = Path(path)
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in cal.state_dict().items()}
    save_file(state, str(path / CALIBRATION_WEIGHTS), metadata={"format": FORMAT + "-calibration"})
    return path


def load_calibration(path: str | os.PathLike, like: torch.Tensor | None = None) -> tuple[CalibrationHead, float] | None:
    """The calibration head saved in an early-exit head directory and its ``sigma_m`` (RMS error on
    held-out data, Cali-TS's sigma_M), or None when the directory has none. ``like``: a tensor whose
    device the head is moved to."""
    from safetensors.torch import load_file

    path = Path(path)
    if not (path / CALIBRATION_WEIGHTS).is_file():
        return None
    state = {k: v.float() for k, v in load_file(str(path / CALIBRATION_WEIGHTS)).items()}
    positions, hidden = state["w"].shape[:2]
    cal = CalibrationHead(hidden, positions)
    cal.load_state_dict(state, strict=True)
    if like is not None:
        cal.to(like.device)
    sigma_m = float(read_early_exit_config(path).get("calibration", {}).get("sigma_m", 0.3))
    return cal.eval(), sigma_m


def final_norm(model: nn.Module) -> nn.Module:
    """The backbone's final norm: its output is the last-layer hidden state H^(T) Cali-TS reads
    (capture it with ``capture_output(final_norm(target))`` around a target forward)."""
    backbone, _, norm = layout(model)
    return getattr(backbone, norm)


def resolve_base(path: str | os.PathLike) -> Path:
    """The base model directory named by ``early_exit.json`` (relative paths are relative to ``path``)."""
    meta = read_early_exit_config(path)
    return (Path(path) / meta.get("base", "..")).resolve()
