"""Training Cali-TS's calibration head theta_M (arXiv 2406.03853, Eq. 5, Algorithm 3), LLM and draft frozen.

Samples: the target's **greedy** continuations of corpus prompts, with the draft teacher-forced on
them, reproduce the draft's context whenever every earlier draft of the round was accepted. For an
anchor ``t`` (``x[t]`` the last committed token, produced by the target's hidden state at ``t - 1``)
draft token ``i`` (1-based) is predicted from position ``t + i - 1``; its label, the value ``chi``
should take, is whether the draft's argmax there equals the target's. The head sees
``H^(T) = target last-layer hidden at t - 1`` and ``H^(D) = draft post-norm hidden at t + i - 1``.
Loss: cross-entropy of the 2-way softmax. ``sigma_m`` is the RMS error of theta_M against the labels
on held-out sequences (Cali-TS's sigma_M).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F

from specviz.models.early_exit import HEAD_CONFIG, CalibrationHead, EarlyExitHead, save_calibration

from .evaluate import generate
from .loop import train_loop


@torch.no_grad()
def greedy_sequences(
    target, stream, n: int, prompt_len: int, new_tokens: int, seed: int, device, batch_size: int = 32
) -> torch.Tensor:
    """``n`` corpus prompts continued greedily by the target: ``(n, prompt_len + new_tokens)``."""
    gen = torch.Generator().manual_seed(seed)
    data = torch.as_tensor(stream, dtype=torch.long)
    rows = []
    for start in range(0, n, batch_size):
        b = min(batch_size, n - start)
        starts = torch.randint(0, len(data) - prompt_len - 1, (b,), generator=gen)
        prompts = data[starts[:, None] + torch.arange(prompt_len)[None, :]].to(device)
        rows.append(generate(target, prompts, new_tokens).cpu())
    return torch.cat(rows)


@torch.no_grad()
def calibration_features(target, head: EarlyExitHead, seqs: torch.Tensor, first_anchor: int, device):
    """``(h_target [m, d], h_draft [m, d], index i [m], label [m])`` for every anchor ``t >= first_anchor``
    and draft index ``i = 1..positions`` that fits in the sequence."""
    x = seqs.to(device)
    out = target(input_ids=x, output_hidden_states=True)
    g = out.logits.argmax(-1)
    d_logits, h_d = head(out.hidden_states[head.exit_layer], return_hidden=True)
    agree = d_logits.argmax(-1) == g
    h_t = out.hidden_states[-1]
    cols_t, cols_d, idx = [], [], []
    T = x.shape[1]
    for i in range(1, 11):
        if T - i + 1 <= max(first_anchor, 1):  # a short sequence: no anchor leaves room for draft token i
            break
        anchors = torch.arange(max(first_anchor, 1), T - i + 1, device=device)
        cols_t.append(anchors - 1)
        cols_d.append(anchors + i - 1)
        idx.append(torch.full_like(anchors, i))
    ct, cd, ii = torch.cat(cols_t), torch.cat(cols_d), torch.cat(idx)
    B = x.shape[0]
    return (
        h_t[:, ct].reshape(B * len(ct), -1).float(),
        h_d[:, cd].reshape(B * len(cd), -1).float(),
        ii.repeat(B),
        agree[:, cd].reshape(-1).float(),
    )


def _theta(cal: CalibrationHead, h_t, h_d, idx) -> torch.Tensor:
    """theta_M of every sample (Eq. 5): ``W^j H^(T)`` as one product per j over that j's samples
    (gathering a d x d matrix per sample would move 1.3 MB a sample at d=576)."""
    proj = torch.zeros_like(h_t)
    for j in range(1, cal.positions + 1):
        rows = (idx == j).nonzero().squeeze(1)
        if len(rows):
            proj = proj.index_copy(0, rows, h_t[rows] @ cal.w[j - 1].T)
    return torch.softmax(cal.w_p(torch.cat([proj, h_d], -1)), -1)[:, 1]


def train_calibration(
    target,
    head: EarlyExitHead,
    stream,
    heldout_stream,
    steps: int = 200,
    lr: float = 1e-3,
    sequences: int = 64,
    prompt_len: int = 32,
    new_tokens: int = 64,
    batch_rows: int = 512,
    seed: int = 0,
    device="cpu",
    log=print,
    progress: bool = False,
) -> tuple[CalibrationHead, dict]:
    """A ``CalibrationHead`` fitted on greedy continuations of corpus prompts; returns it with its
    held-out report (``fit_calibration``)."""
    train = greedy_sequences(target, stream, sequences, prompt_len, new_tokens, seed, device)
    if len(heldout_stream) < prompt_len + 2:  # a tiny held-out split: fresh prompts from the training text
        heldout_stream = stream
    held = greedy_sequences(target, heldout_stream, max(4, sequences // 8), prompt_len, new_tokens, seed + 1, device)
    feats = calibration_features(target, head, train, prompt_len, device)
    held_feats = calibration_features(target, head, held, prompt_len, device)
    return fit_calibration(feats, held_feats, steps, lr, batch_rows, seed, device, log, progress)


def concat_features(parts: list[tuple]) -> tuple:
    """``calibration_features`` of several sequences as one set."""
    return tuple(torch.cat([p[k] for p in parts]) for k in range(4))


def fit_calibration(
    feats: tuple,
    held_feats: tuple,
    steps: int = 200,
    lr: float = 1e-3,
    batch_rows: int = 512,
    seed: int = 0,
    device="cpu",
    log=print,
    progress: bool = False,
) -> tuple[CalibrationHead, dict]:
    """Fit theta_M by binary cross-entropy on ``feats`` and report it on ``held_feats``: ``sigma_m`` (RMS
    error, Cali-TS's sigma_M) and accuracy, beside those of the constant predictor that always says
    the majority label of the training samples (what theta_M must beat to be worth using)."""
    cal = CalibrationHead(feats[0].shape[1]).to(device)
    gen = torch.Generator().manual_seed(seed + 2)
    n = len(feats[3])

    def batch(_step):
        return torch.randint(0, n, (batch_rows,), generator=gen)[:, None]  # rows; loop wants (B, >=2)

    def loss(rows):
        r = rows[:, 0].to(device)
        theta = _theta(cal, feats[0][r], feats[1][r], feats[2][r]).clamp(1e-6, 1 - 1e-6)
        return F.binary_cross_entropy(theta, feats[3][r])

    summary = train_loop(
        cal.parameters(),
        lambda s: torch.cat([batch(s)] * 2, 1),
        loss,
        steps,
        lr,
        "calibration",
        weight_decay=0.0,
        log_every=max(1, steps // 4),
        log=log,
        progress=progress,
    )
    with torch.no_grad():
        theta = _theta(cal, *held_feats[:3])
        labels = held_feats[3]
        rate = float(feats[3].mean())
        constant = torch.full_like(labels, rate)
        report = {
            "sigma_m": round(float(((theta - labels) ** 2).mean().sqrt()), 4),
            "heldout_accuracy": round(float(((theta > 0.5).float() == labels).float().mean()), 4),
            "heldout_label_rate": round(float(labels.mean()), 4),
            "constant_rms": round(float(((constant - labels) ** 2).mean().sqrt()), 4),
            "constant_accuracy": round(float(((constant > 0.5).float() == labels).float().mean()), 4),
            "heldout_samples": len(labels),
            "samples": n,
            "steps": steps,
            "final_loss": summary["final_loss"],
        }
        report["beats_constant"] = report["sigma_m"] < report["constant_rms"]
    return cal.eval(), report


def save_with_head(
    cal: CalibrationHead, head_dir: str | Path, report: dict, dtype: torch.dtype = torch.float32
) -> None:
    """Write the calibration head next to an early-exit head and record its report in ``early_exit.json``."""
    save_calibration(cal, head_dir, dtype)
    meta_path = Path(head_dir) / HEAD_CONFIG
    meta = json.loads(meta_path.read_text())
    meta["calibration"] = report
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
