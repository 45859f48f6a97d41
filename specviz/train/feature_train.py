"""Training the feature drafter: its draft vocabulary, EAGLE-3's training-time test, held-out agreement.

* ``build_vocab``: the ``draft_vocab`` target tokens most frequent in the training answers (EOS and
  the chat end-of-turn token always in), and the coverage curve it was chosen from.
* ``train_drafter``: ``FeatureHead.unrolled`` over batches of answers with their captured features;
  step ``k``'s loss (weight 0.8^k, EAGLE-3's) is the cross-entropy of the draft's law over the draft
  vocabulary against the target's recorded top-k law restricted to it and renormalised; rows whose
  target argmax lies outside the vocabulary are left out (arXiv 2503.01840; FR-Spec 2502.14856).
  A checkpoint every ``save_every`` steps (model, optimiser, data order) lets a cut-off run resume.
* ``evaluate``: teacher-forced greedy agreement per draft position on the held-out greedy answers,
  and the greedy chain tau it implies for each gamma: at a row where the first ``r`` unrolled steps
  all equal the target's argmax, a chain drafted there has exactly ``r`` accepted tokens, since its
  inputs then equal the teacher-forced ones.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import torch
import torch.nn.functional as F

from specviz.models.feature_head import FeatureHead, FeatureHeadConfig, load_feature_head

from .chat_distill import AnswerBatches
from .loop import cosine_lr

VOCAB_FILE = "draft_vocab.json"
CHECKPOINT = "checkpoint.pt"
SIZES = (1024, 2048, 4096, 6144, 8192, 12288, 16384, 24576, 32768)


def build_vocab(cfg, answers: list, tokenizer, out: Path, log) -> dict:
    """Stage 2: the draft vocabulary and the coverage curve (share of training answer tokens inside the
    top-N), written to ``out/draft_vocab.json``."""
    counts = Counter(t for a in answers for t in a.answer)
    total = sum(counts.values())
    ranked = [t for t, _ in counts.most_common()]
    curve = {n: round(sum(counts[t] for t in ranked[:n]) / total, 5) for n in SIZES if n <= tokenizer.vocab_size}
    forced = {tokenizer.eos_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")} - {None}
    chosen = set(ranked[: cfg.draft_vocab - len(forced)]) | forced
    rest = iter(t for t in ranked[cfg.draft_vocab - len(forced) :] if t not in chosen)
    while len(chosen) < cfg.draft_vocab:  # forced ids already among the top: fill up to N
        chosen.add(next(rest, None) or next(t for t in range(tokenizer.vocab_size) if t not in chosen))
    vocab = sorted(chosen)
    covered = round(sum(counts[t] for t in vocab) / total, 5)
    log(f"[vocab] {cfg.draft_vocab} tokens cover {covered:.2%} of {total} training answer tokens; curve {curve}")
    (out / VOCAB_FILE).write_text(json.dumps({"vocab": vocab}) + "\n")
    return {
        "size": cfg.draft_vocab,
        "coverage": covered,
        "answer_tokens": total,
        "distinct_tokens": len(counts),
        "coverage_curve": curve,
        "forced": sorted(forced),
    }


def read_vocab(out: Path) -> torch.Tensor:
    return torch.tensor(json.loads((out / VOCAB_FILE).read_text())["vocab"])


class FeatureBatches(AnswerBatches):
    """``AnswerBatches``' seeded epochs over answers with captured features (the order is part of a
    checkpoint), each batch ``collate``d: ``ids [B, L]``, the features each row reads ``[B, L, F]`` (row 0
    zeros), the answer index each row predicts at step 0 (``-1``: none) and the answers."""

    def __init__(self, answers: list, batch: int, seq: int, seed: int):
        super().__init__([a for a in answers if a.features is not None], batch, seq, seed, 0)

    def batch(self, answers: list):
        return collate(answers, self.max_len)


def collate(answers: list, seq: int):
    """``(ids, features, answer_at, answers)``: ``answer_at[b, j]`` is the answer index of token ``j + 1``
    of row ``b`` (what row ``j`` predicts at step 0), ``-1`` where that is no answer token."""
    width = min(seq, max(len(a.ids) for a in answers))
    dim = answers[0].features.shape[-1]
    ids = torch.zeros(len(answers), width, dtype=torch.long)
    feats = torch.zeros(len(answers), width, dim)
    at = torch.full((len(answers), width), -1, dtype=torch.long)
    for b, a in enumerate(answers):
        s = a.ids[:width]
        ids[b, : len(s)] = torch.tensor(s)
        f = a.features[: len(s) - 1].float()
        feats[b, 1 : 1 + len(f)] = f
        p = len(a.prompt_ids)
        for j in range(max(0, p - 1), len(s) - 1):
            at[b, j] = j + 1 - p
    return ids, feats, at, answers


def _targets(answers: list, at: torch.Tensor, t2d: torch.Tensor):
    """Per row with an answer index: the target's top-k law mapped to draft ids (``-1`` outside) and its
    recorded log-probabilities, ``[B, L, k]`` each; rows without an index get ``-1``."""
    k = answers[0].top_ids.shape[-1]
    ids = torch.full((*at.shape, k), -1, dtype=torch.long)
    logp = torch.zeros((*at.shape, k))
    for b, a in enumerate(answers):
        rows = (at[b] >= 0).nonzero().flatten()
        if len(rows):
            idx = at[b, rows]
            ids[b, rows] = t2d[a.top_ids[idx].long()]
            logp[b, rows] = a.top_logp[idx].float()
    return ids, logp


def step_loss(logits: torch.Tensor, ids: torch.Tensor, logp: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Soft cross-entropy against the target's top-k law restricted to the draft vocabulary
    (renormalised), over rows whose target argmax is in it; ``(mean loss, rows)``."""
    valid = ids[..., 0] >= 0
    if not bool(valid.any()):
        return logits.sum() * 0.0, 0
    lg, tid, tlp = logits[valid], ids[valid], logp[valid]
    inside = tid >= 0
    w = torch.softmax(tlp.masked_fill(~inside, float("-inf")), -1)
    logq = F.log_softmax(lg.float(), -1).gather(-1, tid.clamp(min=0))
    return -(w * logq.masked_fill(~inside, 0.0)).sum(-1).mean(), int(valid.sum())


