"""Hardening of loading and decoding: added special tokens beyond the models' rows are masked while a
real vocabulary mismatch is refused; decoding at the context limit; out-of-memory and CUDA failures
become ``DeviceError`` messages (in ``decode`` and in the CLI)."""

from __future__ import annotations

import pytest
import torch

import specviz
from specviz.cli import main as cli_main
from specviz.errors import DeviceError, PromptError, TokenizerMismatchError
from specviz.models.loading import ModelPair, load_pair
from tests.tiny import save_checkpoint, tiny_model, tiny_tokenizer


def _pair_dirs(tmp_path, tok, rows):
    target = save_checkpoint(tmp_path / "target", tokenizer=tok, rows=rows, seed=0, hidden=32, layers=2)
    draft = save_checkpoint(tmp_path / "draft", tokenizer=tok, rows=rows, seed=1)
    return target, draft


def test_extra_special_tokens_beyond_the_rows_are_masked_with_a_note(tmp_path):
    tok = tiny_tokenizer()
    rows = len(tok)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    assert len(tok) == rows + 2
    target, draft = _pair_dirs(tmp_path, tok, rows)
    with pytest.warns(UserWarning, match="masked"):
        pair = load_pair(target, draft, device="cpu")
    assert pair.vocab_size == rows
    assert pair.masked_token_ids == (rows, rows + 1)
    assert "<|im_start|>" in pair.describe()["vocab_note"]
    ar = specviz.decode(pair, "ar", "def add(a, b):\n", max_new_tokens=6, temperature=0)
    sd = specviz.decode(pair, "sd", "def add(a, b):\n", max_new_tokens=6, temperature=0)
    assert sd.output_ids == ar.output_ids and max(ar.output_ids) < rows
    assert "vocab_note" in ar.pair
    with pytest.raises(PromptError, match="im_start"):
        specviz.decode(pair, "ar", "<|im_start|>def f():", max_new_tokens=4, temperature=1.0)


def test_an_ordinary_token_beyond_the_rows_is_still_refused(tmp_path):
    tok = tiny_tokenizer()
    rows = len(tok)
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>"]})
    tok.add_tokens(["fibonacci"])  # an ordinary (non-special) token the models have no row for
    target, draft = _pair_dirs(tmp_path, tok, rows)
    with pytest.raises(TokenizerMismatchError, match="not trained on this tokenizer"):
        load_pair(target, draft, device="cpu")


@pytest.mark.parametrize("family", ["gpt2", "llama"])
@pytest.mark.parametrize(
    "algo,params",
    [("ar", {}), ("sd", {"gamma": 6}), ("mcsd", {"k_config": "3x2x2"}), ("sequoia", {"size": 12, "depth": 5})],
)
def test_decoding_with_the_prompt_at_the_context_limit(family, algo, params):
    """GPT-2's learned positions have no row past ``n_positions``: any node placed beyond the context
    would crash; the run must fill the context exactly and match ``ar``."""
    ctx = 24
    target = tiny_model(family, vocab=8, seed=0, hidden=16, layers=2, init_range=0.2, max_positions=ctx)
    draft = tiny_model(family, vocab=8, seed=5, hidden=8, layers=1, init_range=0.2, max_positions=ctx)
    pair = ModelPair(target, draft, None, 8)
    prompt = [i % 8 for i in range(ctx - 5)]
    ref = specviz.decode(pair, "ar", prompt, max_new_tokens=5, temperature=0)
    out = specviz.decode(pair, algo, prompt, max_new_tokens=5, temperature=0, **params)
    assert out.output_ids == ref.output_ids and len(out.output_ids) == 5
    sampled = specviz.decode(pair, algo, prompt, max_new_tokens=5, temperature=1.0, seed=3, **params)
    assert len(sampled.output_ids) == 5
    with pytest.raises(PromptError, match="context"):
        specviz.decode(pair, algo, prompt + [1], max_new_tokens=5, **params, temperature=1.0)


@pytest.mark.parametrize(
    "exc,match",
    [
        (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), "Out of memory"),
        (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 1 bytes"), "Out of memory"),
        (RuntimeError("CUDA error: device-side assert triggered"), "GPU failed"),
    ],
)
def test_device_failures_become_messages(monkeypatch, exc, match, capsys):
    tok = tiny_tokenizer()
    pair = ModelPair(tiny_model("llama", vocab=len(tok)), tiny_model("llama", vocab=len(tok), seed=1), tok, len(tok))

    def boom(*args, **kwargs):
        raise exc

    monkeypatch.setattr(pair.target.get_output_embeddings(), "forward", boom)  # inside any pass, stock or lean
    with pytest.raises(DeviceError, match=match):
        specviz.decode(pair, "sd", "def f():", max_new_tokens=4, temperature=1.0)
    monkeypatch.setattr("specviz.cli.load_pair_from_args", lambda args: pair)
    assert cli_main(["run", "--target", "x", "--prompt", "x", "--algo", "sd"]) == 2
    assert match in capsys.readouterr().err


def test_other_errors_pass_through(monkeypatch):
    pair = ModelPair(tiny_model("llama", vocab=8), None, None, 8)
    monkeypatch.setattr(
        pair.target.get_output_embeddings(), "forward", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("a bug"))
    )
    with pytest.raises(RuntimeError, match="a bug"):
        specviz.decode(pair, "ar", [1, 2, 3], max_new_tokens=4, temperature=1.0)
