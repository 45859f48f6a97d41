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
    rc = main(
        [
            "--preset",
            "smoke",
            "--out",
            str(out),
            "--max-files",
            "12",
            "--target-steps",
            "8",
            "--draft-steps",
            "6",
            "--ee-steps",
            "6",
            "--seed",
            "3",
            "--threads",
            "1",
        ]
    )
    assert rc == 0
    return out


def test_writes_target_draft_and_early_exit(trained):
    for d in ("target", "draft"):
        for f in ("config.json", "model.safetensors"):
            assert (trained / d / f).is_file(), f"{d}/{f}"
    # one copy of the tokenizer, the target's: the draft reads it (load_pair), no tokenizer/ directory
    assert (trained / "target" / "tokenizer.json").is_file() and (
        trained / "target" / "tokenizer_config.json"
    ).is_file()
    assert not (trained / "draft" / "tokenizer.json").exists() and not (trained / "tokenizer").exists()
    meta = json.loads((trained / "early_exit" / "early_exit.json").read_text())
    assert meta["exit_layer"] == 1 and meta["base"] == "../target"
    assert (trained / "early_exit" / "calibration.safetensors").is_file() and 0 < meta["calibration"]["sigma_m"] < 1
    report = json.loads((trained / "bundled_pair.json").read_text())
    assert report["eval"]["target"]["ppl"] > 1
    assert 0 <= report["eval"]["draft"]["agreement_heldout"] <= 1
    assert report["corpus"]["train_files"] > 0 and report["corpus"]["heldout_files"] > 0


def test_load_pair_and_auto_classes_accept_the_output(trained):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(trained / "target")
    tok = AutoTokenizer.from_pretrained(trained / "target")
    assert tok.eos_token_id == model.config.eos_token_id == 0
    assert tok.decode(tok("def f(x):\n    return x\n").input_ids) == "def f(x):\n    return x\n"
    pair = specviz.load_pair(str(trained / "target"), str(trained / "draft"), device="cpu")
    trace = specviz.decode(pair, "sd", prompt="def ", max_new_tokens=6, temperature=0, gamma=3)
    ar = specviz.decode(pair, "ar", prompt="def ", max_new_tokens=6, temperature=0)
    assert trace.output_ids == ar.output_ids


def test_early_exit_head_loads_and_matches_its_definition(trained):
    from transformers import AutoModelForCausalLM

    from specviz.core.trees import chain_shape
    from specviz.models.early_exit import EarlyExitLM

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
        full = head.logits_for(ids)[0]
        assert torch.allclose(head(h1)[0], full, atol=1e-5)
    # incremental decoding with the head's own cache gives the same logits as the full pass
    lm = EarlyExitLM(head)
    a = lm.extend([5, 17, 42, 9])
    b = lm.extend([100], [7], list(chain_shape(1).parents))
    assert torch.allclose(torch.cat([a, b]), full[3:], atol=1e-4)


@pytest.fixture(scope="module")
def tiny_target(tmp_path_factory):
    from tiny import save_checkpoint, tiny_tokenizer

    root = tmp_path_factory.mktemp("ee_cli")
    target = save_checkpoint(root / "tiny-llm", "gpt2", tiny_tokenizer(), seed=0, hidden=32, layers=3, init_range=0.2)
    text = root / "code.txt"
    text.write_text(
        "".join(f"def f{i}(a, b):\n    return a + b * {i}\n\nfor i in range({i}):\n    print(i)\n" for i in range(300))
    )
    return root, target, text


def test_train_early_exit_cli_lowers_the_loss_and_saves_a_loadable_head(tiny_target):
    """``python -m specviz train early-exit`` on a tiny GPT-2 and a text file: the head's held-out KL to
    the target goes down, the exit layer itself is trained (not only the LM head), the target stays
    untouched, and the saved head reloads with identical logits."""
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from specviz.cli import main as specviz_main

    root, target_dir, text = tiny_target
    before = load_file(f"{target_dir}/model.safetensors")
    rc = specviz_main(
        [
            "train",
            "early-exit",
            "--target",
            target_dir,
            "--exit-layer",
            "1",
            "--text",
            str(text),
            "--steps",
            "60",
            "--seq-len",
            "32",
            "--batch-size",
            "8",
            "--gen-sequences",
            "16",
            "--gen-prompt-len",
            "8",
            "--gen-new-tokens",
            "24",
            "--eval-windows",
            "8",
            "--threads",
            "1",
            "--calibration-steps",
            "30",
            "--calibration-sequences",
            "16",
            "--no-progress",
        ]
    )
    assert rc == 0
    out = root / "tiny-llm-early-exit"  # saved next to the target by default
    meta = json.loads((out / "early_exit.json").read_text())
    assert meta["exit_layer"] == 1 and meta["base"] == "../tiny-llm" and meta["model_type"] == "gpt2"
    assert meta["heldout_after"]["kl_to_target"] < 0.9 * meta["heldout_before"]["kl_to_target"]
    after = load_file(f"{target_dir}/model.safetensors")
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    base = AutoModelForCausalLM.from_pretrained(target_dir).eval()
    pair = specviz.load_pair(target_dir, early_exit=str(out), device="cpu")
    head = pair.early_exit
    # Cali-TS's calibration head is trained too, saved with the head and attached by load_pair
    cal, sigma_m = pair.heads.calibration, pair.heads.calibration_sigma_m
    assert sigma_m == meta["calibration"]["sigma_m"] and 0 < sigma_m < 1
    assert 0 <= meta["calibration"]["heldout_accuracy"] <= 1 and meta["calibration"]["samples"] > 100
    with torch.no_grad():
        theta = float(cal(cal.project_target(torch.randn(32)), torch.randn(32), 3))
    assert 0 < theta < 1 and theta != 0.5
    fresh = EarlyExitHead(base, 1)
    for name in ("layer", "norm", "lm_head"):  # every part of the head moved away from its initial copy
        trained, init = getattr(head, name).state_dict(), getattr(fresh, name).state_dict()
        assert any(not torch.equal(trained[k], init[k]) for k in trained), name
    again = load_early_exit(out, base)
    ids = torch.tensor([[3, 44, 17, 9, 120, 5, 61]])
    with torch.no_grad():
        assert torch.equal(head.logits_for(ids), again.logits_for(ids))