def _shift(x: torch.Tensor, k: int, fill) -> torch.Tensor:
    """``x`` moved ``k`` rows left along dim 1 (row ``j`` holds row ``j + k``), padded with ``fill``."""
    if k == 0:
        return x
    pad = torch.full_like(x[:, :k], fill)
    return torch.cat([x[:, k:], pad], 1)


def batch_loss(head: FeatureHead, embed: torch.Tensor, batch, t2d: torch.Tensor, steps: int):
    """The TTT loss of one batch and each step's loss and row count."""
    ids, feats, at, answers = batch
    tid, tlp = _targets(answers, at, t2d)
    outs = head.unrolled(feats, ids, embed, steps)
    total, parts = 0.0, []
    for k, h in enumerate(outs):
        sid, slp = _shift(tid, k, -1), _shift(tlp, k, 0.0)
        rows = sid[..., 0] >= 0
        loss, n = step_loss(head.logits(h[rows]) if bool(rows.any()) else h[:0, 0, :1], sid[rows], slp[rows])
        total = total + (0.8**k) * loss
        parts.append((round(float(loss.detach()), 4), n))
    return total, parts


def _autocast(precision: str):
    """CPU autocast to ``precision`` for the training step (bfloat16 matmuls run about 2.7x faster on
    this project's AVX-512-BF16 CPU; the losses are taken in float32), or nothing for float32."""
    import contextlib

    if precision == "float32":
        return contextlib.nullcontext()
    if precision != "bfloat16":
        raise ValueError(f"precision must be bfloat16 or float32, not {precision!r}")
    return torch.autocast("cpu", dtype=torch.bfloat16)


