"""Training an EESD early-exit head by self-distillation, the trunk frozen (arXiv 2406.03853, sections 3.1-3.2).

``train_early_exit`` is the pipeline's ``early_exit`` stage and the body of
``python -m specviz train early-exit --target DIR --exit-layer N [--text FILE] [--out DIR]``, which
trains a head for any Hugging Face causal LM directory: on the Python standard library's source by
default (or on a text file), mixed half and half with the target's own continuations (the LLM-QAT
hybrid greedy-then-sampled text the paper distils on). The loss is KL(target || head) per position
(the target's logits are at hand, so the head learns its whole next-token law, not only the sampled
token). Section 3.1 trains the exit layer, its norm and W; so do we (the trunk and the target stay frozen).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import torch

from specviz.models.early_exit import EarlyExitHead, layout, save_early_exit

from .common import TrainConfig, encoded_streams, load_model, pick_device
from .data import MixedSampler, WindowSampler, sequential_windows
from .distill import build_generated_bank, kl_to_teacher
from .evaluate import perplexity
from .loop import torch_threads, train_loop


def distill_loss(target, head: EarlyExitHead, device):
    """``batch -> KL(target || head)`` on ``batch[:, :-1]``, reusing the target's ``hidden_states[N]``."""

    def loss(batch: torch.Tensor) -> torch.Tensor:
        x = batch.to(device)[:, :-1]
        with torch.no_grad():
            out = target(input_ids=x, output_hidden_states=True)
        pos = torch.arange(x.shape[1], device=device).unsqueeze(0)
        return kl_to_teacher(head(out.hidden_states[head.exit_layer], pos), out.logits)

    return loss


@torch.no_grad()
def heldout_report(target, head: EarlyExitHead, windows: torch.Tensor, device) -> dict:
    """The head's held-out next-token loss / perplexity and its distillation loss KL(target || head)."""
    loss = distill_loss(target, head, device)
    kl = sum(float(loss(windows[i : i + 8])) * len(windows[i : i + 8]) for i in range(0, len(windows), 8)) / len(
        windows
    )
    return {**perplexity(head.logits_for, windows), "kl_to_target": round(kl, 5)}


def train_early_exit(
    target,
    exit_layer: int,
    sampler,
    steps: int,
    lr: float,
    device,
    log=print,
    log_every: int = 25,
    progress: bool = False,
) -> tuple[EarlyExitHead, dict]:
    """A fresh head after layer ``exit_layer`` of ``target``, trained for ``steps`` AdamW steps on
    ``sampler.next()`` batches; returns the head (eval mode) and the loop's summary."""
    for p in target.parameters():
        p.requires_grad_(False)
    target.eval()
    head = EarlyExitHead(target, exit_layer).to(device)
    n_params = sum(p.numel() for p in head.parameters())
    log(
        f"[early_exit] exit after layer {exit_layer} of {len(getattr(*layout(target)[:2]))}: "
        f"{n_params / 1e6:.2f}M trainable parameters (trunk frozen); {steps} steps"
    )
    head.train()
    summary = train_loop(
        head.parameters(),
        lambda _step: sampler.next(),
        distill_loss(target, head, device),
        steps,
        lr,
        "early_exit",
        log_every=log_every,
        log=log,
        progress=progress,
    )
    head.eval()
    return head, summary


def text_streams(tokenizer, path: str, heldout_percent: float):
    """The token stream of a text file, split into training and held-out parts (the last
    ``heldout_percent`` of the tokens are held out)."""
    import numpy as np

    from .tokenizer import encode_stream

    stream = encode_stream(tokenizer, [Path(path).read_text(encoding="utf-8")])
    cut = max(2, int(len(stream) * (1 - heldout_percent / 100)))
    return stream[:cut], np.asarray(stream[cut:])


def default_out(target_dir: str | Path) -> Path:
    """Next to the target: ``<parent>/early_exit`` for the bundled layout (a directory named
    ``target``), else ``<target>-early-exit``."""
    target_dir = Path(target_dir).resolve()
    name = "early_exit" if target_dir.name == "target" else f"{target_dir.name}-early-exit"
    return target_dir.parent / name


