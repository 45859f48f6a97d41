"""The early-exit head (``EarlyExitHead``: exit layer, final norm, LM head; Eq. 1 of Liu et al. 2024,
arXiv 2406.03853) and the stock ``N + 1``-layer model of the base's own class it drafts with
(``build_exit_model``)."""

from __future__ import annotations

import copy

import torch
from torch import nn

from specviz.models.early_exit.layout import capture_output, decoder_layers, layout, set_layer_idx, text_config


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
        layers = decoder_layers(base)
        if not 1 <= exit_layer < len(layers):
            raise ValueError(
                f"exit_layer must be in [1, {len(layers) - 1}] for a {len(layers)}-layer model, got {exit_layer}"
            )
        self.exit_layer = int(exit_layer)
        self.shared_head = bool(shared_head)
        backbone, _, norm = layout(base)
        self.layer = copy.deepcopy(layers[-1])  # initialised from the LAST layer (EESD section 3.1)
        set_layer_idx(self.layer, self.exit_layer)  # its slot in the exit model's cache
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

    def forward(
        self, hidden_states: torch.Tensor, position_ids: torch.Tensor | None = None, return_hidden: bool = False
    ):
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
                logits = model(
                    inputs_embeds=torch.zeros_like(hidden_states), position_ids=position_ids, use_cache=False
                ).logits
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
    text = text_config(config)
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