def _new_head(cfg, target, vocab: torch.Tensor) -> tuple[FeatureHead, FeatureHeadConfig]:
    """The head over the draft vocabulary ``vocab``, seeded, its output rows and final norm starting as the
    target's own (tied embedding) for those tokens."""
    hcfg = FeatureHeadConfig.for_target(target.config, tuple(cfg.layers), len(vocab), cfg.intermediate)
    torch.manual_seed(cfg.seed + 31)
    head = FeatureHead(hcfg, vocab)
    with torch.no_grad():
        head.head.weight.copy_(target.get_output_embeddings().weight[vocab])
        head.norm_out.copy_(target.model.norm.weight)
    return head, hcfg


class _Progress:
    """What a cut-off run resumes from: the step reached, the logged history, the seconds spent and the
    smoothed loss (so a resumed run logs what the run it continues would have)."""

    def __init__(self) -> None:
        self.step, self.history, self.seconds, self.smooth = 0, [], 0.0, None

    def save(self, ckpt: Path, head: FeatureHead, opt, batches: FeatureBatches) -> None:
        """The checkpoint, written whole or not at all (a temporary file renamed)."""
        state = {
            "head": head.state_dict(),
            "opt": opt.state_dict(),
            "rng": batches.rng.getstate(),
            "order": batches.order,
            "epochs": batches.epochs,
            "step": self.step,
            "history": self.history,
            "seconds": self.seconds,
            "smooth": self.smooth,
        }
        tmp = ckpt.with_suffix(".tmp")
        torch.save(state, tmp)
        tmp.replace(ckpt)

    def load(self, ckpt: Path, head: FeatureHead, opt, batches: FeatureBatches) -> None:
        """Everything ``save`` wrote, back into the head, the optimiser and the batches."""
        state = torch.load(ckpt, weights_only=False)
        head.load_state_dict(state["head"])
        opt.load_state_dict(state["opt"])
        batches.rng.setstate(state["rng"])
        batches.order, batches.epochs = state["order"], state["epochs"]
        self.step, self.history, self.seconds = state["step"], state["history"], state["seconds"]
        self.smooth = state.get("smooth")  # absent from a checkpoint written before it was kept


