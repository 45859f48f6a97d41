"""At temperature 0, ``sd`` reproduces ``ar`` greedy output token for token on the full-attention and
the sliding-window families of ``tiny.py``, for several draft lengths and prompts; ``ar`` itself
reproduces the model's own ``generate(do_sample=False)``, so on the sliding families (window 4,
outputs of 40 tokens) the window is checked against transformers, not only against itself."""

import pytest
import torch
from tiny import FAMILIES, SLIDING_FAMILIES, tiny_pair

import specviz

PROMPTS = [[1, 2, 3], [5], [7, 7, 7, 7, 7, 7, 7, 7, 9, 30]]
NEW_TOKENS = 40


def make_close_pair(family: str, **kw):
    """A draft close to the target, so steps mix long accepted runs with rejections."""
    return tiny_pair(family, vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.1, **kw)


@pytest.fixture(scope="module", params=FAMILIES + SLIDING_FAMILIES)
def close_pair(request):
    return make_close_pair(request.param)


@torch.inference_mode()
def hf_greedy(model, prompt: list[int], n: int) -> list[int]:
    """``n`` tokens of transformers' own greedy decoding (its cache, its masks)."""
    ids = torch.tensor([prompt], device=model.device)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=n, min_new_tokens=n)
    return out[0, len(prompt) :].tolist()


@pytest.mark.parametrize("prompt", PROMPTS, ids=["p3", "p1", "p10"])
def test_sd_greedy_equals_ar(close_pair, prompt):
    ref = specviz.decode(close_pair, "ar", prompt, max_new_tokens=NEW_TOKENS, temperature=0).output_ids
    assert len(ref) == NEW_TOKENS
    assert ref == hf_greedy(close_pair.target, prompt, NEW_TOKENS)
    accepted = 0
    for gamma in (1, 3, 5, 8):
        trace = specviz.decode(close_pair, "sd", prompt, max_new_tokens=NEW_TOKENS, temperature=0, gamma=gamma)
        assert trace.output_ids == ref, f"gamma={gamma} diverged"
        accepted += trace.metrics["accepted"]
    assert accepted > 0  # the drafts were accepted sometimes: the equality is not only the resample path


@pytest.mark.parametrize("family", SLIDING_FAMILIES)
def test_the_window_bites(family):
    """The same weights with full attention decode differently: the sliding families' equalities above
    hold with the window in force."""
    windowed = specviz.decode(make_close_pair(family), "ar", PROMPTS[0], max_new_tokens=NEW_TOKENS, temperature=0)
    full = specviz.decode(
        make_close_pair(family, window=4096), "ar", PROMPTS[0], max_new_tokens=NEW_TOKENS, temperature=0
    )
    assert windowed.output_ids != full.output_ids


def test_greedy_ignores_seed_and_top_k(close_pair):
    a = specviz.decode(close_pair, "sd", [4, 5], max_new_tokens=20, temperature=0, seed=1, gamma=4)
    b = specviz.decode(close_pair, "sd", [4, 5], max_new_tokens=20, temperature=0, seed=2, top_k=3, gamma=4)
    assert a.output_ids == b.output_ids
