"""A model whose config would not fit in memory is refused before anything is allocated (issue #21,
point 4), with the parameter count, the bytes needed and the bytes available."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch
from tiny import save_checkpoint, tiny_model, tiny_tokenizer
from transformers import AutoModelForCausalLM, LlamaConfig

import specviz
from specviz.errors import ModelLoadError
from specviz.models import memory
from specviz.models.loading import load_model
from specviz.models.random_llama import llama_shape


@pytest.mark.parametrize("kv_heads,tied", [(4, True), (2, False)])
def test_the_estimate_counts_every_weight_but_the_norms(kv_heads, tied):
    config = LlamaConfig(
        **llama_shape(hidden=32, intermediate=48, layers=3, heads=4, kv_heads=kv_heads, vocab=50, tied=tied)
    )
    model = AutoModelForCausalLM.from_config(config)
    actual = sum(p.numel() for p in model.parameters())
    norms = (2 * 3 + 1) * 32
    assert memory.estimate_params(config) == actual - norms
    assert memory.estimate_params(tiny_model("llama", 16, hidden=16, layers=1).config) > 0
    assert memory.estimate_params(object()) is None  # no sizes: no guess


def test_a_4000_layer_config_is_refused_before_allocation(tmp_path, monkeypatch):
    huge = llama_shape(hidden=4096, intermediate=11008, layers=4000, heads=32, kv_heads=8, vocab=32000)
    LlamaConfig(**huge).save_pretrained(tmp_path / "huge")

    def never(*args, **kwargs):
        raise AssertionError("the model was instantiated")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", never)
    with pytest.raises(ModelLoadError) as info:
        load_model(str(tmp_path / "huge"), "cpu", torch.float32, False)
    message = str(info.value)
    params = memory.estimate_params(LlamaConfig.from_pretrained(tmp_path / "huge"))
    assert params > 500_000_000_000
    assert f"{params:,} parameters" in message and f"{params * 4:,} bytes" in message
    assert re.search(r"only .*\([\d,]+ bytes\) of memory is available", message)


def test_a_model_is_refused_when_the_memory_left_is_smaller(tmp_path, monkeypatch):
    tok = tiny_tokenizer()
    path = save_checkpoint(tmp_path / "small", "llama", tok, seed=0, hidden=32, layers=2)
    monkeypatch.setattr(memory, "available_bytes", lambda device: 1000)
    with pytest.raises(ModelLoadError, match=r"1,000 bytes of memory is available"):
        specviz.load_pair(path, device="cpu")
    monkeypatch.setattr(memory, "available_bytes", lambda device: None)  # unknown: not refused
    assert specviz.load_pair(path, device="cpu").target is not None


def _meminfo() -> dict[str, int]:
    """``/proc/meminfo``'s fields in bytes (empty where there is none)."""
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in lines) if v.split()}


@pytest.mark.parametrize("psutil_installed", [True, False])
def test_available_memory_is_read_from_the_host(monkeypatch, psutil_installed):
    """The host's available memory, with psutil and without (``/proc/meminfo``), is the host's figure:
    a positive number of bytes no larger than the memory there is, near ``MemAvailable``."""
    info = _meminfo()
    if "MemAvailable" not in info:
        pytest.skip("no /proc/meminfo with MemAvailable on this host")
    if not psutil_installed:
        monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    free = memory.available_bytes("cpu")
    assert isinstance(free, int) and 0 < free <= info["MemTotal"], free
    assert abs(free - info["MemAvailable"]) <= info["MemTotal"] // 10, (free, info["MemAvailable"])