def _train_step(cfg, head: FeatureHead, opt, embed: torch.Tensor, batches: FeatureBatches, t2d, step: int):
    """One optimiser step (cosine learning rate, training-time test loss, clipped gradients); returns the
    loss, its per-unrolled-step parts and the learning rate."""
    lr = cosine_lr(step, cfg.steps, cfg.lr, min(50, max(1, cfg.steps // 10)))
    for g in opt.param_groups:
        g["lr"] = lr
    with _autocast(cfg.precision):
        loss, parts = batch_loss(head, embed, batches.next(), t2d, cfg.ttt_steps)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(head.parameters(), 0.5)
    opt.step()
    return float(loss.detach()), parts, lr


def train_drafter(cfg, target, answers: list, heldout: list, out: Path, log) -> dict:
    """Stage 3 (resumable): train and save the head to ``out``; returns the stage's report."""
    import time

    vocab = read_vocab(out)
    t2d = torch.full((target.config.vocab_size,), -1, dtype=torch.long)
    t2d[vocab] = torch.arange(len(vocab))
    head, hcfg = _new_head(cfg, target, vocab)
    embed = target.get_input_embeddings().weight.detach()
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    batches = FeatureBatches(answers, cfg.batch, cfg.seq, cfg.seed + 17)
    progress, ckpt = _Progress(), out / CHECKPOINT
    if ckpt.is_file():
        progress.load(ckpt, head, opt, batches)
        log(f"[drafter] resumed at step {progress.step} from {ckpt}")
    n_params = sum(p.numel() for p in head.parameters())
    log(
        f"[drafter] {n_params / 1e6:.2f}M parameters, vocabulary {len(vocab)}, layers {hcfg.layers}; "
        f"{cfg.steps} steps of {cfg.batch} answers, {cfg.ttt_steps} unrolled steps"
    )
    head.train()
    t0, smooth = time.time() - progress.seconds, progress.smooth
    for step in range(progress.step, cfg.steps):
        value, parts, lr = _train_step(cfg, head, opt, embed, batches, t2d, step)
        smooth = value if smooth is None else 0.95 * smooth + 0.05 * value
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.steps:
            elapsed = round(time.time() - t0, 1)
            progress.history.append({"step": step + 1, "loss": round(smooth, 4), "steps": parts, "elapsed_s": elapsed})
            log(
                f"[drafter] step {step + 1}/{cfg.steps} loss {smooth:.4f} per step {parts} lr {lr:.2e} "
                f"epoch {batches.epochs} {time.time() - t0:.0f} s"
            )
        if (step + 1) % cfg.save_every == 0 and step + 1 < cfg.steps:
            progress.step, progress.seconds, progress.smooth = step + 1, time.time() - t0, smooth
            progress.save(ckpt, head, opt, batches)
    head.eval()
    return _save_head(cfg, head, hcfg, n_params, batches.epochs, round(time.time() - t0, 1), progress.history, out)


def _save_head(cfg, head: FeatureHead, hcfg, n_params: int, epochs: int, seconds: float, history, out: Path) -> dict:
    """The trained head saved to ``out`` with its recipe, the checkpoint removed; returns the stage's report."""
    report = {
        "parameters": n_params,
        "config": {**hcfg.__dict__, "layers": list(hcfg.layers)},
        "epochs": epochs,
        "seconds": seconds,
        "history": history,
    }
    training = {k: v for k, v in report.items() if k != "history"}
    head.save(
        out, {"recipe": "python -m specviz train feature", "seed": cfg.seed, "target": cfg.target, "training": training}
    )
    if (out / CHECKPOINT).is_file():
        (out / CHECKPOINT).unlink()
    return report


@torch.no_grad()
def agreement(
    head: FeatureHead, embed: torch.Tensor, answers: list, steps: int, seq: int, gammas=(1, 2, 3, 4, 5, 6)
) -> dict:
    """Teacher-forced top-1 agreement with the target's argmax per draft position, and the greedy chain tau
    per gamma it implies (module docstring), over ``answers``' answer positions."""
    hits = [0] * steps
    seen = [0] * steps
    runs: list[int] = []
    for start in range(0, len(answers), 8):
        ids, feats, at, chunk = collate(answers[start : start + 8], seq)
        tid, _ = _targets(chunk, at, torch.arange(head.cfg.target_vocab))
        outs = head.unrolled(feats, ids, embed, steps)
        best = [head.vocab[head.logits(h).argmax(-1)] for h in outs]  # target ids [B, L]
        truth = tid[..., 0]
        ok = []
        for k in range(steps):
            want = _shift(truth, k, -1)
            valid = want >= 0
            good = (best[k] == want) & valid
            hits[k] += int(good.sum())
            seen[k] += int(valid.sum())
            ok.append(good)
        rows = truth >= 0
        run = torch.zeros_like(truth)
        alive = torch.ones_like(truth, dtype=torch.bool)
        for k in range(steps):
            alive = alive & ok[k]
            run += alive.long()
        runs += run[rows].tolist()
    out = {"agreement_by_position": [round(h / max(1, n), 4) for h, n in zip(hits, seen)], "positions": seen[0]}
    for g in gammas:
        if g <= steps:
            out[f"greedy_sd_tau_gamma{g}"] = round(1 + sum(min(r, g) for r in runs) / max(1, len(runs)), 3)
    return out


def evaluate(cfg, target, heldout: list, out: Path, log) -> dict:
    """Stage 4: held-out agreement of the saved head (as the app loads it: bfloat16 weights, float32 maths).
    For a question set other than ``templates-1``, also ``by_set``: the agreement on the held-out questions
    that ``templates-1`` has (comparable with a head trained on it) and on the others."""
    from .chat_prompts import prompt_set

    head = load_feature_head(out, target)
    embed = target.get_input_embeddings().weight.detach()
    steps = max(cfg.ttt_steps, 6)
    result = agreement(head, embed, heldout, steps, cfg.seq)
    if cfg.questions != "templates-1":
        first = set(prompt_set())
        parts = {"templates-1": [a for a in heldout if a.prompt in first]}
        parts["the others"] = [a for a in heldout if a.prompt not in first]
        result["by_set"] = {name: agreement(head, embed, part, steps, cfg.seq) for name, part in parts.items() if part}
    return result
