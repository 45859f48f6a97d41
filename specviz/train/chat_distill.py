"""Distilling a narrow draft (and an early-exit head) from a chat target's recorded answers.

The loss is the cross-entropy of the student's whole-vocabulary law against the target's top-k law,
renormalised over those k tokens, at every answer position: for the greedy answers the target's own
token carries most of that mass, so the student learns the argmax that greedy speculative decoding
accepts and the shape of the law that sampled decoding accepts. Only answer positions are scored
(the draft never drafts a prompt token), and the student's LM head runs on those positions only: at
a 49,152-token vocabulary the head is most of a narrow draft's arithmetic.
"""

from __future__ import annotations

import random
from typing import Callable

import torch
import torch.nn.functional as F

from .chat_data import Answer


class AnswerBatches:
    """Batches of answers, shuffled every epoch by a seeded generator, right-padded to the longest.

    ``next()`` returns ``(ids [B, L], targets_at [N, 2] (row, position), top_ids [N, k], top_logp [N, k])``:
    position ``t`` of row ``b`` predicts answer token ``t + 1 - len(prompt)``.
    """

    def __init__(self, answers: list[Answer], batch_size: int, max_len: int, seed: int, pad_id: int):
        self.answers = [a for a in answers if a.answer]
        self.batch_size, self.max_len, self.pad = batch_size, max_len, pad_id
        self.rng = random.Random(seed)
        self.order: list[int] = []
        self.epochs = 0

    def next(self):
        if len(self.order) < self.batch_size:
            fresh = list(range(len(self.answers)))
            self.rng.shuffle(fresh)
            self.order += fresh
            self.epochs += 1
        picked, self.order = self.order[: self.batch_size], self.order[self.batch_size :]
        return self.batch([self.answers[i] for i in picked])

    def batch(self, answers: list[Answer]):
        """One batch of ``answers`` (a subclass collates its own way)."""
        return collate(answers, self.max_len, self.pad)


def collate(answers: list[Answer], max_len: int, pad_id: int):
    """``AnswerBatches``' batch of ``answers`` (each cut to ``max_len`` tokens)."""
    seqs = [a.ids[:max_len] for a in answers]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    at, tops, logps = [], [], []
    for b, (a, s) in enumerate(zip(answers, seqs)):
        ids[b, : len(s)] = torch.tensor(s)
        n = len(s) - len(a.prompt_ids)  # answer tokens that fit
        if n <= 0:
            continue
        pos = torch.arange(len(a.prompt_ids) - 1, len(a.prompt_ids) - 1 + n)
        at.append(torch.stack([torch.full_like(pos, b), pos], 1))
        tops.append(a.top_ids[:n].long())
        logps.append(a.top_logp[:n].float())
    return ids, torch.cat(at), torch.cat(tops), torch.cat(logps)


def topk_cross_entropy(logits: torch.Tensor, top_ids: torch.Tensor, top_logp: torch.Tensor) -> torch.Tensor:
    """Mean over rows of -sum_j w_j log q(top_ids_j), w = the target's top-k law renormalised."""
    logq = F.log_softmax(logits.float(), dim=-1).gather(-1, top_ids)
    w = torch.softmax(top_logp, dim=-1)
    return -(w * logq).sum(-1).mean()


def answer_logits(model, ids: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
    """A ``*ForCausalLM``'s logits at the positions ``at`` only (its body on every token, its head on
    those). For an early-exit head pass its ``exit_model``: the frozen trunk, the exit layer and norm,
    then the (shared) head."""
    hidden = model.base_model(input_ids=ids).last_hidden_state
    return model.get_output_embeddings()(hidden[at[:, 0], at[:, 1]])


def distill_loss(model) -> Callable:
    """``batch -> topk_cross_entropy`` of ``model`` on an ``AnswerBatches`` batch."""

    def loss(batch) -> torch.Tensor:
        ids, at, top_ids, top_logp = batch
        return topk_cross_entropy(answer_logits(model, ids, at), top_ids, top_logp)

    return loss


def scored_tokens(batch) -> int:
    return len(batch[1])


@torch.no_grad()
def greedy_matches(
    logits_fn: Callable, answers: list[Answer], pad_id: int, batch_size: int = 8, max_len: int = 1024
) -> list[list[bool]]:
    """Per greedy answer: does the model's argmax equal the target's token at each answer position
    (teacher-forced on the target's greedy text, the rows ``evaluate.greedy_sd_tau`` takes)."""
    rows = []
    greedy = [a for a in answers if a.temperature == 0 and a.answer]
    for i in range(0, len(greedy), batch_size):
        chunk = greedy[i : i + batch_size]
        ids, at, top_ids, _ = collate(chunk, max_len, pad_id)
        pred = logits_fn(ids, at).argmax(-1)
        hit = (pred == top_ids[:, 0]).tolist()
        start = 0
        for a in chunk:
            n = min(len(a.answer), max_len - len(a.prompt_ids))
            rows.append(hit[start : start + n])
            start += n
    return rows
