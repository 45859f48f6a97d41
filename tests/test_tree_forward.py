"""The tree engine: one forward over a forest equals sequential decoding of each root-to-node path,
and the KV cache after keeping a path equals the cache of decoding that path directly. On the four
full-attention families of ``tiny.py`` and on its sliding-window ones (Mistral with ``sliding_window``
set; Gemma 2 and Gemma 3, which mix sliding and full layers), with a window shorter than the paths."""

import pytest
import torch
from tiny import FAMILIES, SLIDING_FAMILIES, tiny_model
from transformers import DynamicCache

from specviz.errors import SpecvizError
from specviz.models.tree_forward import ROOT, CachedLM

PROMPT = [1, 2, 3, 4, 5]
# a forest: two roots; root 0 has children 2, 3; node 2 has child 4; root 1 has child 5; 5 has child 6
TOKENS = [7, 8, 9, 10, 11, 12, 13]
PARENTS = [ROOT, ROOT, 0, 0, 2, 1, 5]


WINDOW = 3  # shorter than PROMPT plus a path: every node's window cuts into the prompt


def model_of(family: str):
    return tiny_model(family, vocab=32, hidden=32, layers=2, init_range=0.2, window=WINDOW)


def path_tokens(i: int) -> list[int]:
    out = []
    while i != ROOT:
        out.append(TOKENS[i])
        i = PARENTS[i]
    return out[::-1]


@torch.inference_mode()
def sequential_logits(model, ids: list[int]) -> torch.Tensor:
    return model(torch.tensor([ids], device=model.device)).logits[0, -1].float()


