"""The whole recipe: corpus -> tokenizer -> target -> distilled draft -> early-exit head -> report.

Each stage writes its result under ``out`` (``target/``, ``draft/``, ``early_exit/``,
``bundled_pair.json``); a stage that is not run loads the previous result from there, so one stage
can be redone without the others. Everything is seeded: the corpus order, the tokenizer, model
initialisation (``torch.manual_seed(seed + stage)``), batch order and generated data.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from . import configs
from .common import STAGES, TrainConfig, encoded_streams, load_model, pick_device, save_tokenizer
from .corpus import build_corpus
from .data import MixedSampler, WindowSampler, sequential_windows
from .distill import build_generated_bank, init_draft_from_target, kl_to_teacher
from .evaluate import agreement_report, generate, hf_logits, measured_sd_report, perplexity
from .loop import torch_threads, train_loop
from .tokenizer import train_tokenizer

# open lines: a prompt ending in a space or a bare newline splits a token BPE merges (" x", "\\n    ")
SAMPLE_PROMPTS = ("def read_config(path", "import os\n", "class Stack(", "    def __init__(self", "for i in range(")
AGREEMENT_PROMPTS = (
    "def ",
    "import ",
    "class Foo:\n    def ",
    "if __name__ == ",
    "    return ",
    "for ",
    "try:\n    ",
    "@property\n    def ",
)


def _save_model(model, tokenizer, path: Path, meta: dict) -> None:
    """A model directory in float32 (the pair is trained in float32), in files under the size a Space
    takes in plain git (``models.shards``); ``tokenizer``: None for the draft, which reads the target's
    one copy (``load_pair``)."""
    from specviz.models.shards import save_model_dir

    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    model = model.to("cpu", torch.float32)
    model.generation_config.do_sample = False
    save_model_dir(model, path)
    if tokenizer is not None:
        save_tokenizer(tokenizer, path)
    (path / "specviz_train.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")


def _prompt_ids(tokenizer, texts, device) -> torch.Tensor:
    """Equal-length prompts: each text's ids left-truncated/cut to the shortest length."""
    ids = [tokenizer(t, add_special_tokens=False).input_ids for t in texts]
    n = min(len(i) for i in ids)
    return torch.tensor([i[:n] for i in ids], device=device)


def run(cfg: TrainConfig, log=print) -> dict:
    """Run the stages of ``cfg``; returns the report also written to ``out/bundled_pair.json``."""
    with torch_threads(cfg.threads):
        return _run(cfg, log)


