"""The bundled pair in assets/ loads with the network disabled and decodes losslessly."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import specviz
from specviz.train.configs import ModelSize, macs_per_token
from specviz.train.corpus import is_heldout, list_source_files, stdlib_root
from specviz.train.data import sequential_windows
from specviz.train.evaluate import hf_logits, perplexity

ROOT = Path(__file__).resolve().parents[1]


def test_bundled_pair_greedy_sd_equals_ar(bundled_pair):
    sd = specviz.decode(bundled_pair, "sd", prompt="def ", max_new_tokens=16, temperature=0, gamma=4)
    ar = specviz.decode(bundled_pair, "ar", prompt="def ", max_new_tokens=16, temperature=0)
    assert len(sd.output_ids) == 16
    assert sd.output_ids == ar.output_ids
    # tau >= 1 holds for any run; the distilled draft must save target calls: some draft accepted
    assert ar.metrics["target_calls"] == 16 and sd.metrics["target_calls"] < 16, sd.metrics
    assert sd.metrics["tau"] == pytest.approx(16 / sd.metrics["target_calls"]) and sd.metrics["tau"] > 1.0


def test_bundled_pair_draft_is_accepted_often(bundled_pair):
    """The shipped draft is distilled: greedy sd at gamma 4 accepts well above chance on code."""
    sd = specviz.decode(bundled_pair, "sd", prompt="import os\n\n\ndef ", max_new_tokens=48, temperature=0, gamma=4)
    assert sd.metrics["tau"] >= 2.0, sd.metrics


def test_bundled_early_exit_head_loads(bundled_pair):
    from specviz.models.early_exit import load_early_exit, resolve_base

    assert resolve_base(ROOT / "assets" / "early_exit") == (ROOT / "assets" / "target").resolve()
    head = load_early_exit(ROOT / "assets" / "early_exit", bundled_pair.target)
    assert 1 <= head.exit_layer < bundled_pair.target.config.num_hidden_layers


def _size(model) -> ModelSize:
    c = model.config
    return ModelSize(c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size)


def test_bundled_target_is_clearly_better_and_the_draft_several_times_cheaper(bundled_pair):
    """Issue #3's sizes, measured on the shipped weights: perplexity on held-out standard-library
    files (split by path hash, never trained on) and multiply-adds per token from the configs."""
    files = [f for f in list_source_files(stdlib_root()) if is_heldout(f, 4.0)][:6]
    text = "\n".join((Path(stdlib_root()) / f).read_text(encoding="utf-8", errors="replace") for f in files)
    ids = torch.tensor(bundled_pair.tokenizer(text.replace("\t", "    ")).input_ids)
    windows = sequential_windows(ids.numpy(), 128, 24)
    assert len(windows) == 24
    ppl = {
        name: perplexity(hf_logits(m), windows)["ppl"]
        for name, m in (("target", bundled_pair.target), ("draft", bundled_pair.draft))
    }
    assert ppl["target"] < 0.8 * ppl["draft"], ppl
    vocab = bundled_pair.target.config.vocab_size
    assert macs_per_token(_size(bundled_pair.target), vocab) >= 4 * macs_per_token(_size(bundled_pair.draft), vocab)