def assert_cache_equals_direct(lm: CachedLM, model, ids: list[int]) -> None:
    """``lm``'s cache holds exactly the KV of decoding ``ids`` from scratch."""
    assert lm.prefix_len == len(ids) and len(lm.tree) == 0
    direct = DynamicCache()  # full length in every layer, as CachedLM keeps it
    with torch.inference_mode():
        model(torch.tensor([ids], device=model.device), cache=direct, use_cache=True)
    for mine, ref in zip(lm.cache.layers, direct.layers, strict=True):
        torch.testing.assert_close(mine.keys, ref.keys, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(mine.values, ref.values, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("family", FAMILIES + SLIDING_FAMILIES)
def test_tree_logits_equal_sequential(family):
    model = model_of(family)
    lm = CachedLM(model)
    logits = lm.extend(PROMPT, TOKENS, PARENTS)
    assert logits.shape == (1 + len(TOKENS), 32)
    torch.testing.assert_close(logits[0], sequential_logits(model, PROMPT), atol=1e-4, rtol=1e-4)
    for i in range(len(TOKENS)):
        ref = sequential_logits(model, PROMPT + path_tokens(i))
        torch.testing.assert_close(logits[1 + i], ref, atol=1e-4, rtol=1e-4)
    assert lm.calls == 1


@pytest.mark.parametrize("family", FAMILIES + SLIDING_FAMILIES)
@pytest.mark.parametrize("path", [[1, 5, 6], [0, 2, 4], [0, 3], []])
def test_commit_keeps_exactly_the_path(family, path):
    model = model_of(family)
    lm = CachedLM(model)
    lm.extend(PROMPT, TOKENS, PARENTS)
    lm.commit(path)
    kept = PROMPT + [TOKENS[i] for i in path]
    assert_cache_equals_direct(lm, model, kept)
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


# kept path sets: disjoint roots; sharing root 0 (moves into the prefix); one path a prefix of another;
# the same path twice; a single path
KEPT = [[[0, 2, 4], [0, 3], [1, 5]], [[0, 2, 4], [0, 3]], [[0, 2], [0, 2, 4], [1]], [[1, 5], [1, 5]], [[0, 3]]]


@pytest.mark.parametrize("family", FAMILIES + SLIDING_FAMILIES)
@pytest.mark.parametrize("paths", KEPT)
def test_kept_paths_extend_like_decoding_from_scratch(family, paths):
    model = model_of(family)
    lm = CachedLM(model)
    lm.extend(PROMPT, TOKENS, PARENTS)
    shared = 0  # length of the chain every path starts with
    while all(len(p) > shared and p[shared] == paths[0][shared] for p in paths):
        shared += 1
    ends = lm.keep(paths)
    assert lm.prefix_len == len(PROMPT) + shared  # the chain on every path is settled
    assert len(lm.tree) == len({n for p in paths for n in p}) - shared
    histories = [PROMPT + [TOKENS[i] for i in p] for p in paths]
    for end, hist in zip(ends, histories):  # each returned index ends a pending path spelling that history
        assert lm.prefix_len + len(lm.tree.path(end)) == len(hist)
    nxt = [20 + j for j in range(len(paths))]
    logits = lm.forward(nxt, ends)  # every kept path grows by one token, in one call
    assert lm.calls == 2
    for row, hist, tok in zip(logits, histories, nxt):
        torch.testing.assert_close(row, sequential_logits(model, hist + [tok]), atol=1e-4, rtol=1e-4)
    # keeping then committing one hypothesis (with its new token) leaves the cache of decoding it directly
    last = len(lm.tree) - 1
    lm.commit(lm.tree.path(last))
    assert_cache_equals_direct(lm, model, histories[-1] + [nxt[-1]])
    torch.testing.assert_close(
        lm.extend([3])[0], sequential_logits(model, histories[-1] + [nxt[-1], 3]), atol=1e-4, rtol=1e-4
    )


@pytest.mark.parametrize("family", FAMILIES + SLIDING_FAMILIES)
def test_keep_then_commit_equals_decoding_the_path(family):
    model = model_of(family)
    lm = CachedLM(model)
    lm.extend(PROMPT, TOKENS, PARENTS)
    ends = lm.keep([[0, 2, 4], [0, 3], [1, 5, 6]])
    lm.commit(lm.tree.path(ends[0]))
    assert_cache_equals_direct(lm, model, PROMPT + [TOKENS[i] for i in (0, 2, 4)])


@pytest.mark.parametrize("family", FAMILIES + SLIDING_FAMILIES)
def test_beams_across_steps_match_sequential(family):
    """Three steps of a beam search in one cache: each step grows a two-level tree under every kept
    beam in one forward (every node's logits equal sequential decoding of its history), then keeps
    some root-to-leaf paths as the next beams; finally one beam is committed."""
    model = model_of(family)
    gen = torch.Generator().manual_seed(0)
    lm = CachedLM(model)
    lm.extend(PROMPT)
    beams: list[tuple[int, list[int]]] = [(ROOT, PROMPT)]  # (pending index of the beam's end, its tokens)
    for _ in range(3):
        tokens, parents, hist = [], [], []
        for end, h in beams:  # two children per beam, one grandchild under the first
            for _ in range(2):
                tokens.append(int(torch.randint(32, (1,), generator=gen)))
                parents.append(end)
                hist.append(h + tokens[-1:])
            tokens.append(int(torch.randint(32, (1,), generator=gen)))
            parents.append(len(lm.tree) + len(tokens) - 3)
            hist.append(hist[-2] + tokens[-1:])
        base = len(lm.tree)
        logits = lm.forward(tokens, parents)
        for row, h in zip(logits, hist):
            torch.testing.assert_close(row, sequential_logits(model, h), atol=1e-4, rtol=1e-4)
        picks = torch.randperm(len(tokens), generator=gen)[:3].tolist()
        ends = lm.keep([lm.tree.path(base + i) for i in picks])
        beams = [(e, hist[i]) for e, i in zip(ends, picks)]
    end, h = beams[0]
    lm.commit(lm.tree.path(end))
    assert_cache_equals_direct(lm, model, h)


def test_keep_refuses_a_non_path():
    lm = CachedLM(tiny_model("llama", vocab=32))
    lm.extend(PROMPT, TOKENS, PARENTS)
    for bad in ([0, 4], [2], [len(TOKENS)], [-2]):
        with pytest.raises(SpecvizError):
            lm.keep([[0, 2], bad])
    assert len(lm.tree) == len(TOKENS)  # a refused keep changes nothing


def test_layer_windows_are_read_once_per_model_and_config():
    """A decode wraps each model anew; its layer layout is read once, and afresh for a new config."""
    import copy

    from specviz.models.tree_forward import model_windows

    model = model_of("mistral")
    assert CachedLM(model).windows == {"sliding_attention": WINDOW}
    wider = copy.deepcopy(model.config)
    wider.sliding_window = 2 * WINDOW
    model.config = wider
    assert CachedLM(model).windows == {"sliding_attention": 2 * WINDOW} == model_windows(model)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_stock_forward_uses_no_deprecated_argument(family):
    """transformers 5.24 deprecated ``past_key_values`` (removed in 5.40) for ``cache``: a call through
    the stock forward (the lean forward off) warns of nothing, so the next release keeps decoding."""
    import warnings

    lm = CachedLM(model_of(family), lean=False)
    assert lm.lean is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lm.extend(PROMPT, TOKENS[:2], PARENTS[:2])
        lm.keep([[0]])
        lm.forward([TOKENS[3]], [ROOT])
