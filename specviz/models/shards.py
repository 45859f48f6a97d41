"""Model directories whose every file stays under the size a Hugging Face Space accepts in plain git.

The Hub refuses a file over 10 MB that is not stored through its large-file mechanism, so the bundled
weights are written with transformers' own ``save_pretrained(max_shard_size=MAX_SHARD_SIZE)``
(``model-0000N-of-0000M.safetensors`` + ``model.safetensors.index.json``, read back by any
``from_pretrained``). transformers never cuts a tensor, though: one tensor larger than the limit (the
default pair's draft embedding, 49,152 x 256 in bfloat16 = 25.2 MB) stays one file over it. Such a
tensor is cut by rows into parts, each in a file of its own (``model-split-<tensor>-NN.safetensors``),
byte for byte, and the index says so under ``metadata.specviz_split``. Its entry in the weight map names
a file that does not exist (``SPLIT_MARK``), so a plain ``from_pretrained`` stops with
``FileNotFoundError`` instead of loading a model without that tensor; ``from_pretrained_any`` (which
``specviz.load_pair`` and the training recipes use) joins the parts and loads the same weights.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import torch

MAX_FILE_BYTES = 9_000_000  # every weight file at most this (tests/test_repo_size.py allows 9.5 MB a file)
MAX_SHARD_SIZE = "9MB"  # transformers' max_shard_size: 9,000,000 bytes of tensors a shard
INDEX = "model.safetensors.index.json"
SPLIT_MARK = "SPLIT-see-metadata.specviz_split-in-model.safetensors.index.json"


def save_model_dir(model, path: str | os.PathLike) -> None:
    """``model.save_pretrained(path, max_shard_size=MAX_SHARD_SIZE)``, then any tensor still over
    ``MAX_FILE_BYTES`` cut into row parts (see the module's docstring)."""
    path = Path(path)
    model.save_pretrained(path, max_shard_size=MAX_SHARD_SIZE)
    split_oversized(path)


def split_oversized(path: Path, max_bytes: int = MAX_FILE_BYTES) -> list[str]:
    """Cut every weight file of ``path`` over ``max_bytes`` (one tensor on its own, as transformers
    leaves it) into row parts; returns the names of the tensors cut."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    index_path = path / INDEX
    if not index_path.is_file():  # one model.safetensors: small enough to need no index
        single = path / "model.safetensors"
        if not single.is_file() or single.stat().st_size <= max_bytes:
            return []
        with safe_open(str(single), "pt") as f:
            index = {"metadata": {}, "weight_map": {k: single.name for k in f.keys()}}
    else:
        index = json.loads(index_path.read_text())
    cut = []
    for name in sorted(set(index["weight_map"].values())):
        file = path / name
        if not file.is_file() or file.stat().st_size <= max_bytes:
            continue
        with safe_open(str(file), "pt") as f:
            keys = list(f.keys())
            if len(keys) != 1:
                raise ValueError(f"{file} holds {len(keys)} tensors and is over {max_bytes} bytes: shard it first")
            key = keys[0]
            tensor = f.get_tensor(key)
            metadata = f.metadata() or {"format": "pt"}
        n = math.ceil((tensor.numel() * tensor.element_size() + 4096) / max_bytes)
        if tensor.dim() == 0 or tensor.shape[0] < n:
            raise ValueError(f"{key} ({tuple(tensor.shape)}) cannot be cut into {n} row parts")
        parts = []
        for i, part in enumerate(torch.tensor_split(tensor, n, dim=0)):
            part_name = f"model-split-{key}-{i:02d}.safetensors"
            save_file({key: part.contiguous()}, str(path / part_name), metadata=metadata)
            parts.append(part_name)
        file.unlink()
        index["weight_map"][key] = SPLIT_MARK
        index.setdefault("metadata", {}).setdefault("specviz_split", {})[key] = {"dim": 0, "files": parts}
        cut.append(key)
    if cut:
        index_path.write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return cut


def split_tensors(path: str | os.PathLike) -> dict[str, Any]:
    """``metadata.specviz_split`` of the directory's index (tensor -> its parts), or {} when none is cut."""
    index_path = Path(path) / INDEX
    if not index_path.is_file():
        return {}
    return json.loads(index_path.read_text()).get("metadata", {}).get("specviz_split", {}) or {}


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Every tensor of a saved model directory, cut tensors joined (as saved: no dtype change)."""
    from safetensors.torch import load_file

    path = Path(path)
    index = json.loads((path / INDEX).read_text())
    split = index.get("metadata", {}).get("specviz_split", {})
    state: dict[str, torch.Tensor] = {}
    for name in sorted(set(index["weight_map"].values()) - {SPLIT_MARK}):
        state.update(load_file(str(path / name)))
    for key, spec in split.items():
        state[key] = torch.cat([load_file(str(path / f))[key] for f in spec["files"]], dim=int(spec["dim"]))
    missing = set(index["weight_map"]) - set(state)
    if missing:
        raise ValueError(f"{path}: the index names {sorted(missing)[:5]} but no file holds them")
    return state


def from_pretrained_any(path: str | os.PathLike, dtype: torch.dtype = torch.float32, **kwargs):
    """``AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)``, which also reads a directory
    with cut tensors (``split_oversized``): the same weights either way."""
    from transformers import AutoConfig, AutoModelForCausalLM, GenerationConfig

    if not split_tensors(path):
        return AutoModelForCausalLM.from_pretrained(path, dtype=dtype, **kwargs)
    kwargs.pop("device_map", None)  # a directory cut here is a small bundled model: one device
    config = AutoConfig.from_pretrained(path, trust_remote_code=kwargs.get("trust_remote_code", False))
    model_class = AutoModelForCausalLM._model_mapping[type(config)]
    model = model_class.from_pretrained(None, config=config, state_dict=read_state_dict(path), dtype=dtype)
    if (Path(path) / "generation_config.json").is_file():
        model.generation_config = GenerationConfig.from_pretrained(path)
    return model
