"""Distilling a draft from the target: initialisation, generated data and the KL loss."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from .evaluate import generate


@torch.no_grad()
def init_draft_from_target(draft, target, copy_layers: bool = True) -> list[str]:
    """Start the draft from the target's embedding, final norm and LM head (and its first layers when
    they have the same shape). A narrower draft gets the embedding projected on the target embedding's
    top principal directions, which keeps token-to-token dot products as close as the width allows.
    Returns what was copied."""
    done = []
    te = target.get_input_embeddings().weight
    de = draft.get_input_embeddings().weight
    if te.shape == de.shape:
        de.copy_(te)
        done.append("embed_tokens")
        if draft.model.norm.weight.shape == target.model.norm.weight.shape:
            draft.model.norm.weight.copy_(target.model.norm.weight)
            done.append("norm")
        if copy_layers:
            for i, layer in enumerate(draft.model.layers):
                if i < len(target.model.layers):
                    src = target.model.layers[i].state_dict()
                    if all(src[k].shape == v.shape for k, v in layer.state_dict().items()):
                        layer.load_state_dict(src)
                        done.append(f"layers.{i}")
    else:
        _, _, vh = torch.linalg.svd(te.float(), full_matrices=False)
        proj = vh[: de.shape[1]].T  # (d_target, d_draft)
        de.copy_(te.float() @ proj)
        done.append("embed_tokens (PCA projection)")
    th, dh = target.get_output_embeddings().weight, draft.get_output_embeddings().weight
    if dh.data_ptr() != de.data_ptr():  # untied draft head
        if th.shape == dh.shape:
            dh.copy_(th)
            done.append("lm_head")
    return done


def kl_to_teacher(student_logits: torch.Tensor, teacher_logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Mean over positions of KL(teacher || student) at ``temperature`` (scaled by T^2)."""
    v = student_logits.shape[-1]
    s = F.log_softmax(student_logits.reshape(-1, v).float() / temperature, dim=-1)
    t = F.log_softmax(teacher_logits.reshape(-1, v).float() / temperature, dim=-1)
    return F.kl_div(s, t, log_target=True, reduction="batchmean") * temperature**2


@torch.no_grad()
def build_generated_bank(
    target,
    stream,
    n_sequences: int,
    prompt_len: int,
    new_tokens: int,
    greedy_fraction: float,
    temperature: float,
    seed: int,
    batch_size: int = 64,
    log=print,
) -> torch.Tensor:
    """Target continuations of random corpus prompts: a (n, prompt_len + new_tokens) LongTensor.

    ``greedy_fraction`` of the rows are greedy, the rest sampled at ``temperature`` after a 3-token
    greedy start (LLM-QAT hybrid). Prompt positions and the sampling generator are seeded.
    """
    gen = torch.Generator().manual_seed(seed)
    data = torch.from_numpy(stream).long()
    rows = []
    n_greedy = int(round(n_sequences * greedy_fraction))
    t0 = time.time()
    for start in range(0, n_sequences, batch_size):
        b = min(batch_size, n_sequences - start)
        starts = torch.randint(0, len(data) - prompt_len - 1, (b,), generator=gen)
        prompts = data[starts[:, None] + torch.arange(prompt_len)[None, :]]
        greedy = start < n_greedy
        rows.append(
            generate(
                target, prompts, new_tokens, temperature=0.0 if greedy else temperature, greedy_prefix=3, generator=gen
            )
        )
        log(
            f"[generate] {start + b}/{n_sequences} sequences ({'greedy' if greedy else f'T={temperature}'}) "
            f"{(start + b) * new_tokens / (time.time() - t0):.0f} tok/s"
        )
    return torch.cat(rows)
