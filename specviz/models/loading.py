"""``load_pair``: a target and an optional draft from hub ids or local directories.

Both go through the same ``from_pretrained`` path, so the bundled pair in ``assets/`` and any hub
pair load the same way. ``device="auto"`` picks CUDA when present and hands placement to accelerate
(``device_map="auto"``, which shards a target larger than one GPU); ``dtype="auto"`` is float32 on
CPU and bfloat16 (or float16) on CUDA.
"""

from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from specviz import validation
from specviz.errors import ModelLoadError, SpecvizError
from specviz.models.memory import check_fits, config_of
from specviz.models.pair import ModelPair, PairHeads
from specviz.models.sources import (
    MAX_MODEL_REF,
    TOKENIZER_FILES,
    check_model_ref,
    checkpoint_source,
    resolve_source,
    without_tokenizer,
)
from specviz.models.vocab import shared_vocab_size, unmodelled_special_ids

__all__ = [  # the names importable from here, those of models.pair and models.sources included
    "DTYPES",
    "MAX_MODEL_REF",
    "TOKENIZER_FILES",
    "ModelPair",
    "PairHeads",
    "attach_early_exit",
    "attach_feature",
    "checkpoint_source",
    "load_model",
    "load_pair",
    "load_tokenizer",
    "loading",
    "one_line",
    "resolve_device_dtype",
    "resolve_source",
    "without_tokenizer",
]

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def resolve_device_dtype(device: str, dtype: str | torch.dtype) -> tuple[str, torch.dtype]:
    """``auto`` -> (``cuda`` if available else ``cpu``), and float32 on CPU / bf16 or fp16 on CUDA.
    ``device``: auto, cpu, cuda or cuda:N; ``dtype``: auto, a name in ``DTYPES`` or a ``torch.dtype``."""
    device = validation.device(device)
    if not isinstance(dtype, torch.dtype):
        dtype = validation.choice("dtype", dtype, ("auto", *DTYPES), error=ModelLoadError)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelLoadError(f"device={device!r} was asked for but CUDA is not available on this machine.")
    if device.startswith("cuda:") and int(device[5:]) >= torch.cuda.device_count():
        raise ModelLoadError(
            f"device={device!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
            f"cuda:0 to cuda:{torch.cuda.device_count() - 1}."
        )
    if isinstance(dtype, torch.dtype):
        return device, dtype
    if dtype == "auto":
        if device.startswith("cuda"):
            return device, torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return device, torch.float32
    return device, DTYPES[dtype]


def one_line(exc: Exception, limit: int = 300) -> str:
    """An exception's whole message on one line (never cut mid-sentence at its first newline), capped."""
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _opening(message: str) -> str:
    """``message`` to follow a parameter's name: its first word in lower case unless it is an acronym."""
    word = message.split(" ", 1)[0]
    return message[0].lower() + message[1:] if word[:1].isupper() and word[1:].islower() else message


@contextmanager
def loading(param: str) -> Iterator[None]:
    """A ``ModelLoadError`` (or a plain ``SpecvizError``: an unknown preset) raised while loading what
    ``param`` names, about no parameter yet, told as one about ``param``: its message opens with the
    name (``target: no model directory at '/x' ...``)."""
    try:
        yield
    except SpecvizError as exc:
        if exc.param is not None or not isinstance(exc, ModelLoadError) and type(exc) is not SpecvizError:
            raise
        raise validation.about(type(exc)(f"{param}: {_opening(str(exc))}"), param) from exc


def load_model(name: str, device: str, dtype: torch.dtype, auto_map: bool, trust_remote_code: bool = False):
    """One causal LM, in eval mode, with a message a user can act on when it cannot be loaded."""
    from specviz.models.shards import from_pretrained_any

    kwargs: dict[str, Any] = {"dtype": dtype, "trust_remote_code": trust_remote_code}
    if auto_map:
        kwargs["device_map"] = "auto"
    source = resolve_source(name)
    config = config_of(source, trust_remote_code)
    if config is not None:  # refuse a model too large for this machine before allocating it
        check_fits(name, config, dtype, device)
    try:
        model = from_pretrained_any(source, **kwargs)  # sharded, or with tensors cut (models.shards)
    except torch.cuda.OutOfMemoryError as exc:
        raise ModelLoadError(f"Out of GPU memory while loading {name!r}: pick a smaller pair or dtype.") from exc
    except (OSError, ValueError, KeyError) as exc:
        offline = os.environ.get("HF_HUB_OFFLINE") == "1"
        hint = (
            " The hub is unreachable (offline); use a local directory such as assets/target."
            if offline or "offline" in str(exc).lower() or "connect" in str(exc).lower()
            else " Check the hub id (owner/name) or the local path."
        )
        raise ModelLoadError(f"Could not load model {name!r}: {one_line(exc)}{hint}") from exc
    if not auto_map:
        model.to(device)
    return model.eval()


