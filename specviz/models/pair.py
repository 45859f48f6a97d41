"""``ModelPair``: a loaded target, optional draft, their shared tokenizer and vocabulary, and the heads
put on the target (``PairHeads``: EESD's early-exit head with Cali-TS's calibration head; a feature
drafter). ``models.loading`` builds one (``load_pair``); everything downstream reads it."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from specviz.errors import ModelLoadError

if TYPE_CHECKING:
    from specviz.core.cali_ts import CalibrationHead
    from specviz.models.early_exit import EarlyExitHead
    from specviz.models.feature_head import FeatureHead


@dataclass(frozen=True)
class PairHeads:
    """The heads ``attach_early_exit`` puts on a pair's target, as one value (replaced, never edited).

    ``early_exit``: EESD's ``EarlyExitHead``. ``source``: where it came from, as traces show it (the
    head directory's display name, or the exit layer ``N`` of a fresh head). ``calibration`` and
    ``calibration_sigma_m``: Cali-TS's calibration head and its sigma_M when one was saved beside the
    head (``calibration.safetensors``), else None; ``eesd`` with ``controller="cali_ts"`` reads them."""

    early_exit: "EarlyExitHead"
    source: str | int
    calibration: "CalibrationHead | None" = None
    calibration_sigma_m: float | None = None


@dataclass(eq=False)  # a loaded pair is one object: compared and hashed by identity (algorithms key caches by it)
class ModelPair:
    """A loaded target, optional draft, the shared tokenizer and the shared vocabulary size.

    ``masked_token_ids`` / ``vocab_note``: added special tokens beyond the models' output rows (masked:
    never generated, refused in prompts) and the sentence saying so, set by ``load_pair``. ``heads``:
    the early-exit head and Cali-TS's calibration head (``attach_early_exit``), or None. What an
    algorithm computes per pair is cached on the algorithm's side, keyed by the pair (Sequoia's
    ``sequoia_tune.pair_cache``), never on the pair."""

    target: Any
    draft: Any | None
    tokenizer: Any | None
    vocab_size: int
    target_name: str = "target"
    draft_name: str | None = None
    masked_token_ids: tuple[int, ...] = ()
    vocab_note: str | None = None
    heads: PairHeads | None = None
    feature: "FeatureHead | None" = None  # a feature drafter on the target (``attach_feature``)
    feature_source: str | None = None
    _token_texts: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def early_exit(self) -> "EarlyExitHead | None":
        """The attached ``EarlyExitHead`` (``load_pair(..., early_exit=...)``), or None."""
        return self.heads.early_exit if self.heads is not None else None

    @property
    def has_chat_template(self) -> bool:
        """Whether prompts can be formatted as a chat (``decode(..., chat=True)``)."""
        from specviz.models.chat import has_chat_template

        return self.tokenizer is not None and has_chat_template(self.tokenizer)

    @property
    def device(self) -> torch.device:
        return next(self.target.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.target.parameters()).dtype

    @property
    def context_length(self) -> int:
        """The longest sequence both models accept (``max_position_embeddings`` or ``n_positions``)."""
        return min(_context_length(m) for m in (self.target, self.draft) if m is not None)

    @property
    def eos_token_ids(self) -> set[int]:
        """End-of-sequence ids: the target's generation config, else the tokenizer's."""
        eos = getattr(getattr(self.target, "generation_config", None), "eos_token_id", None)
        if eos is None and self.tokenizer is not None:
            eos = self.tokenizer.eos_token_id
        if eos is None:
            return set()
        return {int(e) for e in eos} if isinstance(eos, (list, tuple)) else {int(eos)}

    def describe(self) -> dict[str, Any]:
        """The pair as plain data for a trace."""
        out = {
            "target": self.target_name,
            "draft": self.draft_name,
            "target_params": _n_params(self.target),
            "draft_params": _n_params(self.draft) if self.draft is not None else None,
            "target_vocab_rows": int(self.target.config.vocab_size),
            "draft_vocab_rows": int(self.draft.config.vocab_size) if self.draft is not None else None,
            "shared_vocab_size": self.vocab_size,
            "dtype": str(self.dtype).removeprefix("torch."),
            "device": str(self.device),
        }
        if self.vocab_note:
            out["vocab_note"] = self.vocab_note
        if self.feature is not None:
            out["feature"] = {
                "source": self.feature_source,
                "layers": list(self.feature.cfg.layers),
                "draft_vocab": self.feature.cfg.draft_vocab,
                "params": _n_params(self.feature),
            }
        if self.heads is not None:
            out["early_exit"] = {
                "exit_layer": self.heads.early_exit.exit_layer,
                "source": self.heads.source,
                "params": _n_params(self.heads.early_exit),
            }
        return out

    def decode_token(self, token_id: int) -> str:
        """One token's text on its own (memoised: the trace asks for it at every drafted node)."""
        text = self._token_texts.get(token_id)
        if text is None:
            text = f"<{token_id}>" if self.tokenizer is None else self.tokenizer.decode([token_id])
            self._token_texts[token_id] = text
        return text

    def decode(self, ids: list[int]) -> str:
        if self.tokenizer is None:
            return " ".join(f"<{i}>" for i in ids)
        return self.tokenizer.decode(ids)

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        if self.tokenizer is None:
            raise ModelLoadError("This pair has no tokenizer: pass the prompt as a list of token ids.")
        ids = list(self.tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"])
        unknown = sorted({i for i in ids if i >= self.vocab_size})
        if unknown:
            from specviz.errors import PromptError

            raise PromptError(
                f"The prompt contains token(s) {[self.tokenizer.convert_ids_to_tokens(i) for i in unknown]} that "
                f"the models have no output row for (ids >= {self.vocab_size}): remove them from the prompt."
            )
        return ids


def _context_length(model) -> int:
    cfg = model.config
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(cfg, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return 1 << 30


_PARAM_COUNTS: "weakref.WeakKeyDictionary[torch.nn.Module, int]" = weakref.WeakKeyDictionary()


def _n_params(model) -> int:
    """Parameters of ``model``, counted once per model (every trace's ``describe`` asks)."""
    if model not in _PARAM_COUNTS:
        _PARAM_COUNTS[model] = sum(p.numel() for p in model.parameters())
    return _PARAM_COUNTS[model]
