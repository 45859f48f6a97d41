"""The default pair's recipe (``python -m specviz train chat``) end to end in seconds, on a tiny random
target saved with a chat template: the target's answers with their top-k laws, the distilled draft
(a model directory ``load_pair`` takes, in bfloat16, with the target's tokenizer), the early-exit head
on the target's shared output embedding, Cali-TS's calibration head reported against the constant
predictor, the decode check, and the same weights again for the same seed."""

from __future__ import annotations

import hashlib
import json

import pytest
import torch
from safetensors.torch import load_file
from tiny import tiny_model, tiny_tokenizer

import specviz
from specviz.train.chat_data import answer_prompts
from specviz.train.chat_distill import AnswerBatches, collate, topk_cross_entropy
from specviz.train.chat_pair import REPORT, ChatRecipe, run_chat
from specviz.train.chat_prompts import EVAL_PROMPTS, is_heldout, prompt_set, split

TEMPLATE = (
    "{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def target_dir(tmp_path_factory):
    tok = tiny_tokenizer()
    tok.chat_template = TEMPLATE
    model = tiny_model("llama", vocab=len(tok), seed=0, hidden=32, layers=3, init_range=0.2, max_positions=512)
    model.config.eos_token_id = model.generation_config.eos_token_id = tok.eos_token_id
    path = tmp_path_factory.mktemp("chat-target")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def recipe(out, target_dir, **kw) -> ChatRecipe:
    settings = dict(
        out=str(out),
        target=str(target_dir),
        threads=1,
        cache_dir=str(out / "cache"),
        prompts=24,
        max_new_tokens=10,
        answer_batch=8,
        top_k=8,
        draft_layers=1,
        draft_hidden=16,
        draft_heads=2,
        draft_kv_heads=1,
        draft_intermediate=32,
        draft_steps=6,
        draft_batch=4,
        exit_layer=1,
        ee_steps=4,
        calibration_steps=5,
        eval_new_tokens=6,
        log_every=3,
        extra={"calibration_answers": 6},
    )
    return ChatRecipe(**{**settings, **kw})


def test_prompts_are_varied_distinct_and_the_held_out_ones_never_trained_on():
    prompts = prompt_set()
    assert len(prompts) == len(set(prompts)) > 2000
    train, held = split(prompts, 5.0)
    assert not set(train) & set(held) and 0.03 < len(held) / len(prompts) < 0.07
    assert all(not is_heldout(p, 5.0) for p in train)
    assert prompt_set(50, seed=1) == prompt_set(50, seed=1) != prompt_set(50, seed=2)
    assert not set(EVAL_PROMPTS) & set(prompts)  # the measured prompts are in no template's words
    kinds = ("Write a Python function", "What is ", "List ", "Write a short poem", "times")
    assert all(any(k in p for p in prompts) for k in kinds)


def test_templates_1_is_the_set_the_shipped_heads_were_trained_on():
    """The default question set is unchanged: the same questions in the same order for every seed."""
    for seed in (0, 1, 7):
        assert prompt_set(seed=seed, questions="templates-1") == prompt_set(seed=seed)
    assert prompt_set(30, seed=3, questions="templates-1") == prompt_set(30, seed=3)
    assert (
        len(prompt_set()) == 2347
    )  # templates-1 as the draft model and the first four heads were trained on it: never change
    text = "\n".join(prompt_set(seed=0)).encode()  # and its exact questions in their order (seed 0), as shipped
    assert hashlib.sha256(text).hexdigest() == "5874037a4dca54ebe71bc65bd99bb65257fc79a91992bf4cadd21d514f355380"


def test_templates_2_adds_thousands_of_distinct_questions_and_none_is_measured():
    """``templates-2`` is ``templates-1`` plus at least 3,000 new distinct questions (explanations, how-to,
    people and events, benefits, definitions, lists), deterministic for a seed; neither set holds a prompt
    that ``EVAL_PROMPTS`` or the benchmark's chat prompts measure."""
    from specviz.bench.prompts import CHAT_PROMPTS

    one, two = prompt_set(), prompt_set(questions="templates-2")
    assert len(two) == len(set(two)) and set(one) < set(two) and len(two) - len(one) >= 3000
    assert prompt_set(questions="templates-2", seed=4) == prompt_set(questions="templates-2", seed=4)
    assert prompt_set(questions="templates-2", seed=4) != prompt_set(questions="templates-2", seed=5)
    assert prompt_set(40, 4, "templates-2") == prompt_set(None, 4, "templates-2")[:40]
    measured = set(EVAL_PROMPTS) | {p for prompts in CHAT_PROMPTS.values() for p in prompts}
    assert not measured & set(two)
    kinds = ("How does ", "Why ", "How do I ", "Who was ", "What are the pros and cons of ", "What does the word ")
    assert all(any(p.startswith(k) for p in set(two) - set(one)) for k in kinds)
    with pytest.raises(ValueError, match="templates-1, templates-2, templates-3"):
        prompt_set(10, questions="templates-4")
    text = "\n".join(two).encode()  # as the fifth head was trained on it (seed 0): never change
    assert hashlib.sha256(text).hexdigest() == "255e3cc8d783bc48701ef934ad119c6690111f5c90ec18e3ba6bd751ab490d61"


def test_templates_3_begins_with_templates_2_and_adds_none_in_a_measured_prompts_words():
    """``templates-3`` is ``templates-2`` in its order for the seed (so its training split begins with
    ``templates-2``'s, whose cached answers a run reads), then at least 4,000 more distinct questions in
    new families; none of them is a measured prompt or begins with a measured prompt's first four words,
    but for "Write a Python function", ``templates-1``'s own family."""
    from specviz.bench.prompts import CHAT_PROMPTS
    from specviz.ui.examples import CHAT_PROMPTS as UI_PROMPTS

    for seed in (0, 3):
        two, three = prompt_set(None, seed, "templates-2"), prompt_set(None, seed, "templates-3")
        assert three[: len(two)] == two and len(three) == len(set(three)) and len(three) - len(two) >= 4000
        assert split(three, 5.0)[0][: len(split(two, 5.0)[0])] == split(two, 5.0)[0]
    assert prompt_set(40, 3, "templates-3") == three[:40] and prompt_set(None, 0, "templates-3") != three
    measured = set(EVAL_PROMPTS) | {p for prompts in CHAT_PROMPTS.values() for p in prompts}
    shown = measured | set(UI_PROMPTS)  # the page's examples (three of them templates-1 questions)
    starts = {tuple(p.lower().split()[:4]) for p in shown} - {("write", "a", "python", "function")}
    added = three[len(two) :]
    assert not measured & set(three) and not [q for q in added if tuple(q.lower().split()[:4]) in starts]
    kinds = ("What do ", "Who invented ", "Who wrote ", "List five ways to ", "How do I make ", "How do you say ")
    assert all(any(q.startswith(k) for q in added) for k in kinds)
    assert any(" minus " in q for q in added) and any(q.startswith("Create a Python class") for q in added)
    text = "\n".join(prompt_set(None, 0, "templates-3")).encode()  # its questions in their order: a change is a new set
    assert hashlib.sha256(text).hexdigest() == "1b7d2caa19f1ac614a425c200a0895af17429df6493d4435e3deed5b3564b9c3"


def test_the_question_set_is_a_recipe_setting_that_reaches_prompt_set(monkeypatch):
    """``questions`` (the chat recipe's default templates-1, the feature recipe's templates-3) is a flag of
    both recipes' command lines, and is what each recipe's answers stage asks ``prompt_set`` for (stopped
    there: nothing is answered)."""
    import types

    from specviz.train import chat_prompts
    from specviz.train.chat_answers import build_answers
    from specviz.train.feature_pair import FeatureRecipe, _answers
    from specviz.train.recipe_cli import recipe_main

    assert FeatureRecipe().questions == "templates-3" and ChatRecipe().questions == "templates-1"  # as shipped
    asked = []

    class Asked(Exception):
        pass

    def spy(n=None, seed=0, questions="templates-1"):
        asked.append(questions)
        raise Asked

    monkeypatch.setattr(chat_prompts, "prompt_set", spy)
    with pytest.raises(Asked):
        build_answers(ChatRecipe(questions="templates-2"), None, None, log=lambda s: None)
    with pytest.raises(Asked):
        _answers(FeatureRecipe(questions="templates-2"), None, None, log=lambda s: None)
    assert asked == ["templates-2", "templates-2"]
    got = []
    fake = types.SimpleNamespace(
        run_feature=lambda cfg, log: got.append(cfg), run_chat=lambda cfg, log: got.append(cfg)
    )
    monkeypatch.setattr("importlib.import_module", lambda name: fake)
    assert recipe_main("feature", ["--questions", "templates-2"]) == 0 == recipe_main("chat", [])
    assert [cfg.questions for cfg in got] == ["templates-2", "templates-1"]


def test_the_feature_recipes_defaults_are_the_shipped_heads_settings():
    """``python -m specviz train feature`` with no flag but ``--out`` remakes the shipped head: every setting
    its report records is the recipe's default."""
    from dataclasses import asdict
    from pathlib import Path

    from specviz.train.feature_pair import FeatureRecipe

    report = Path(specviz.__file__).resolve().parents[1] / "assets" / "smollm2" / "feature" / "feature_report.json"
    shipped = {k: v for k, v in json.loads(report.read_text())["config"].items() if k != "out"}
    defaults = json.loads(json.dumps({k: v for k, v in asdict(FeatureRecipe()).items() if k != "out"}))
    assert shipped == defaults


def test_answers_record_the_targets_topk_law_and_end_at_eos(target_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(target_dir)
    model = AutoModelForCausalLM.from_pretrained(target_dir).eval()
    answers = answer_prompts(
        model, tok, ["def f", "import os please"], 0.0, 8, seed=0, batch_size=2, top_k=5, log=lambda s: None
    )
    for a in answers:
        assert a.top_ids.shape == (len(a.answer), 5) and a.top_logp.shape == (len(a.answer), 5)
        assert a.answer[:-1].count(tok.eos_token_id) == 0
        ids = torch.tensor([a.ids])
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0].float(), -1)
        at = torch.arange(len(a.prompt_ids) - 1, len(a.ids) - 1)
        assert a.top_ids[:, 0].tolist() == a.answer  # greedy: the recorded argmax is the answer
        torch.testing.assert_close(a.top_logp.float(), logp[at].gather(-1, a.top_ids.long()), atol=2e-3, rtol=0)
    batch = collate(answers, 64, tok.eos_token_id)
    assert len(batch[1]) == sum(len(a.answer) for a in answers)
    # the loss is the cross-entropy against the renormalised top-k law: lowest at that law itself
    logits = torch.full((len(batch[1]), len(tok)), -30.0)
    logits.scatter_(1, batch[2], batch[3])
    assert topk_cross_entropy(logits, batch[2], batch[3]) < topk_cross_entropy(logits.roll(1, -1), batch[2], batch[3])
    batches = AnswerBatches(answers, 1, 64, seed=0, pad_id=0)
    seen = [tuple(batches.next()[0][0].tolist()) for _ in range(4)]
    assert batches.epochs == 2 and len(set(seen)) == 2