def load_tokenizer(name: str, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    source = resolve_source(name)
    try:
        return AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelLoadError(f"Could not load the tokenizer of {name!r}: {one_line(exc)}") from exc


def load_pair(
    target: str | None = None,
    draft: str | None = None,
    device: str = "auto",
    dtype: str | torch.dtype = "auto",
    trust_remote_code: bool = False,
    early_exit: str | int | None = None,
    preset: str | None = None,
    feature: str | None = None,
) -> ModelPair:
    """Load a target and an optional draft, check they share a vocabulary, and return a ``ModelPair``.

    ``target`` / ``draft``: hub ids, local directories, or packaged checkpoints
    (``package:DIST/FILE.gguf``, converted once into the specviz cache by
    ``specviz.models.packaged``). ``preset``: a name from ``configs/presets.yaml`` instead of them
    (``load_pair(preset="smollm2-135m-offline")``), which brings its early-exit head too.

    The vocabulary check runs on the tokenizers before the draft's weights are loaded, so a
    mismatched pair is refused quickly and with the first differing token named.

    ``early_exit`` attaches an EESD early-exit head to the target (``pair.early_exit``): a directory
    written by ``save_early_exit`` (a trained head, e.g. ``assets/early_exit``), or an int ``N`` for a
    freshly initialised head after layer ``N`` (for tests and as the start of training). It can be
    given together with ``draft``.

    ``feature`` attaches a feature drafter (EAGLE-3 style, ``models.feature_head``) trained for the
    target: a directory written by ``FeatureHead.save`` (the default pair's is
    ``assets/smollm2/feature``); algorithms that draft with a draft model can then take
    ``drafter="feature"``.
    """
    if preset is not None:
        with loading("preset"):
            target, draft, early_exit, feature = _from_preset(preset, target, draft, early_exit, feature)
    check_model_ref("target", target)
    check_model_ref("draft", draft, optional=True)
    validation.flag("trust_remote_code", trust_remote_code, error=ModelLoadError)
    device, torch_dtype = resolve_device_dtype(device, dtype)
    auto_map = device == "cuda" and torch.cuda.device_count() > 1
    t_src, t_tok, d_src, d_tok = _sources_and_tokenizers(target, draft, trust_remote_code)
    with loading("target"):
        t_model = load_model(t_src, device, torch_dtype, auto_map, trust_remote_code)
    with loading("draft"):
        d_model = load_model(d_src, device, torch_dtype, False, trust_remote_code) if d_src else None
    if d_model is not None and auto_map:
        d_model.to(t_model.get_input_embeddings().weight.device)
    t_rows = t_model.config.get_text_config().vocab_size
    d_rows = d_model.config.get_text_config().vocab_size if d_model is not None else t_rows
    vocab = shared_vocab_size(t_tok, d_tok, t_rows, d_rows, target, draft or "draft")
    pair = ModelPair(t_model, d_model, t_tok, vocab, target_name=target, draft_name=draft)
    _mask_unmodelled(pair, t_tok, vocab)
    if early_exit is not None:
        attach_early_exit(pair, early_exit)
    if feature is not None:
        attach_feature(pair, feature)
    return pair


def _sources_and_tokenizers(target: str, draft: str | None, trust_remote_code: bool) -> tuple[Any, Any, Any, Any]:
    """Where each model's files are and its tokenizer (a draft saved without one, as ``assets/draft``, reads
    the target's one copy); a pair whose vocabularies differ is refused here, before any weights load."""
    with loading("target"):
        t_src = checkpoint_source(target)
        t_tok = load_tokenizer(t_src, trust_remote_code)
    with loading("draft"):
        d_src = checkpoint_source(draft) if draft else None
        d_tok = None
        if d_src:  # a draft directory saved without a tokenizer (assets/draft) reads the target's one copy
            d_tok = t_tok if without_tokenizer(d_src) else load_tokenizer(d_src, trust_remote_code)
    if d_tok is not None:  # refuse a mismatched pair before loading any weights
        shared_vocab_size(t_tok, d_tok, len(t_tok), len(d_tok), target, draft)
    return t_src, t_tok, d_src, d_tok


def _mask_unmodelled(pair: ModelPair, t_tok, vocab: int) -> None:
    """Added special tokens beyond the models' output rows: masked in ``pair``, with a note (also warned,
    at ``load_pair``'s caller)."""
    masked = unmodelled_special_ids(t_tok, vocab)
    if masked:
        names = [t_tok.convert_ids_to_tokens(i) for i in masked[:5]]
        pair.masked_token_ids = tuple(masked)
        pair.vocab_note = (
            f"The tokenizer has {len(t_tok)} tokens but the models only {vocab} output rows; the extra "
            f"{len(masked)} ({', '.join(map(str, names))}{', ...' if len(masked) > 5 else ''}) are added special "
            f"tokens the models were not trained on: they are masked (never generated, refused in prompts)."
        )
        warnings.warn(pair.vocab_note, stacklevel=3)


def _from_preset(name: str, target, draft, early_exit, feature) -> tuple[str, str | None, str | int | None, str | None]:
    """The target, draft, early-exit head and feature head of the preset ``name`` (its packaged target, or the hub
    id it names when the package is missing); giving a target or draft as well is refused."""
    from specviz.presets import check_available, get_preset

    if not isinstance(name, str):
        raise validation.about(ModelLoadError(f"preset must be a preset name, got {validation.shown(name)}."), "preset")
    if target is not None or draft is not None:
        raise ModelLoadError(f"Give either preset={name!r} or target/draft, not both: a preset names its own models.")
    chosen = get_preset(name)
    check_available(chosen)
    return (
        chosen.target_ref(),
        chosen.draft,
        early_exit if early_exit is not None else chosen.early_exit,
        feature if feature is not None else chosen.feature,
    )


def attach_feature(pair: ModelPair, feature: str) -> ModelPair:
    """Put a feature drafter saved by ``FeatureHead.save`` on ``pair.target`` (``pair.feature``)."""
    from specviz.models.feature_head import load_feature_head

    if not isinstance(feature, (str, os.PathLike)):
        raise validation.about(
            ModelLoadError(f"feature must be a feature head directory, got {validation.shown(feature)}."), "feature"
        )
    path = os.path.expanduser(str(feature))
    if not os.path.isdir(path):
        raise validation.about(ModelLoadError(f"feature: no feature head directory at {str(feature)!r}."), "feature")
    try:
        pair.feature = load_feature_head(path, pair.target)
    except (OSError, ValueError, KeyError, RuntimeError, SpecvizError) as exc:
        raise validation.about(
            ModelLoadError(f"feature: could not load the feature head {str(feature)!r}: {one_line(exc)}"), "feature"
        ) from exc
    pair.feature_source = str(feature)
    return pair


def attach_early_exit(pair: ModelPair, early_exit: str | int) -> ModelPair:
    """Put an early-exit head on ``pair.target`` (``pair.heads``): a saved head directory (with Cali-TS's
    calibration head when one was saved beside it) or an exit layer ``N`` (fresh head)."""
    from specviz.models.early_exit import EarlyExitHead, load_calibration, load_early_exit

    calibration = None
    if isinstance(early_exit, bool) or not isinstance(early_exit, (int, str, os.PathLike)):
        raise validation.about(
            ModelLoadError(
                f"early_exit must be a head directory or an exit layer (int), got {validation.shown(early_exit)}."
            ),
            "early_exit",
        )
    with loading("early_exit"):
        try:
            if isinstance(early_exit, int):
                head = EarlyExitHead(pair.target, early_exit).eval()
            else:
                path = os.path.expanduser(str(early_exit))
                if not os.path.isdir(path):
                    raise ModelLoadError(f"No early-exit head directory at {validation.shown(str(early_exit))}.")
                head = load_early_exit(path, pair.target)
                calibration = load_calibration(path, like=head.lm_head.weight)  # Cali-TS's theta_M head, sigma_M
        except (TypeError, ValueError, FileNotFoundError, OSError) as exc:
            raise ModelLoadError(
                f"Could not attach the early-exit head {validation.shown(early_exit)}: {one_line(exc)}"
            ) from exc
    cal, sigma_m = calibration if calibration is not None else (None, None)
    pair.heads = PairHeads(head, early_exit if isinstance(early_exit, int) else str(early_exit), cal, sigma_m)
    return pair