def run(args: argparse.Namespace, log=None) -> dict:
    """Train and save one head; returns the summary written into ``early_exit.json``."""
    from transformers import AutoTokenizer

    log = log or (lambda s: print(s, file=sys.stderr, flush=True))
    cfg = TrainConfig(**{f.name: getattr(args, f.name) for f in fields(TrainConfig) if hasattr(args, f.name)})
    steps = args.steps if args.steps is not None else cfg.ee_steps
    lr = args.lr if args.lr is not None else cfg.ee_lr
    with torch_threads(cfg.threads):
        device = pick_device(cfg.device)
        target_dir = Path(args.target)
        target = load_model(target_dir, device)
        tokenizer = AutoTokenizer.from_pretrained(target_dir)
        n_layers = len(getattr(*layout(target)[:2]))
        exit_layer = args.exit_layer if args.exit_layer is not None else max(1, round(0.075 * n_layers))
        train_stream, heldout_stream, source = _streams(args, cfg, tokenizer)
        held = heldout_stream if len(heldout_stream) > 2 else train_stream[-cfg.seq_len * 4 :]
        eval_windows = sequential_windows(held, cfg.seq_len, cfg.eval_windows).to(device)
        sampler = _sampler(cfg, target, train_stream, log)
        torch.manual_seed(cfg.seed + 3)
        before = heldout_report(target, EarlyExitHead(target, exit_layer).to(device).eval(), eval_windows, device)
        t0 = time.time()
        head, summary = train_early_exit(
            target,
            exit_layer,
            sampler,
            steps,
            lr,
            device,
            log=log,
            log_every=cfg.log_every,
            progress=not args.no_progress,
        )
        after = heldout_report(target, head, eval_windows, device)
        out = Path(args.out) if args.out else default_out(target_dir)
        meta = {
            "training": {k: v for k, v in summary.items() if k != "history"},
            "loss": "KL(target || head) on corpus windows and target continuations",
            "seed": cfg.seed,
            "data": source,
            "heldout_before": before,
            "heldout_after": after,
            "recipe": "python -m specviz train early-exit",
        }
        save_early_exit(head, out, base=os.path.relpath(target_dir.resolve(), out.resolve()), extra=meta)
        if cfg.calibration_steps > 0:
            meta["calibration"] = _calibrate(
                cfg, target, head, (train_stream, heldout_stream), device, out, log, not args.no_progress
            )
        log(
            f"[early_exit] held-out KL to the target {before['kl_to_target']} -> {after['kl_to_target']}, "
            f"loss {before['loss']} -> {after['loss']} in {time.time() - t0:.1f}s; saved to {out}"
        )
        return meta


def _streams(args: argparse.Namespace, cfg: TrainConfig, tokenizer) -> tuple[Any, Any, dict[str, Any]]:
    """The training and held-out token streams, from ``--text`` or the recipe's corpus, and where they came from."""
    from .corpus import build_corpus

    if args.text:
        train_stream, heldout_stream = text_streams(tokenizer, args.text, cfg.heldout_percent)
        return (
            train_stream,
            heldout_stream,
            {"text_file": str(Path(args.text).resolve()), "train_tokens": int(len(train_stream))},
        )
    corpus = build_corpus(max_files=cfg.max_files, heldout_percent=cfg.heldout_percent, include_tests=cfg.include_tests)
    train_stream, heldout_stream = encoded_streams(tokenizer, corpus, cfg.cache_dir)
    return train_stream, heldout_stream, {**corpus.describe(), "train_tokens": int(len(train_stream))}


def _sampler(cfg: TrainConfig, target, train_stream, log) -> MixedSampler:
    """The pipeline's early-exit batches: corpus windows mixed with the target's own continuations (same seeds)."""
    bank = None
    if cfg.generated_fraction > 0 and cfg.gen_sequences > 0:
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
    return MixedSampler(
        WindowSampler(train_stream, cfg.seq_len, cfg.batch_size, cfg.seed + 14),
        bank,
        cfg.generated_fraction,
        cfg.seed + 15,
    )


def _calibrate(
    cfg: TrainConfig, target, head, streams: tuple[Any, Any], device, out: Path, log, progress: bool
) -> dict:
    """Cali-TS's calibration head for ``head``, trained and saved beside it; its report."""
    from .calibration import save_with_head, train_calibration

    cal, report = train_calibration(
        target,
        head,
        *streams,
        steps=cfg.calibration_steps,
        sequences=cfg.calibration_sequences,
        seed=cfg.seed + 41,
        device=device,
        log=log,
        progress=progress,
    )
    save_with_head(cal, out, report)
    log(
        f"[calibration] sigma_M {report['sigma_m']}, held-out accuracy {report['heldout_accuracy']} "
        f"(label rate {report['heldout_label_rate']})"
    )
    return report
