"""The recipe of the default pair's feature drafter (EAGLE-3 style, reduced draft vocabulary).

``python -m specviz train feature --out assets/smollm2/feature`` (``run_feature``) on
SmolLM2-135M-Instruct, in stages that each keep their result, so a run that is cut off continues
where it stopped:

1. ``answers``: the target's own answers to the template chat prompts (``chat_prompts``), greedy for
   every training prompt and sampled once at each of ``sampled_temperatures`` for a share of them (the
   target answering in ``answer_precision``), with its top-k law at every answer token and its hidden
   states at ``layers`` (captured during generation, no second pass), in cached chunks
   (``feature_data``). Held-out prompts are answered greedily, never trained on.
2. ``vocab``: the draft vocabulary, the ``draft_vocab`` target tokens most used in the training
   answers (EOS included), chosen from the coverage curve written to the report (EAGLE-3's ``d2t``;
   FR-Spec, arXiv 2502.14856).
3. ``drafter``: the feature head (``models.feature_head``) trained with EAGLE-3's training-time test
   (``ttt_steps`` unrolled steps, each step's loss weighted 0.8^k) against the target's top-k law
   restricted to the draft vocabulary; checkpointed every ``save_every`` steps (a cut-off run resumes
   from the last checkpoint).
4. ``eval``: held-out agreement per draft position (teacher-forced on the target's greedy answers), and
   greedy ``sd`` with the head through ``specviz.decode`` on ``EVAL_PROMPTS`` (``decoded``: tau, equal to ``ar``).

Everything is seeded; the report (settings, coverage, losses, agreement, timings) is
``out/feature_report.json`` next to the weights.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import torch

from .common import start_report
from .loop import torch_threads
from .recipes import FEATURE_STAGES as STAGES
from .recipes import FeatureRecipe

REPORT = "feature_report.json"


def _answers(cfg: FeatureRecipe, model, tokenizer, log) -> tuple[list, list, dict]:
    """Stage 1 (cached chunks): training answers (greedy, then a sampled share) and held-out ones."""
    from specviz.models.packaged import cache_root

    from .chat_prompts import prompt_set, split
    from .feature_data import answer_chunks

    if not all(t > 0 for t in cfg.sampled_temperatures):
        raise ValueError(
            f"sampled_temperatures must each be > 0 (greedy answers are made anyway): {cfg.sampled_temperatures}"
        )
    train, held = split(prompt_set(cfg.prompts, cfg.seed, questions=cfg.questions), cfg.heldout_percent)
    root = (Path(cfg.cache_dir) if cfg.cache_dir else cache_root()) / "feature-answers"
    args = (cfg.max_new_tokens, cfg.seed, cfg.answer_batch, cfg.top_k, tuple(cfg.layers), root)
    heldout, s_held, n_held = answer_chunks(model, tokenizer, held, 0.0, *args, log=log)
    greedy, s_greedy, n_greedy = answer_chunks(model, tokenizer, train, 0.0, *args, log=log)
    sampled_prompts = random.Random(cfg.seed + 5).sample(train, int(round(len(train) * cfg.sampled_fraction)))
    sampled, s_sampled, n_sampled = [], 0.0, 0
    for temperature in cfg.sampled_temperatures:
        made, seconds, chunks = answer_chunks(model, tokenizer, sampled_prompts, temperature, *args, log=log)
        sampled, s_sampled, n_sampled = sampled + made, s_sampled + seconds, n_sampled + chunks
    answers = greedy + sampled
    summary = {
        "train_prompts": len(train),
        "heldout_prompts": len(held),
        "answers": len(answers),
        "answer_tokens": sum(len(a.answer) for a in answers),
        "greedy_answers": len(greedy),
        "sampled_answers": len(sampled),
        "heldout_answer_tokens": sum(len(a.answer) for a in heldout),
        "seconds_this_run": round(s_held + s_greedy + s_sampled, 1),
        "chunks_made_this_run": n_held + n_greedy + n_sampled,  # the others were read from the cache
    }
    return answers, heldout, summary


def _answering(cfg: FeatureRecipe, source: str, target):
    """The target as it answers: ``target`` itself in float32, else a second copy in ``answer_precision``
    (bfloat16 answers twice as fast on this CPU; a head trained on float32 features agrees with the
    target as well on bfloat16 ones: 67.2% against 67.3% held out)."""
    from transformers import AutoModelForCausalLM

    if cfg.answer_precision not in ("bfloat16", "float32"):
        raise ValueError(f"answer_precision must be bfloat16 or float32, not {cfg.answer_precision!r}")
    if cfg.answer_precision == "float32":
        return target
    return AutoModelForCausalLM.from_pretrained(source, dtype=torch.bfloat16).eval()


def _decoded(cfg: FeatureRecipe, out: Path) -> dict:
    """Stage 4, what decoding sees: greedy ``sd`` at its defaults with the saved head through
    ``specviz.decode`` on ``EVAL_PROMPTS`` (hand-written, in no template's words), its tau and equality to
    ``ar``. The teacher-forced agreement above can promise more than this (docs/pairs.md)."""
    from .chat_prompts import EVAL_PROMPTS
    from .evaluate import measured_sd_report

    return measured_sd_report(
        cfg.target, None, EVAL_PROMPTS, gamma=None, max_new_tokens=cfg.eval_new_tokens, chat=True, feature=out
    )


def run_feature(cfg: FeatureRecipe, log=print) -> dict:
    """Run the stages of ``cfg``; returns the report also written to ``out/feature_report.json``."""
    with torch_threads(cfg.threads):
        return _run(cfg, log)


def _run(cfg: FeatureRecipe, log) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from specviz.models.packaged import convert_packaged, is_packaged

    unknown = set(cfg.stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {', '.join(STAGES)}")
    t_start = time.time()
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / REPORT
    report = start_report(cfg, report_path, cfg.threads)
    timings = report.setdefault("timings_s", {})

    def save_report() -> None:
        timings["total_this_run"] = round(time.time() - t_start, 1)
        report_path.write_text(json.dumps(report, indent=2, default=str) + "\n")

    source = str(convert_packaged(cfg.target, log=log)) if is_packaged(cfg.target) else cfg.target
    tokenizer = AutoTokenizer.from_pretrained(source)
    target = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    answers, heldout, summary = _answers(cfg, _answering(cfg, source, target), tokenizer, log)
    report["answers"] = summary
    if summary["chunks_made_this_run"]:
        timings["answers"] = summary["seconds_this_run"]
    save_report()
    from . import feature_train

    if "vocab" in cfg.stages or not (out / feature_train.VOCAB_FILE).is_file():
        t0 = time.time()
        report["vocab"] = feature_train.build_vocab(cfg, answers, tokenizer, out, log)
        timings["vocab"] = round(time.time() - t0, 1)
        save_report()
    if "drafter" in cfg.stages:
        t0 = time.time()
        report["drafter"] = feature_train.train_drafter(cfg, target, answers, heldout, out, log)
        timings["drafter"] = round(time.time() - t0, 1)
        save_report()
    if "eval" in cfg.stages:
        t0 = time.time()
        report["heldout"] = feature_train.evaluate(cfg, target, heldout, out, log)
        log(f"[eval] held-out agreement: {report['heldout']}")
        report["decoded"] = _decoded(cfg, out)
        timings["eval"] = round(time.time() - t0, 1)
        log(f"[eval] greedy sd through specviz.decode on EVAL_PROMPTS: {report['decoded']}")
    save_report()
    log(f"[done] report written to {report_path} ({timings['total_this_run'] / 60:.1f} min)")
    return report