def test_train_early_exit_cli_reproduces_the_pipeline_stage(trained, tmp_path):
    """The standalone command with the recipe's settings gives the pipeline's head bit for bit (one
    training function, the same corpus stream, generated bank and seeds)."""
    from safetensors.torch import load_file

    rc = main(
        [
            "early-exit",
            "--target",
            str(trained / "target"),
            "--exit-layer",
            "1",
            "--out",
            str(tmp_path / "ee"),
            "--steps",
            "6",
            "--seed",
            "3",
            "--threads",
            "1",
            "--max-files",
            "12",
            "--seq-len",
            "64",
            "--batch-size",
            "8",
            "--gen-sequences",
            "16",
            "--gen-prompt-len",
            "16",
            "--gen-new-tokens",
            "49",
            "--eval-windows",
            "4",
            "--calibration-steps",
            "0",
            "--no-progress",
        ]
    )
    assert rc == 0
    ours = load_file(str(tmp_path / "ee" / "early_exit.safetensors"))
    pipeline = load_file(str(trained / "early_exit" / "early_exit.safetensors"))
    assert ours.keys() == pipeline.keys() and all(torch.equal(ours[k], pipeline[k]) for k in ours)


def test_train_early_exit_cli_reports_bad_input(tiny_target, capsys):
    from specviz.train.cli import main as train_main

    _, target_dir, text = tiny_target
    assert (
        train_main(
            [
                "early-exit",
                "--target",
                target_dir,
                "--exit-layer",
                "3",
                "--text",
                str(text),
                "--steps",
                "1",
                "--gen-sequences",
                "0",
            ]
        )
        == 2
    )
    assert "exit_layer must be in [1, 2]" in capsys.readouterr().err


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
        cfg = TrainConfig(
            out=str(d),
            max_files=6,
            vocab_size=300,
            seq_len=32,
            batch_size=4,
            target_size="tiny-target",
            draft_size="tiny-draft",
            target_steps=3,
            draft_steps=0,
            ee_steps=0,
            gen_sequences=0,
            stages=("tokenizer", "target"),
            log_every=100,
            threads=1,
        )
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


def test_calibration_samples_line_up_with_the_round_they_describe():
    """Anchor t, draft index i: H^(T) is the target's last hidden state at t - 1, H^(D) the draft's at
    t + i - 1, and the label says whether the draft's argmax there is the target's."""
    from tiny import tiny_model

    from specviz.train.calibration import calibration_features

    base = tiny_model("llama", vocab=16, hidden=16, layers=3, init_range=0.2)
    head = EarlyExitHead(base, 1).eval()
    with torch.no_grad():
        for p in head.layer.parameters():
            p.mul_(1.5)
    seqs = torch.randint(0, 16, (2, 20), generator=torch.Generator().manual_seed(0))
    h_t, h_d, idx, labels = calibration_features(base, head, seqs, first_anchor=4, device="cpu")
    with torch.no_grad():
        out = base(input_ids=seqs, output_hidden_states=True)
        d_logits, hd = head(out.hidden_states[1], return_hidden=True)
    agree = (d_logits.argmax(-1) == out.logits.argmax(-1)).float()
    per_row = len(idx) // 2
    k = 0
    for i in range(1, 11):
        for t in range(4, 20 - i + 1):
            for b in range(2):
                row = b * per_row + k
                assert idx[row] == i and labels[row] == agree[b, t + i - 1]
                assert torch.allclose(h_t[row], out.hidden_states[-1][b, t - 1])
                assert torch.allclose(h_d[row], hd[b, t + i - 1])
            k += 1
    assert 0 < labels.mean() < 1
