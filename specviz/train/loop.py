"""One training loop for every stage: AdamW, linear warm-up then cosine decay, progress lines."""

from __future__ import annotations

import math
import sys
import time
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator

import torch


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` (0: left as they are) inside the block, restored after."""
    before = torch.get_num_threads()
    if n > 0:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cosine_lr(step: int, total: int, peak: float, warmup: int, floor: float = 0.1) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def train_loop(
    params: Iterable[torch.nn.Parameter],
    batch_fn: Callable[[int], torch.Tensor],
    loss_fn: Callable[[torch.Tensor], torch.Tensor],
    steps: int,
    lr: float,
    name: str,
    warmup: int | None = None,
    weight_decay: float = 0.01,
    grad_clip: float = 1.0,
    log_every: int = 25,
    eval_fn: Callable[[], dict] | None = None,
    eval_every: int = 0,
    log=print,
    progress: bool = False,
    count_tokens: Callable[[object], int] | None = None,
) -> dict:
    """Run ``steps`` optimiser steps; ``loss_fn(batch)`` returns a scalar loss.

    Prints ``[name] step i/n loss lr tok/s elapsed eta`` every ``log_every`` steps, or with ``progress``
    draws a progress bar (stderr) with the loss and learning rate instead. Returns a summary
    with the final smoothed loss, the tokens seen and the wall time. ``count_tokens(batch)`` counts
    the scored tokens of a batch (default: a ``[B, L]`` tensor of ids scores ``B * (L - 1)``).
    """
    params = [p for p in params if p.requires_grad]
    opt = _adamw(params, lr, weight_decay)
    warmup = warmup if warmup is not None else max(1, min(200, steps // 20))
    t0 = time.time()
    tokens = 0
    smooth = None
    history = []
    bar = _progress_bar(steps, name) if progress else None
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = cosine_lr(step, steps, lr, warmup)
        batch = batch_fn(step)
        value = _optimise(opt, params, loss_fn(batch), grad_clip)
        tokens += count_tokens(batch) if count_tokens else batch.shape[0] * (batch.shape[1] - 1)
        smooth = value if smooth is None else 0.95 * smooth + 0.05 * value
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{smooth:.4f}", lr=f"{opt.param_groups[0]['lr']:.1e}", refresh=False)
        if (step + 1) % log_every == 0 or step == 0 or step + 1 == steps:
            elapsed = time.time() - t0
            history.append({"step": step + 1, "loss": smooth, "elapsed_s": round(elapsed, 1)})
            if bar is None:
                log(_progress_line(name, step, steps, value, smooth, opt.param_groups[0]["lr"], tokens, elapsed))
                sys.stdout.flush()
        if eval_fn is not None and eval_every and (step + 1) % eval_every == 0 and step + 1 != steps:
            log(f"[{name}] eval at step {step + 1}: {eval_fn()}")
    if bar is not None:
        bar.close()
    return {
        "steps": steps,
        "final_loss": smooth,
        "tokens": tokens,
        "seconds": round(time.time() - t0, 1),
        "history": history,
    }


def _optimise(
    opt: torch.optim.Optimizer, params: list[torch.nn.Parameter], loss: torch.Tensor, grad_clip: float
) -> float:
    """One optimiser step on ``loss`` (gradients clipped to ``grad_clip`` unless 0); the loss's value."""
    opt.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(params, grad_clip)
    opt.step()
    return float(loss.detach())


def _adamw(params: list[torch.nn.Parameter], lr: float, weight_decay: float) -> torch.optim.AdamW:
    """AdamW (betas 0.9 / 0.95) with weight decay on the matrices only (not on biases and norms)."""
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
        eps=1e-8,
    )


def _progress_bar(steps: int, name: str):
    """A progress bar on stderr (``train_loop``'s ``progress``)."""
    from tqdm.auto import tqdm

    return tqdm(total=steps, desc=name, unit="step", file=sys.stderr, dynamic_ncols=True)


def _progress_line(
    name: str, step: int, steps: int, value: float, smooth: float, lr: float, tokens: int, elapsed: float
):
    """``[name] step i/n loss lr tok/s elapsed eta`` after ``step`` (0-based)."""
    eta = elapsed / (step + 1) * (steps - step - 1)
    return (
        f"[{name}] step {step + 1}/{steps} loss {value:.4f} (avg {smooth:.4f}) "
        f"lr {lr:.2e} {tokens / max(elapsed, 1e-9):.0f} tok/s "
        f"elapsed {elapsed / 60:.1f} min eta {eta / 60:.1f} min"
    )