def test_the_recipe_end_to_end_and_again_for_the_same_seed(target_dir, tmp_path):
    report = run_chat(recipe(tmp_path / "a", target_dir), log=lambda s: None)
    assert set(report["timings_s"]) >= {"answers", "draft", "early_exit", "calibration", "eval", "total_this_run"}
    assert json.loads((tmp_path / "a" / REPORT).read_text())["draft"]["parameters"] == report["draft"]["parameters"]
    weights = load_file(str(tmp_path / "a" / "draft" / "model.safetensors"))
    assert {t.dtype for t in weights.values()} == {torch.bfloat16}
    pair = specviz.load_pair(
        str(target_dir), str(tmp_path / "a" / "draft"), early_exit=str(tmp_path / "a" / "early_exit"), device="cpu"
    )
    assert pair.has_chat_template and pair.early_exit.shared_head and pair.heads.calibration is not None
    head_weights = load_file(str(tmp_path / "a" / "early_exit" / "early_exit.safetensors"))
    assert not any("lm_head" in k for k in head_weights)  # the target's own head, not a copy
    cal = report["calibration"]
    assert {"sigma_m", "constant_rms", "heldout_accuracy", "constant_accuracy", "beats_constant"} <= set(cal)
    assert report["eval"]["greedy_output_equals_ar"] is True and report["eval"]["prompts"] == len(EVAL_PROMPTS)
    for algo in ("sd", "eesd"):
        a = specviz.decode(pair, "ar", "def f", max_new_tokens=8, temperature=0, chat=True)
        b = specviz.decode(pair, algo, "def f", max_new_tokens=8, temperature=0, chat=True)
        assert a.output_ids == b.output_ids
    again = run_chat(
        recipe(tmp_path / "b", target_dir, cache_dir=str(tmp_path / "a" / "cache"), stages=("draft",)),
        log=lambda s: None,
    )
    assert again["answers"]["seconds"] is None  # read from the cache
    second = load_file(str(tmp_path / "b" / "draft" / "model.safetensors"))
    assert all(torch.equal(weights[k], second[k]) for k in weights)  # deterministic for a seed


