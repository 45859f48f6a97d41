"""What a model name refers to, before anything is loaded: a check that a reference is text naming a
model (hub id, local directory or ``package:DIST/FILE``), the directory or hub id ``from_pretrained``
reads for it (a packaged checkpoint converted once into the cache), and whether a model directory
ships a tokenizer."""

from __future__ import annotations

import logging
import os
from typing import Any

from specviz import validation
from specviz.errors import ModelLoadError

MAX_MODEL_REF = 4096  # characters in a model's hub id, path or package reference (Linux's PATH_MAX)


def check_model_ref(param: str, value: Any, optional: bool = False) -> None:
    """Refuse ``value`` unless it is text naming a model (hub id, directory or ``package:``), at most
    ``MAX_MODEL_REF`` characters (``None`` too when ``optional``)."""
    if optional and value is None:
        return
    allowed = "a model (hub id, local directory or package:DIST/FILE)" + (" or None" if optional else "")
    if not isinstance(value, str) or not value.strip():
        raise validation.about(ModelLoadError(f"{param} must be {allowed}, got {validation.shown(value)}."), param)
    validation.text(param, value, MAX_MODEL_REF, error=ModelLoadError)


def resolve_source(name: str) -> str:
    """A local directory (expanded) or a hub id; a path-like name that is not a directory is refused."""
    path = os.path.expanduser(name)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise ModelLoadError(
                f"{name!r} is a directory but not a Hugging Face model: it has no config.json. A model "
                "directory holds config.json, the weights and the tokenizer files, as save_pretrained writes them."
            )
        return path
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ModelLoadError(f"No model directory at {name!r}: check the path (hub ids look like owner/name).")
    return name


def checkpoint_source(name: str) -> str:
    """What ``from_pretrained`` reads for ``name``: the cached conversion of a packaged checkpoint
    (``package:DIST/FILE.gguf``, converted on first use), else ``name`` itself."""
    from specviz.models.packaged import convert_packaged, is_packaged

    if not is_packaged(name):
        return name
    return str(convert_packaged(name, log=logging.getLogger("specviz").info))


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "spiece.model")


def without_tokenizer(name: str) -> bool:
    """Whether ``name`` is a local model directory with no tokenizer file: a draft saved beside its
    target without a copy of the target's tokenizer (the code pair's ``assets/draft``)."""
    path = os.path.expanduser(name)
    return os.path.isdir(path) and not any(os.path.isfile(os.path.join(path, f)) for f in TOKENIZER_FILES)
