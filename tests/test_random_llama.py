"""``specviz.models.random_llama``: the shapes and random models the benchmarks and the GPU check build."""

from __future__ import annotations

import torch

from specviz.models.random_llama import llama_shape, random_llama, random_model_pair


def test_a_shape_leaves_out_what_is_not_given():
    shape = llama_shape(hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, vocab=512, rope_theta=1e4)
    assert shape == dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=512,
        rope_theta=1e4,
    )
    full = llama_shape(
        hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, vocab=512, head_dim=8, positions=64, tied=False
    )
    assert (full["head_dim"], full["max_position_embeddings"], full["tie_word_embeddings"]) == (8, 64, False)


def test_the_same_seed_gives_the_same_model():
    shape = llama_shape(hidden=16, intermediate=32, layers=1, heads=2, kv_heads=1, vocab=32, init_range=0.1)
    a, b, c = random_llama(shape, 3), random_llama(shape, 3), random_llama(shape, 4)
    assert not a.training and a.config.initializer_range == 0.1
    assert (a.config.bos_token_id, a.config.eos_token_id, a.config.pad_token_id) == (None, None, None)
    same = [torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values())]
    assert all(same)
    assert not all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), c.state_dict().values()))
    pair = random_model_pair("x", a, c)
    assert (pair.target_name, pair.draft_name, pair.vocab_size, pair.tokenizer) == (
        "random x target",
        "random x draft",
        32,
        None,
    )
    assert random_model_pair("x", a, b, "a copy").draft_name == "a copy"