def _run(cfg: TrainConfig, log) -> dict:
    from transformers import AutoTokenizer, LlamaForCausalLM

    t_start = time.time()
    device = pick_device(cfg.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    unknown = set(cfg.stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; choose from {', '.join(STAGES)}")
    report_path = out / "bundled_pair.json"
    report: dict = json.loads(report_path.read_text()) if report_path.is_file() else {}
    report["config"] = {k: v for k, v in asdict(cfg).items()}
    report["environment"] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "device": str(device),
        "threads": cfg.threads,
        "platform": platform.platform(),
    }

    # corpus and tokenizer
    corpus = build_corpus(max_files=cfg.max_files, heldout_percent=cfg.heldout_percent, include_tests=cfg.include_tests)
    report["corpus"] = corpus.describe()
    log(
        f"[corpus] {len(corpus.train_files)} training files, {len(corpus.heldout_files)} held-out files "
        f"from {corpus.root} (sha256 {corpus.sha256[:12]})"
    )
    if "tokenizer" in cfg.stages:
        t0 = time.time()
        tokenizer = train_tokenizer(corpus.train_texts, cfg.vocab_size)
        log(f"[tokenizer] byte-level BPE, vocab {len(tokenizer)}, trained in {time.time() - t0:.1f}s")
        save_tokenizer(tokenizer, out / "target")  # the pair's one copy; the target stage writes it again
    else:
        src = out / "tokenizer" if (out / "tokenizer").is_dir() else out / "target"  # out/tokenizer: older runs
        tokenizer = AutoTokenizer.from_pretrained(src)
    t0 = time.time()
    train_stream, heldout_stream = encoded_streams(tokenizer, corpus, cfg.cache_dir)
    report["corpus"].update(train_tokens=int(len(train_stream)), heldout_tokens=int(len(heldout_stream)))
    log(
        f"[tokenizer] {len(train_stream)} training tokens, {len(heldout_stream)} held-out tokens "
        f"({time.time() - t0:.1f}s)"
    )
    vocab = len(tokenizer)
    eos = tokenizer.eos_token_id
    eval_windows = sequential_windows(heldout_stream, cfg.seq_len, cfg.eval_windows).to(device)
    timings = report.setdefault("timings_s", {})
    stage_meta = {"corpus": report["corpus"], "seed": cfg.seed, "recipe": "python -m specviz.train (specviz/train)"}

    def fit(name: str, model, sampler, loss_fn, steps: int, lr: float, **eval_kw) -> dict:
        """Train ``model`` in place (the shared loop), record the stage's time and summary, leave it in eval mode."""
        model.train()
        summary = train_loop(
            model.parameters(),
            lambda _step: sampler.next(),
            loss_fn,
            steps,
            lr,
            name,
            log_every=cfg.log_every,
            log=log,
            **eval_kw,
        )
        model.eval()
        timings[name] = summary["seconds"]
        report[f"{name}_training"] = {k: v for k, v in summary.items() if k != "history"}
        return summary

    # target
    if "target" in cfg.stages:
        torch.manual_seed(cfg.seed + 1)
        target = LlamaForCausalLM(configs.llama_config(cfg.target_size, vocab, eos)).to(device)
        n_params = configs.count_parameters(target)
        log(
            f"[target] {cfg.target_size}: {n_params / 1e6:.2f}M parameters, {cfg.target_steps} steps of "
            f"{cfg.batch_size}x{cfg.seq_len} tokens on {device}"
        )
        sampler = WindowSampler(train_stream, cfg.seq_len, cfg.batch_size, cfg.seed + 11)

        def target_loss(batch):
            batch = batch.to(device)
            return _ce(target(input_ids=batch[:, :-1]).logits, batch[:, 1:])

        summary = fit(
            "target",
            target,
            sampler,
            target_loss,
            cfg.target_steps,
            cfg.target_lr,
            eval_fn=lambda: perplexity(hf_logits(target), eval_windows[:8]),
            eval_every=300,
        )
        _save_model(
            target,
            tokenizer,
            out / "target",
            {**stage_meta, "role": "target", "training": summary, "size": configs.SIZES[cfg.target_size].as_dict()},
        )
        target.to(device)
        log(f"[target] saved to {out / 'target'}")
    else:
        target = load_model(out / "target", device)
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)

    bank = None
    need_bank = (
        ("draft" in cfg.stages or "early_exit" in cfg.stages) and cfg.generated_fraction > 0 and cfg.gen_sequences > 0
    )
    if need_bank:
        t0 = time.time()
        bank = build_generated_bank(
            target,
            train_stream,
            cfg.gen_sequences,
            cfg.gen_prompt_len,
            cfg.gen_new_tokens,
            cfg.gen_greedy_fraction,
            cfg.gen_temperature,
            cfg.seed + 23,
            batch_size=64,
            log=log,
        ).cpu()
        timings["generate"] = round(time.time() - t0, 1)
        log(f"[generate] {len(bank)} target continuations of {cfg.gen_new_tokens} tokens in {timings['generate']}s")

    # draft
    if "draft" in cfg.stages:
        torch.manual_seed(cfg.seed + 2)
        draft = LlamaForCausalLM(configs.llama_config(cfg.draft_size, vocab, eos)).to(device)
        copied = init_draft_from_target(draft, target)
        n_params = configs.count_parameters(draft)
        log(
            f"[draft] {cfg.draft_size}: {n_params / 1e6:.2f}M parameters, initialised from the target's "
            f"{', '.join(copied) or 'nothing'}; {cfg.draft_steps} distillation steps"
        )
        sampler = MixedSampler(
            WindowSampler(train_stream, cfg.seq_len, cfg.batch_size, cfg.seed + 12),
            bank,
            cfg.generated_fraction,
            cfg.seed + 13,
        )

        def draft_loss(batch):
            batch = batch.to(device)
            x = batch[:, :-1]
            with torch.no_grad():
                teacher = target(input_ids=x).logits
            student = draft(input_ids=x).logits
            loss = kl_to_teacher(student, teacher)
            if cfg.draft_ce_weight:
                loss = loss + cfg.draft_ce_weight * _ce(student, batch[:, 1:])
            return loss

        summary = fit("draft", draft, sampler, draft_loss, cfg.draft_steps, cfg.draft_lr)
        report["draft_init"] = copied
        _save_model(
            draft,
            None,
            out / "draft",
            {
                **stage_meta,
                "role": "draft",
                "distilled_from": "../target",
                "training": summary,
                "init": copied,
                "size": configs.SIZES[cfg.draft_size].as_dict(),
            },
        )
        draft.to(device)
        log(f"[draft] saved to {out / 'draft'}")
    elif (out / "draft" / "config.json").is_file():
        draft = load_model(out / "draft", device)
    else:
        draft = None

    # early-exit head
    from specviz.models.early_exit import load_early_exit, save_early_exit

    from .early_exit import train_early_exit

    if "early_exit" in cfg.stages:
        torch.manual_seed(cfg.seed + 3)
        sampler = MixedSampler(
            WindowSampler(train_stream, cfg.seq_len, cfg.batch_size, cfg.seed + 14),
            bank,
            cfg.generated_fraction,
            cfg.seed + 15,
        )
        head, summary = train_early_exit(
            target, cfg.exit_layer, sampler, cfg.ee_steps, cfg.ee_lr, device, log=log, log_every=cfg.log_every
        )
        timings["early_exit"] = summary["seconds"]
        report["early_exit_training"] = {k: v for k, v in summary.items() if k != "history"}
        save_early_exit(
            head,
            out / "early_exit",
            base="../target",
            extra={
                "training": report["early_exit_training"],
                "loss": "KL(target || head) on corpus windows and target continuations",
                "seed": cfg.seed,
            },
        )
        if cfg.calibration_steps > 0:
            from .calibration import save_with_head, train_calibration

            cal, cal_report = train_calibration(
                target,
                head,
                train_stream,
                heldout_stream,
                steps=cfg.calibration_steps,
                sequences=cfg.calibration_sequences,
                seed=cfg.seed + 41,
                device=device,
                log=log,
            )
            save_with_head(cal, out / "early_exit", cal_report)
            report["calibration"] = cal_report
            log(f"[calibration] {cal_report}")
        log(f"[early_exit] saved to {out / 'early_exit'}")
    elif (out / "early_exit" / "early_exit.json").is_file():
        head = load_early_exit(out / "early_exit", target)
    else:
        head = None

    # evaluation
    if "eval" in cfg.stages:
        t0 = time.time()
        ev: dict = {}
        ev["target"] = perplexity(hf_logits(target), eval_windows)
        prompts = _prompt_ids(tokenizer, AGREEMENT_PROMPTS, device)
        if draft is not None:
            ev["draft"] = perplexity(hf_logits(draft), eval_windows)
            ev["draft"].update(
                agreement_report(target, hf_logits(draft), eval_windows, prompts, cfg.eval_new_tokens, gammas=(2, 4, 6))
            )
        if head is not None:
            ev["early_exit"] = perplexity(head.logits_for, eval_windows)
            ev["early_exit"].update(
                agreement_report(target, head.logits_for, eval_windows, prompts, cfg.eval_new_tokens, gammas=(2, 4, 6))
            )
        if draft is not None and cfg.measure_decode and (out / "draft" / "config.json").is_file():
            try:
                ev["decode_sd_gamma4"] = measured_sd_report(out / "target", out / "draft")
            except Exception as exc:  # noqa: BLE001 - the decoder is optional for training
                ev["decode_sd_gamma4"] = {"error": f"{type(exc).__name__}: {exc}"}
            log(
                f"[eval] specviz.decode greedy sd gamma 4 on code prompts: "
                f"{ {k: v for k, v in ev['decode_sd_gamma4'].items() if k != 'per_prompt'} }"
            )
        ev["parameters"] = {"target": configs.count_parameters(target)}
        if draft is not None:
            ev["parameters"]["draft"] = configs.count_parameters(draft)
        if head is not None:
            ev["parameters"]["early_exit_head"] = sum(p.numel() for p in head.parameters())
        gen = torch.Generator(device="cpu").manual_seed(cfg.seed + 31)
        samples = {}
        for p in SAMPLE_PROMPTS:
            ids = torch.tensor([tokenizer(p, add_special_tokens=False).input_ids], device=device)
            samples[f"T=0.8 | {p}"] = tokenizer.decode(generate(target.cpu(), ids.cpu(), 64, 0.8, generator=gen)[0])
            samples[f"greedy | {p}"] = tokenizer.decode(generate(target.cpu(), ids.cpu(), 64, 0.0)[0])
            target.to(device)
        ev["samples"] = samples
        timings["eval"] = round(time.time() - t0, 1)
        report["eval"] = ev
        for k in ("target", "draft", "early_exit"):
            if k in ev:
                log(f"[eval] {k}: " + json.dumps({kk: vv for kk, vv in ev[k].items()}))
        for k, v in samples.items():
            log(f"[sample] {k!r} -> {v!r}")
    timings["total_this_run"] = round(time.time() - t_start, 1)
    report_path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    log(f"[done] report written to {report_path} ({timings['total_this_run'] / 60:.1f} min)")
    return report


def _ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    import torch.nn.functional as F

    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