def feature_settings(target_dir, tmp_path) -> dict:
    """The feature recipe at a tiny size: 24 prompts, a 64-token draft vocabulary, 4 steps."""
    return dict(
        target=str(target_dir),
        threads=1,
        cache_dir=str(tmp_path / "cache"),
        prompts=24,
        max_new_tokens=10,
        answer_batch=8,
        top_k=8,
        layers=(0, 1, 2),
        draft_vocab=64,
        intermediate=32,
        eval_new_tokens=6,
        ttt_steps=2,
        steps=4,
        batch=4,
        seq=64,
        save_every=2,
        log_every=2,
    )


def test_the_feature_recipe_end_to_end_resumes_and_loads(target_dir, tmp_path):
    """``python -m specviz train feature`` on the tiny chat target: answers with captured features in
    cached chunks, the draft vocabulary with its coverage curve, the head trained with the training-time
    test and saved in shards a pair loads (``load_pair(..., feature=DIR)``), held-out agreement per
    position; a second run reads every chunk from the cache and trains to the same weights."""
    from specviz.train.feature_pair import FeatureRecipe, run_feature

    settings = feature_settings(target_dir, tmp_path)
    first = run_feature(FeatureRecipe(out=str(tmp_path / "a"), **settings), log=lambda s: None)
    assert first["answers"]["answers"] > 0 and first["answers"]["chunks_made_this_run"] > 0
    assert first["vocab"]["size"] == 64 and 0 < first["vocab"]["coverage"] <= 1
    assert len(first["heldout"]["agreement_by_position"]) == 6
    decoded = first["decoded"]  # greedy sd with the head through specviz.decode on the hand-written questions
    assert decoded["prompts"] == len(EVAL_PROMPTS) and decoded["greedy_output_equals_ar"] is True
    assert decoded["tau"] >= 1 and decoded["gamma"] is None
    again = run_feature(FeatureRecipe(out=str(tmp_path / "b"), **settings), log=lambda s: None)
    assert again["answers"]["chunks_made_this_run"] == 0  # every chunk read from the cache
    pair = specviz.load_pair(str(target_dir), feature=str(tmp_path / "a"), device="cpu")
    ar = specviz.decode(pair, "ar", "What is 2 plus 2?", max_new_tokens=8, temperature=0, chat=True)
    run = specviz.decode(pair, "sd", "What is 2 plus 2?", max_new_tokens=8, temperature=0, chat=True)
    assert run.drafter["kind"] == "feature" and run.output_ids == ar.output_ids
    a = load_file(str(next((tmp_path / "a").glob("feature_head-00.safetensors"))))
    b = load_file(str(next((tmp_path / "b").glob("feature_head-00.safetensors"))))
    assert all(torch.equal(a[k], b[k]) for k in a)  # deterministic for a seed


