"""The tree engine: one forward over a forest equals sequential decoding of each root-to-node path,
and the KV cache after keeping a path equals the cache of decoding that path directly."""
import pytest
import torch
from tiny import FAMILIES, tiny_model
from transformers import DynamicCache

from specviz.errors import SpecvizError
from specviz.models.tree_forward import ROOT, CachedLM

PROMPT = [1, 2, 3, 4, 5]
# a forest: two roots; root 0 has children 2, 3; node 2 has child 4; root 1 has child 5; 5 has child 6
TOKENS = [7, 8, 9, 10, 11, 12, 13]
PARENTS = [ROOT, ROOT, 0, 0, 2, 1, 5]


def path_tokens(i: int) -> list[int]:
    out = []
    while i != ROOT:
        out.append(TOKENS[i])
        i = PARENTS[i]
    return out[::-1]


@torch.inference_mode()
def sequential_logits(model, ids: list[int]) -> torch.Tensor:
    return model(torch.tensor([ids])).logits[0, -1].float()


@pytest.mark.parametrize("family", FAMILIES)
def test_tree_logits_equal_sequential(family):
    model = tiny_model(family, vocab=32, hidden=32, layers=2)
    lm = CachedLM(model)
    logits = lm.extend(PROMPT, TOKENS, PARENTS)
    assert logits.shape == (1 + len(TOKENS), 32)
    torch.testing.assert_close(logits[0], sequential_logits(model, PROMPT), atol=1e-4, rtol=1e-4)
    for i in range(len(TOKENS)):
        ref = sequential_logits(model, PROMPT + path_tokens(i))
        torch.testing.assert_close(logits[1 + i], ref, atol=1e-4, rtol=1e-4)
    assert lm.calls == 1


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("path", [[1, 5, 6], [0, 2, 4], [0, 3], []])
def test_commit_keeps_exactly_the_path(family, path):
    model = tiny_model(family, vocab=32, hidden=32, layers=2)
    lm = CachedLM(model)
    lm.extend(PROMPT, TOKENS, PARENTS)
    lm.commit(path)
    kept = PROMPT + [TOKENS[i] for i in path]
    assert lm.prefix_len == len(kept) and len(lm.tree) == 0
    direct = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(torch.tensor([kept]), past_key_values=direct, use_cache=True)
    for mine, ref in zip(lm.cache.layers, direct.layers):
        torch.testing.assert_close(mine.keys, ref.keys, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(mine.values, ref.values, atol=1e-5, rtol=1e-4)
    # and decoding continues correctly from the kept cache
    nxt = lm.extend([3])
    torch.testing.assert_close(nxt[0], sequential_logits(model, kept + [3]), atol=1e-4, rtol=1e-4)


def test_level_by_level_growth_matches_one_shot():
    model = tiny_model("llama", vocab=32, hidden=32, layers=2)
    one, two = CachedLM(model), CachedLM(model)
    full = one.extend(PROMPT, TOKENS, PARENTS)
    first = two.extend(PROMPT, TOKENS[:2], PARENTS[:2])
    rest = two.forward(TOKENS[2:], PARENTS[2:])
    torch.testing.assert_close(torch.cat([first, rest]), full, atol=1e-4, rtol=1e-4)


def test_commit_refuses_a_non_path():
    lm = CachedLM(tiny_model("llama", vocab=32))
    lm.extend(PROMPT, TOKENS, PARENTS)
    with pytest.raises(SpecvizError):
        lm.commit([0, 4])
    with pytest.raises(SpecvizError):
        lm.extend([1])  # pending tree must be committed first
