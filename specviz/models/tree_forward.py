"""One forward pass over a forest of draft tokens, and KV-cache keep/rollback.

``CachedLM`` wraps a stock Hugging Face causal LM and its ``DynamicCache``. The cache holds a linear
*prefix* (committed tokens) followed by a *pending tree*: nodes fed in earlier calls that are not
committed yet. ``forward(tokens, parents)`` appends new nodes under existing ones (or as new roots
continuing the prefix) and returns the logits of every new node in one call, using

* a 4D float attention mask of shape ``(1, 1, n_new, cached + n_new)``: 0 where a node may attend
  (the whole prefix, its pending-tree ancestors and itself; for a sliding-window layer only those
  within its window), the dtype's minimum elsewhere; one mask per layer type in hybrid models;
* explicit ``position_ids`` = prefix length + depth in the tree.

Every node's logits then equal those of decoding its root-to-node path sequentially (tested per
architecture family). This is the Tree Attention of "Multi-Candidate Speculative Decoding"
(arXiv 2401.06706, Sec. 3.3, Fig. 2), after SpecInfer (Miao et al., arXiv 2305.09781).

Several hypotheses share one cache: ``keep(paths)`` keeps the prefix plus the pending nodes on some
root-to-node paths (a sub-forest) and drops every other node, so the beams of "Dynamic-Width
Speculative Beam Decoding" (arXiv 2409.16560, Sec. 3.3, Fig. 3: forest-based parallel decoding)
share the prefix cache instead of keeping one cache per beam. Nodes on *every* kept path are settled
for all hypotheses and move into the prefix. ``commit(path)`` is ``keep`` of one path (all of it
moves into the prefix); ``rollback()`` keeps none. A chain is the one-branch case of a tree.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from specviz.core.trees import ROOT, chain_shape  # ROOT as a parent index: "continues the committed prefix"
from specviz.errors import SpecvizError
from specviz.models.lean_forward import LeanForward

LEAN_DEFAULT = os.environ.get("SPECVIZ_LEAN_FORWARD", "1") != "0"  # SPECVIZ_LEAN_FORWARD=0: stock forward only


@dataclass
class PendingTree:
    """Parent pointers (``ROOT`` for roots) and depths of the uncommitted nodes in the cache, in cache order."""

    parents: list[int] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.parents)

    def ancestors(self, node: int) -> list[int]:
        """Node ids from ``node`` up to its root, ``node`` included."""
        chain = []
        while node != ROOT:
            chain.append(node)
            node = self.parents[node]
        return chain

    def path(self, node: int) -> list[int]:
        """Node ids from a root down to ``node`` (empty for ``ROOT``)."""
        return self.ancestors(node)[::-1]

    def is_path(self, path: list[int]) -> bool:
        """Whether ``path`` is a root-to-node chain."""
        return all(0 <= n < len(self) and self.parents[n] == (path[i - 1] if i else ROOT) for i, n in enumerate(path))


def layer_windows(config) -> dict[str, int | None]:
    """Attention layer type -> its sliding window (``None``: full attention), from the decoder's config.

    Hybrid models (Gemma 2/3: sliding and full layers) take one mask per layer type; a model with
    one type (Llama, or Mistral with ``sliding_window`` set) takes a single mask.
    """
    from transformers.cache_utils import get_layer_types_and_kwargs

    types, kwargs = get_layer_types_and_kwargs(config.get_text_config(decoder=True))
    out: dict[str, int | None] = {}
    for kind, kw in zip(types, kwargs):
        if kind not in ("full_attention", "sliding_attention"):
            raise SpecvizError(f"tree attention supports full and sliding-window attention layers, not {kind!r}.")
        window = kw.get("sliding_window") if kind == "sliding_attention" else None
        if out.setdefault(kind, window) != window:
            raise SpecvizError(f"{kind} layers with different windows ({out[kind]}, {window}) are not supported.")
    return out


# model -> (its config, layer_windows(config)): a decode wraps each model anew, the layout is read once
_WINDOWS: "weakref.WeakKeyDictionary[PreTrainedModel, tuple[object, dict[str, int | None]]]" = (
    weakref.WeakKeyDictionary()
)


def model_windows(model: PreTrainedModel) -> dict[str, int | None]:
    """``layer_windows(model.config)``, read once per model and config object."""
    known = _WINDOWS.get(model)
    if known is None or known[0] is not model.config:
        known = _WINDOWS[model] = (model.config, layer_windows(model.config))
    return known[1]


class CachedLM:
    """A causal LM plus its KV cache, fed as prefix + tree. Records how many tokens each forward call fed
    (``fed``; ``calls`` is its length): the engine's call counts and the cost model read it.

    Every layer keeps the KV of every cached position, sliding-window layers included: their window
    is applied by the mask (a key at position ``k`` is visible from position ``t`` iff
    ``t - window < k <= t``, as in the model's own mask), so a rollback never needs a KV row that a
    window-sized cache would already have dropped.

    ``lean`` (default ``LEAN_DEFAULT``): run Llama-architecture models through ``LeanForward`` (the
    same kernels without the per-call framework overhead); other models always take ``model(...)``.

    ``features``: Hugging Face ``hidden_states`` indices (the input of decoder layer i) to keep for
    every cached position, concatenated, in ``rows`` (``[cached_len, F]``, kept and dropped with the
    KV): what a feature drafter reads (EAGLE-3, arXiv 2503.01840), from the call that verifies, so
    reading them costs no extra target call.

    ``head_rows``: the token ids whose logits are computed (a cut draft vocabulary, FR-Spec, arXiv
    2502.14856): the output head multiplies only those rows (through the lean forward; the stock
    forward computes all and masks), and every other token gets the dtype's lowest logit, so its
    warped probability is exactly 0.

    ``lens``: keep every layer's hidden states of the last call (``last_hidden``, Hugging Face
    ``hidden_states``, each ``[1, n, d]``) for the logit lens (``models.logit_lens``); the call then
    takes the stock forward, whose logits the lean one equals.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        vocab_size: int | None = None,
        lean: bool | None = None,
        features: tuple[int, ...] = (),
        head_rows: torch.Tensor | None = None,
        lens: bool = False,
    ):
        self.model = model
        self.vocab_size = vocab_size
        self.features = tuple(features)
        self.head_rows = None if head_rows is None else head_rows.to(next(model.parameters()).device)
        self.head_weight = (
            None if head_rows is None else model.get_output_embeddings().weight.detach()[self.head_rows].contiguous()
        )
        self.lean = LeanForward.build(model) if (LEAN_DEFAULT if lean is None else lean) else None
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.windows = model_windows(model)
        self.lens = lens
        self.last_hidden: tuple[torch.Tensor, ...] | None = None
        self.reset()

    def reset(self) -> None:
        self.cache = DynamicCache()  # full-length layers everywhere (see class docstring)
        self.prefix_len = 0
        self.tree = PendingTree()
        self.fed: list[int] = []  # tokens fed by each forward call so far, in call order
        self.rows: torch.Tensor | None = None  # per cached position: what ``compute`` put in ``new_rows``
        self.new_rows: torch.Tensor | None = None

    @property
    def calls(self) -> int:
        """Forward calls so far (since the last ``reset``)."""
        return len(self.fed)

    def can_draft(self, context: list[int]) -> bool:
        """Whether ``extend(context)`` can run now (a feature drafter waits for the target's first call)."""
        return True

    @property
    def cached_len(self) -> int:
        return self.prefix_len + len(self.tree)

    @torch.inference_mode()
    def forward(self, tokens: list[int], parents: list[int]) -> torch.Tensor:
        """Append ``tokens`` as pending nodes and return their logits, float32 ``[n, V]``, on the model's device.

        ``parents[i]`` is the pending-tree index of node i's parent: an existing pending node
        (``< len(tree)``), a node of this call (``len(tree) + j`` with ``j < i``), or ``ROOT``.
        """
        n = len(tokens)
        start = len(self.tree)
        if not n or len(parents) != n:
            raise SpecvizError(
                f"forward() needs at least one token and one parent per token, got {n} and {len(parents)}"
            )
        for i, par in enumerate(parents):
            if not (par == ROOT or 0 <= par < start + i):
                raise SpecvizError(f"node {start + i} has invalid parent {par}")
        for par in parents:
            self.tree.parents.append(par)
            self.tree.depths.append(0 if par == ROOT else self.tree.depths[par] + 1)
        prefix, depths = self.prefix_len, self.tree.depths
        where = [prefix + d for d in depths[start:]]
        positions = torch.tensor(where)
        rows, cols = zip(*[(i, prefix + a) for i in range(n) for a in self.tree.ancestors(start + i)])
        masks = {
            kind: self._float_mask(n, rows, cols, None if w is None else positions[:, None] - w)
            for kind, w in self.windows.items()
        }
        ids, positions = torch.tensor([tokens], device=self.device), positions[None].to(self.device)
        logits = self.compute(ids, positions, masks, where[0] if n == 1 else None)
        if self.new_rows is not None:
            self.rows = self.new_rows if self.rows is None else torch.cat([self.rows, self.new_rows])
            self.new_rows = None
        self.fed.append(n)
        return logits[:, : self.vocab_size] if self.vocab_size else logits

    def compute(
        self, ids: torch.Tensor, positions: torch.Tensor, masks: dict[str, torch.Tensor], position: int | None
    ) -> torch.Tensor:
        """The one place the model runs: float32 logits ``[n, V_model]`` of ``ids`` (``[1, n]``) at
        ``positions`` under ``masks`` (layer type -> additive mask), their KV appended to ``self.cache``.
        ``position``: a one-token call's position as an int (``LeanForward`` memoises its rotary table).
        A deterministic function of its arguments, the model and the cache's content (the exactness tests'
        memo relies on it: ``tests/tiny.py``)."""
        if self.head_rows is not None and self.lean is not None and not self.features and not self.lens:
            return self._scatter(self.lean(ids, positions, masks, self.cache, position, head=self.head_weight)[0])
        if self.lean is not None and not self.lens:
            if self.features:
                logits, self.new_rows = self.lean(ids, positions, masks, self.cache, position, self.features)
                return self._cut(logits[0].float())
            return self._cut(self.lean(ids, positions, masks, self.cache, position)[0].float())
        out = self.model(
            input_ids=ids,
            attention_mask=next(iter(masks.values())) if len(masks) == 1 else masks,
            position_ids=positions,
            cache=self.cache,
            use_cache=True,
            output_hidden_states=bool(self.features) or self.lens,
        )
        if self.lens:
            self.last_hidden = out.hidden_states
        if self.features:
            self.new_rows = torch.cat([out.hidden_states[i][0] for i in self.features], -1)
        return self._cut(out.logits[0].float())

    def _scatter(self, small: torch.Tensor) -> torch.Tensor:
        """Logits of the ``head_rows`` tokens placed in a whole-vocabulary row, the lowest value elsewhere."""
        rows = self.model.get_output_embeddings().weight.shape[0]
        full = torch.full((small.shape[0], rows), torch.finfo(torch.float32).min, device=small.device)
        full[:, self.head_rows] = small.float()
        return full

    def _cut(self, logits: torch.Tensor) -> torch.Tensor:
        """``logits`` with every token outside ``head_rows`` at the lowest value (no-op without a cut)."""
        return logits if self.head_rows is None else self._scatter(logits[:, self.head_rows])

    def _float_mask(
        self, n: int, rows: tuple[int, ...], cols: tuple[int, ...], oldest: torch.Tensor | None
    ) -> torch.Tensor:
        """The additive ``(1, 1, n, cached)`` mask: 0 where new node ``rows[j]`` may attend to cache position
        ``cols[j]`` (its pending ancestors and itself) or to any prefix position, the dtype's minimum
        elsewhere. ``oldest`` (``[n, 1]``, sliding windows): keys at positions up to it are masked too. A
        single node that may see every cached position (a chain step) gets zeros without indexing."""
        if oldest is None and n == 1 and len(cols) == len(self.tree):  # one node whose ancestors are all pending nodes
            return torch.zeros((1, 1, n, self.cached_len), dtype=self.dtype, device=self.device)
        lowest = torch.finfo(self.dtype).min
        mask = torch.full((n, self.cached_len), lowest, dtype=self.dtype)
        mask[:, : self.prefix_len] = 0
        mask[rows, cols] = 0
        if oldest is not None:
            key_pos = torch.cat([torch.arange(self.prefix_len), self.prefix_len + torch.tensor(self.tree.depths)])
            mask.masked_fill_(key_pos <= oldest, lowest)
        return mask[None, None].to(self.device)

    def extend(self, context: list[int], tokens: list[int] = (), parents: list[int] = ()) -> torch.Tensor:
        """Feed committed ``context`` (not yet cached) and a tree of draft nodes in one forward call.

        Needs an empty pending tree. ``context`` becomes part of the prefix; the nodes stay pending
        with ``parents`` indexing them (``ROOT`` = child of the context's last token). Returns float32
        ``[1 + n, V]``: row 0 is the distribution after the context, row ``1 + i`` the one after node i.
        """
        if len(self.tree):
            raise SpecvizError("extend() with a pending tree; commit() or rollback() first.")
        if not context:
            raise SpecvizError("extend() needs at least one context token (the last committed one).")
        k = len(context)
        chain = list(chain_shape(k).parents)
        shifted = [k - 1 if par == ROOT else par + k for par in parents]
        logits = self.forward(list(context) + list(tokens), chain + shifted)
        self.prefix_len += k  # the context chain sits first in the tree: promote it into the prefix
        self.tree = PendingTree(
            [ROOT if par == k - 1 else par - k for par in shifted], [d - k for d in self.tree.depths[k:]]
        )
        return logits[k - 1 :]

    def keep(self, paths: list[list[int]]) -> list[int]:
        """Keep the prefix plus the pending nodes on ``paths`` (root-to-node chains); drop all other nodes.

        The chain shared by every path (their common leading nodes) moves into the prefix; the other
        kept nodes stay pending, renumbered in their cache order. Returns per path the new pending
        index of its last node, ``ROOT`` where that node moved into the prefix (or the path is empty):
        ``forward(tokens, parents=those indices)`` then extends each path.
        """
        for path in paths:
            if not self.tree.is_path(path):
                raise SpecvizError(f"keep(): {path} is not a root-to-node chain of the pending tree")
        shared = list(paths[0]) if paths else []
        for path in paths[1:]:
            n = next((i for i, (a, b) in enumerate(zip(shared, path)) if a != b), min(len(shared), len(path)))
            shared = shared[:n]
        rest = sorted({n for path in paths for n in path} - set(shared))  # cache order: parents first
        self._select(shared + rest)
        index = {old: new for new, old in enumerate(rest)}
        last = shared[-1] if shared else ROOT
        self.tree = PendingTree(
            [ROOT if self.tree.parents[n] == last else index[self.tree.parents[n]] for n in rest],
            [self.tree.depths[n] - len(shared) for n in rest],
        )
        self.prefix_len += len(shared)
        return [index.get(path[-1], ROOT) if path else ROOT for path in paths]

    def commit(self, path: list[int]) -> None:
        """Keep the prefix plus pending nodes ``path`` (a root-to-node chain) as the new prefix; drop the rest."""
        self.keep([path])

    def rollback(self) -> None:
        """Drop the whole pending tree."""
        self.keep([])

    @torch.inference_mode()
    def _select(self, nodes: list[int]) -> None:
        """Cut every layer's KV to the prefix followed by the pending ``nodes``, in that order.

        The prefix is never copied: kept nodes that are not already in place are gathered and written
        right after it (only those rows move), then the cache is cut to a view of its first rows."""
        end = self.prefix_len + len(nodes)
        first = next((j for j, n in enumerate(nodes) if n != j), len(nodes))  # nodes[:first] are in place
        if self.rows is not None:
            self.rows = torch.cat(
                [self.rows[: self.prefix_len + first], self.rows[[self.prefix_len + i for i in nodes[first:]]]]
            )
        moved = None
        if first < len(nodes):
            moved = torch.tensor([self.prefix_len + i for i in nodes[first:]], device=self.device)
        for layer in self.cache.layers:
            if type(layer) is not DynamicLayer:
                raise SpecvizError(f"KV rollback supports full-attention caches only, not {type(layer).__name__}.")
            if layer.is_initialized:
                if moved is not None:
                    dst = slice(self.prefix_len + first, end)
                    layer.keys[..., dst, :] = layer.keys.index_select(-2, moved)
                    layer.values[..., dst, :] = layer.values.index_select(-2, moved)
                layer.keys, layer.values = layer.keys[..., :end, :], layer.values[..., :end, :]
