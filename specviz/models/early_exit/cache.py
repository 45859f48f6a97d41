"""Drafting with the early-exit head: ``EarlyExitLM``, a ``CachedLM`` over the exit model.

KV reuse (``EarlyExitLM(..., share=target_lm)``): the trunk layers compute the same keys and values
as the target's first ``N`` layers at the same positions, so the draft reads the committed prefix of
those layers from the target's cache and keeps only its own uncommitted tail. ``CachedLM`` keeps a
full-length ``DynamicLayer`` per layer for every supported family (sliding windows are applied by the
mask), so every family shares; a target cache layer of another kind is not read (the draft computes
its own). Cutting the cache goes through ``CachedLM._select``, the one routine behind ``keep``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from transformers.cache_utils import DynamicLayer

from specviz.errors import SpecvizError
from specviz.models.early_exit.layout import capture_output
from specviz.models.tree_forward import CachedLM

if TYPE_CHECKING:
    from specviz.models.early_exit.head import EarlyExitHead


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
        self.tail_keys = None if value is None else value[..., self.shared :, :]

    @property
    def values(self):
        return self._full(self.tail_values, "values")

    @values.setter
    def values(self, value):
        self.tail_values = None if value is None else value[..., self.shared :, :]

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
        self.last_hidden = self.last_hidden[len(context) - 1 :]
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
