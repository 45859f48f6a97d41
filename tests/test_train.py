"""The training pipeline runs end to end on a tiny corpus slice and writes loadable directories."""
from __future__ import annotations

import json

import pytest
import torch

import specviz
from specviz.models.early_exit import EarlyExitHead, first_n, load_early_exit
from specviz.train.cli import main
from specviz.train.evaluate import greedy_sd_tau


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("pair")
    rc = main(["--preset", "smoke", "--out", str(out), "--max-files", "12", "--target-steps", "8",
               "--draft-steps", "6", "--ee-steps", "6", "--seed", "3", "--threads", "1"])
    assert rc == 0
    return out


def test_writes_target_draft_and_early_exit(trained):
    for d in ("target", "draft"):
        for f in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
            assert (trained / d / f).is_file(), f"{d}/{f}"
    meta = json.loads((trained / "early_exit" / "early_exit.json").read_text())
    assert meta["exit_layer"] == 1 and meta["base"] == "../target"
    report = json.loads((trained / "bundled_pair.json").read_text())
    assert report["eval"]["target"]["ppl"] > 1
    assert 0 <= report["eval"]["draft"]["agreement_heldout"] <= 1
    assert report["corpus"]["train_files"] > 0 and report["corpus"]["heldout_files"] > 0


def test_load_pair_and_auto_classes_accept_the_output(trained):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(trained / "target")
    tok = AutoTokenizer.from_pretrained(trained / "draft")
    assert tok.eos_token_id == model.config.eos_token_id == 0
    assert tok.decode(tok("def f(x):\n    return x\n").input_ids) == "def f(x):\n    return x\n"
    pair = specviz.load_pair(str(trained / "target"), str(trained / "draft"), device="cpu")
    trace = specviz.decode(pair, "sd", prompt="def ", max_new_tokens=6, temperature=0, gamma=3)
    ar = specviz.decode(pair, "ar", prompt="def ", max_new_tokens=6, temperature=0)
    assert trace.output_ids == ar.output_ids


def test_early_exit_head_loads_and_matches_its_definition(trained):
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(trained / "target")
    head = load_early_exit(trained / "early_exit", base)
    assert isinstance(head, EarlyExitHead) and head.exit_layer == 1
    assert head.lm_head.weight.data_ptr() != base.lm_head.weight.data_ptr()
    assert "lm_head.weight" in head.state_dict() and not any(k.startswith("_base") for k in head.state_dict())
    ids = torch.tensor([[5, 17, 42, 9, 100, 7]])
    with torch.no_grad():
        out = base(input_ids=ids, output_hidden_states=True)
        h1 = first_n(base, ids, 1)
        assert torch.allclose(h1, out.hidden_states[1], atol=1e-5)
        full = head.logits_for(ids)
        # incremental decoding with the head's own cache gives the same logits as the full pass
        from transformers import DynamicCache

        cache = DynamicCache()
        pos = torch.arange(6).unsqueeze(0)
        a = head(h1[:, :4], pos[:, :4], past_key_values=cache)
        b = head(h1[:, 4:], pos[:, 4:], past_key_values=cache)
    assert torch.allclose(torch.cat([a, b], 1), full, atol=1e-4)


def test_fresh_head_on_two_layer_base_equals_target():
    """Copying the last layer onto h^1 of a 2-layer model reproduces the target exactly before training."""
    from transformers import LlamaForCausalLM

    from specviz.train.configs import llama_config

    torch.manual_seed(0)
    base = LlamaForCausalLM(llama_config("tiny-target", 64)).eval()
    head = EarlyExitHead(base, 1)
    ids = torch.randint(1, 64, (2, 9))
    with torch.no_grad():
        assert torch.allclose(head.logits_for(ids), base(input_ids=ids).logits, atol=1e-5)
    with pytest.raises(ValueError):
        EarlyExitHead(base, 2)


def test_greedy_sd_tau_bookkeeping():
    m = torch.tensor([[True, True, True, True, True, False, True, False]])
    r = greedy_sd_tau(m, gamma=4)
    # step 1: 4 accepted + bonus (5 tokens); step 2: pos 5 rejected -> 1 token; step 3: pos 6 ok, 7 not -> 2
    assert r["steps"] == 3 and r["tokens"] == 8 and abs(r["tau"] - 8 / 3) < 1e-3


def test_training_is_deterministic(tmp_path):
    from specviz.train.pipeline import TrainConfig, run

    def once(d):
        cfg = TrainConfig(out=str(d), max_files=6, vocab_size=300, seq_len=32, batch_size=4, target_size="tiny-target",
                          draft_size="tiny-draft", target_steps=3, draft_steps=0, ee_steps=0, gen_sequences=0,
                          stages=("tokenizer", "target"), log_every=100, threads=1)
        run(cfg, log=lambda s: None)
        from safetensors.torch import load_file
        return load_file(str(d / "target" / "model.safetensors"))

    a, b = once(tmp_path / "a"), once(tmp_path / "b")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("preset", ["cpu", "gpu"])
def test_recipes_give_a_cheap_draft_and_fit_the_assets_budget(preset):
    """Issue #3's sizes for each full recipe: the draft several times cheaper per token than the
    target, a valid exit layer, and target + draft + early-exit head at most 60 MB in float32."""
    from transformers import LlamaForCausalLM

    from specviz.train.cli import build_parser, config_from_args
    from specviz.train.configs import SIZES, count_parameters, llama_config, macs_per_token

    cfg = config_from_args(build_parser().parse_args(["--preset", preset]))
    target, draft = SIZES[cfg.target_size], SIZES[cfg.draft_size]
    assert macs_per_token(target, cfg.vocab_size) >= 4 * macs_per_token(draft, cfg.vocab_size)
    assert 1 <= cfg.exit_layer < target.layers
    with torch.device("meta"):
        t = LlamaForCausalLM(llama_config(target, cfg.vocab_size))
        d = LlamaForCausalLM(llama_config(draft, cfg.vocab_size))
        head = EarlyExitHead(t, cfg.exit_layer)
    n = count_parameters(t) + count_parameters(d) + sum(p.numel() for p in head.parameters())
    assert 4 * n <= 60e6
