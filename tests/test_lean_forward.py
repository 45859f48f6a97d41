"""The lean forward computes what the stock ``transformers`` forward computes, bit for bit, through
every cache operation the engine uses; models it does not reproduce keep the stock forward."""

from pathlib import Path

import pytest
import torch
from tiny import tiny_model

import specviz
from specviz.models.lean_forward import LeanForward
from specviz.models.tree_forward import CachedLM

ROOT = -1
ASSETS = Path(__file__).resolve().parents[1] / "assets"


def session(lm: CachedLM) -> list[torch.Tensor]:
    """Logits of a sequence of calls mixing trees, chains, single tokens, keep, commit and rollback."""
    out = [lm.extend([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [ROOT, 0, 0, 2, ROOT])]
    kept = lm.keep([[0, 2, 3], [0, 1]])
    out.append(lm.forward([11, 12], kept))
    out.append(lm.forward([14], [kept[1]]))  # one node beside pending non-ancestors
    lm.commit([1, 2, 3])  # old nodes 2, 3 and the new child of 3
    out.append(lm.forward([3], [ROOT]))
    lm.rollback()
    out.append(lm.extend([13], [1, 2, 3], [ROOT, 0, 1]))
    lm.commit([0])
    for token in range(5):  # single-token steps (grouped-query attention packs its heads here)
        out.append(lm.forward([token], [ROOT]))
        lm.commit([0])
    return out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral"])  # mistral: a sliding window
def test_lean_logits_equal_stock_logits(family, dtype):
    model = tiny_model(family, vocab=32, hidden=32, layers=2, init_range=0.2, window=3).to(dtype)
    assert model.config.num_attention_heads > model.config.num_key_value_heads  # grouped-query attention
    lean, stock = CachedLM(model, lean=True), CachedLM(model, lean=False)
    assert lean.lean is not None and stock.lean is None
    expected = session(stock)
    for a, b in zip(session(lean), expected, strict=True):
        assert torch.equal(a, b)  # the same kernels in the same order: equal, not merely close
    assert LeanForward.build(model).rope_memo  # one-token calls memoised their rotary cos/sin per position
    for a, b in zip(session(CachedLM(model, lean=True)), expected, strict=True):  # a second run reads the memo
        assert torch.equal(a, b)
    assert lean.prefix_len == stock.prefix_len and lean.cache.get_seq_length() == stock.cache.get_seq_length()


def test_models_it_cannot_reproduce_keep_the_stock_forward():
    assert LeanForward.build(tiny_model("gpt2")) is None  # another architecture
    assert LeanForward.build(tiny_model("gpt_neox")) is None
    assert LeanForward.build(tiny_model("gemma2")) is None  # Gemma's norms and scaling differ from Llama's
    eager = tiny_model("llama")
    eager.config._attn_implementation = "eager"  # different attention kernels
    assert LeanForward.build(eager) is None
    hooked = tiny_model("llama")
    hooked.model.layers[0].mlp.register_forward_hook(lambda *args: None)  # a hook the lean path would skip
    assert LeanForward.build(hooked) is None
    assert CachedLM(hooked).lean is None
    assert LeanForward.build(tiny_model("llama")) is not None


def test_a_build_is_reused_while_the_model_stays_the_same():
    """``LeanForward.build`` runs once per model (a decode makes two ``CachedLM`` a run), but a replaced
    linear is read afresh and a hook added later still turns the lean path off."""
    model = tiny_model("llama", vocab=32, hidden=32, layers=2, init_range=0.2)
    first = LeanForward.build(model)
    assert LeanForward.build(model) is first
    model.model.layers[0].mlp.up_proj = torch.nn.Linear(
        *reversed(model.model.layers[0].mlp.up_proj.weight.shape), bias=False
    )
    rebuilt = LeanForward.build(model)
    assert rebuilt is not first and rebuilt.layers[0].up[0] is model.model.layers[0].mlp.up_proj.weight
    lean, stock = CachedLM(model, lean=True), CachedLM(model, lean=False)
    assert all(torch.equal(a, b) for a, b in zip(session(lean), session(stock), strict=True))
    model.model.layers[1].self_attn.register_forward_pre_hook(lambda *args: None)
    assert LeanForward.build(model) is None


def test_bundled_pair_runs_lean():
    pair = specviz.load_pair(str(ASSETS / "target"), str(ASSETS / "draft"), device="cpu")
    assert CachedLM(pair.target).lean is not None and CachedLM(pair.draft).lean is not None


@pytest.mark.parametrize("family", ["llama", "qwen2", "mistral"])
def test_weight_major_calls_equal_stock_to_rounding_and_one_token_calls_exactly(family, monkeypatch):
    """Multi-token calls computed weight-major (as on a multi-threaded CPU) give the stock logits to
    float32 rounding (and so do the calls that read the keys they cached); a run of one-token calls
    stays bit for bit the stock kernels."""
    from specviz.models import lean_forward

    monkeypatch.setattr(lean_forward, "WEIGHT_MAJOR", "1")
    calls = []
    product = lean_forward._weight_major
    monkeypatch.setattr(lean_forward, "_weight_major", lambda *a: calls.append(a[0].shape[1]) or product(*a))
    model = tiny_model(family, vocab=32, hidden=32, layers=2, init_range=0.2, window=3)
    for a, b in zip(session(CachedLM(model, lean=True)), session(CachedLM(model, lean=False)), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert calls and min(calls) > 1  # the multi-token calls went weight-major, and only they
    lean, stock = CachedLM(model, lean=True), CachedLM(model, lean=False)
    for lm in (lean, stock):
        lm.extend([1])
    for token in (2, 3, 4, 5, 6):
        a, b = lean.forward([token], [ROOT]), stock.forward([token], [ROOT])
        assert torch.equal(a, b)
        lean.commit([0])
        stock.commit([0])


def test_the_weight_major_rule(monkeypatch):
    from specviz.models import lean_forward
    from specviz.models.lean_forward import WEIGHT_MAJOR_MAX, weight_major

    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    threads = torch.get_num_threads()
    monkeypatch.setattr(lean_forward, "WEIGHT_MAJOR", "auto")
    try:
        torch.set_num_threads(2)
        assert weight_major(2, cpu) and weight_major(WEIGHT_MAJOR_MAX, cpu)
        assert not weight_major(1, cpu) and not weight_major(WEIGHT_MAJOR_MAX + 1, cpu) and not weight_major(4, gpu)
        torch.set_num_threads(1)
        assert not weight_major(4, cpu)  # one thread: MKL's own layout is as fast
        monkeypatch.setattr(lean_forward, "WEIGHT_MAJOR", "1")
        assert weight_major(4, cpu) and weight_major(4, gpu) and not weight_major(1, cpu)
        torch.set_num_threads(2)
        monkeypatch.setattr(lean_forward, "WEIGHT_MAJOR", "0")
        assert not weight_major(4, cpu)
    finally:
        torch.set_num_threads(threads)