def test_a_cut_off_feature_run_resumes_to_the_same_head_and_log(target_dir, tmp_path, monkeypatch):
    """Issue 33 point 3: a run cut off after its step-2 checkpoint continues where it stopped, to the same
    weights and the same logged losses (the smoothed loss travels in the checkpoint) as a run never cut."""
    from specviz.train import feature_train
    from specviz.train.feature_pair import FeatureRecipe, run_feature

    settings = {**feature_settings(target_dir, tmp_path), "steps": 6}
    straight = run_feature(FeatureRecipe(out=str(tmp_path / "a"), **settings), log=lambda s: None)
    real, calls = feature_train.batch_loss, []

    def cut(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:  # in step 4, after the checkpoint of step 2
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(feature_train, "batch_loss", cut)
    with pytest.raises(KeyboardInterrupt):
        run_feature(FeatureRecipe(out=str(tmp_path / "b"), **settings), log=lambda s: None)
    assert (tmp_path / "b" / feature_train.CHECKPOINT).is_file()
    monkeypatch.setattr(feature_train, "batch_loss", real)
    resumed = run_feature(FeatureRecipe(out=str(tmp_path / "b"), **settings), log=lambda s: None)
    logged = [
        [{k: v for k, v in h.items() if k != "elapsed_s"} for h in r["drafter"]["history"]] for r in (straight, resumed)
    ]
    assert logged[0] == logged[1] and len(logged[0]) == 3
    assert straight["heldout"] == resumed["heldout"] and not (tmp_path / "b" / feature_train.CHECKPOINT).exists()
    a = load_file(str(tmp_path / "a" / "feature_head-00.safetensors"))
    b = load_file(str(tmp_path / "b" / "feature_head-00.safetensors"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_feature_recipe_answers_its_sampled_share_once_at_each_temperature(target_dir, tmp_path):
    """``sampled_temperatures=(1.0, 0.7)``: the sampled share of the training prompts answered once at
    each temperature (each cached under its own key), besides every prompt's greedy answer."""
    from specviz.train.feature_pair import FeatureRecipe, run_feature

    settings = {**feature_settings(target_dir, tmp_path), "stages": ("answers",), "sampled_fraction": 0.5}
    one = run_feature(
        FeatureRecipe(out=str(tmp_path / "a"), **settings, sampled_temperatures=(1.0,)), log=lambda s: None
    )["answers"]
    two = run_feature(
        FeatureRecipe(out=str(tmp_path / "b"), **settings, sampled_temperatures=(1.0, 0.7)), log=lambda s: None
    )["answers"]
    share = round(one["train_prompts"] * 0.5)
    assert one["sampled_answers"] == share and two["sampled_answers"] == 2 * share
    assert two["greedy_answers"] == one["greedy_answers"] == one["train_prompts"]
    assert 0 < two["chunks_made_this_run"] < one["chunks_made_this_run"] * 2  # T = 1.0 and greedy from the cache


def test_the_feature_recipe_answers_in_its_answer_precision_each_cached_apart(target_dir, tmp_path, monkeypatch):
    """``answer_precision``: the target answers (and its features are captured) in that dtype, and the
    chunks are cached under a key that holds it, so a bfloat16 run never reads float32 answers; any
    other precision is refused before anything runs."""
    from specviz.train import feature_data
    from specviz.train.feature_pair import FeatureRecipe, run_feature

    seen, real = [], feature_data.answer_prompts

    def spy(model, *args, **kwargs):
        seen.append(next(model.parameters()).dtype)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(feature_data, "answer_prompts", spy)
    settings = {**feature_settings(target_dir, tmp_path), "stages": ("answers",), "sampled_temperatures": (1.0,)}
    made = {}
    for precision in ("float32", "bfloat16"):
        seen.clear()
        report = run_feature(
            FeatureRecipe(out=str(tmp_path / precision), **settings, answer_precision=precision), log=lambda s: None
        )
        made[precision] = report["answers"]["chunks_made_this_run"]
        assert set(seen) == {getattr(torch, precision)}
    assert made["bfloat16"] == made["float32"] > 0  # nothing read from the float32 run's cache
    with pytest.raises(ValueError, match="answer_precision must be bfloat16 or float32"):
        run_feature(FeatureRecipe(out=str(tmp_path / "x"), **settings, answer_precision="float16"), log=lambda s: None)


def test_the_recipe_command_line_reads_a_tuple_of_numbers_by_its_type(monkeypatch, capsys):
    """``--sampled-temperatures 1.0,0.7`` is read as floats, ``--layers 2,15,27`` as integers; a list
    with anything else is refused in one line naming the flag, and nothing runs."""
    import types

    from specviz.train.recipe_cli import recipe_main

    got = []
    fake = types.SimpleNamespace(run_feature=lambda cfg, log: got.append(cfg))
    monkeypatch.setattr("importlib.import_module", lambda name: fake)
    assert recipe_main("feature", ["--sampled-temperatures", "1.0,0.7", "--layers", "2,15,27"]) == 0
    assert got[0].sampled_temperatures == (1.0, 0.7) and got[0].layers == (2, 15, 27)
    for flag, bad in (("--layers", "2,1.5"), ("--sampled-temperatures", "1.0,warm")):
        assert recipe_main("feature", [flag, bad]) == 2
        assert f"{flag} {bad!r}: comma-separated numbers" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # an unknown question set: refused by the parser, nothing runs
        recipe_main("feature", ["--questions", "templates-4"])
    assert refused.value.code == 2 and "templates-1" in capsys.readouterr().err
    assert len(got) == 1


def test_a_feature_run_on_templates_2_reports_agreement_on_each_sets_held_out_questions(target_dir, tmp_path):
    """A head trained on another question set is compared with the shipped one on the held-out questions of
    ``templates-1`` (the shipped head's held-out set) and on the new ones apart: ``heldout.by_set``, each
    part an agreement over its own positions, together the whole held-out set's."""
    from specviz.train.feature_pair import FeatureRecipe, run_feature

    settings = {**feature_settings(target_dir, tmp_path), "prompts": 60, "heldout_percent": 50.0}
    report = run_feature(FeatureRecipe(out=str(tmp_path / "a"), questions="templates-2", **settings), log=print)
    parts = report["heldout"]["by_set"]
    assert set(parts) == {"templates-1", "the others"}
    assert sum(p["positions"] for p in parts.values()) == report["heldout"]["positions"] > 0
    assert all(len(p["agreement_by_position"]) == 6 for p in parts.values())
    one = run_feature(FeatureRecipe(out=str(tmp_path / "b"), questions="templates-1", **settings), log=lambda s: None)
    assert "by_set" not in one["heldout"]  # the shipped set: the whole held-out set is the comparison
