"""The target's own answers to chat prompts, with its top-k next-token law at every answer position.

This is what a draft for a chat target must predict. ``answer_prompts`` runs transformers'
``generate`` over batches of chat-formatted prompts (left padded), greedy or sampled, and records,
through a logits processor placed before any warper, the target's ``top_k`` log-probabilities at
temperature 1 for every generated position: the distillation targets, kept without a second pass of
the target over its own text. An answer ends at the first EOS (kept) or at ``max_new_tokens``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

from specviz.models.chat import format_chat


@dataclass
class Answer:
    """One prompt's chat-formatted ids, the target's answer and its top-k law at each answer position.

    ``top_ids[i]`` / ``top_logp[i]`` is the target's law for answer token ``i`` given the prompt and
    answer tokens before it (``answer[i]`` is one of them when decoding was greedy).
    """

    prompt: str
    prompt_ids: list[int]
    answer: list[int]
    top_ids: torch.Tensor  # [len(answer), k] int32
    top_logp: torch.Tensor  # [len(answer), k] float16
    temperature: float
    features: torch.Tensor | None = None  # [len(ids) - 1, F] bfloat16: the target's fused hidden states

    @property
    def ids(self) -> list[int]:
        return self.prompt_ids + self.answer


class _CaptureLayers:
    """Forward pre-hooks on the target's decoder layers ``layers`` (Hugging Face ``hidden_states``
    indices: the input of layer i, the residual stream after layers 0..i-1) that keep, for every
    forward of ``generate``, those inputs concatenated (low, mid, high): the features EAGLE-3's
    drafter reads (arXiv 2503.01840, Section 3)."""

    def __init__(self, model, layers: tuple[int, ...]):
        self.parts: list[list[torch.Tensor]] = [[] for _ in layers]
        blocks = model.model.layers
        self.handles = [blocks[i].register_forward_pre_hook(self._keep(j)) for j, i in enumerate(layers)]

    def _keep(self, j: int):
        def hook(_module, args):
            self.parts[j].append(args[0].detach().to(torch.bfloat16).cpu())

        return hook

    def features(self) -> torch.Tensor:
        """``[B, positions fed, F]``: every captured forward, in order, layers concatenated."""
        for h in self.handles:
            h.remove()
        return torch.cat([torch.cat(p, 1) for p in self.parts], -1)


class _RecordTopK:
    """A logits processor that keeps the top-k log-probabilities of the raw scores and changes nothing."""

    def __init__(self, k: int):
        self.k = k
        self.steps: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, input_ids, scores):
        logp = torch.log_softmax(scores.float(), dim=-1)
        values, ids = logp.topk(self.k, dim=-1)
        self.steps.append((ids.to(torch.int32).cpu(), values.to(torch.float16).cpu()))
        return scores


def _left_padded(encoded: list[list[int]], idx: list[int], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, attention_mask)`` of the prompts ``idx``, left padded so that every prompt ends where
    generation starts."""
    width = max(len(encoded[i]) for i in idx)
    ids = torch.full((len(idx), width), pad, dtype=torch.long)
    mask = torch.zeros((len(idx), width), dtype=torch.long)
    for row, i in enumerate(idx):
        ids[row, width - len(encoded[i]) :] = torch.tensor(encoded[i])
        mask[row, width - len(encoded[i]) :] = 1
    return ids, mask


def _generate(model, ids, mask, temperature: float, max_new_tokens: int, pad: int, eos: int, recorder: _RecordTopK):
    """transformers' ``generate`` on one batch, greedy at ``temperature == 0``, with ``recorder`` the
    only logits processor (no top-k / top-p truncation)."""
    from transformers import LogitsProcessorList

    device = next(model.parameters()).device
    with torch.no_grad():
        return model.generate(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            max_new_tokens=max_new_tokens,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_k=0,
            top_p=1.0,
            logits_processor=LogitsProcessorList([recorder]),
            pad_token_id=pad,
            eos_token_id=eos,
        )


def _batch_answers(
    prompts: list[str],
    encoded: list[list[int]],
    idx: list[int],
    new: torch.Tensor,
    recorder: _RecordTopK,
    feats: torch.Tensor | None,
    width: int,
    eos: int,
    temperature: float,
) -> list[tuple[int, Answer]]:
    """``(prompt index, Answer)`` for each row of a generated batch: the answer cut after its first EOS,
    its top-k laws, and (``feats``) the hidden states of the positions whose next token is known."""
    top_ids = torch.stack([s[0] for s in recorder.steps], 1)
    top_logp = torch.stack([s[1] for s in recorder.steps], 1)
    out = []
    for row, i in enumerate(idx):
        toks = new[row].tolist()
        n = toks.index(eos) + 1 if eos in toks else len(toks)
        kept = None if feats is None else feats[row, width - len(encoded[i]) : width + n - 1].clone()
        out.append(
            (
                i,
                Answer(
                    prompts[i],
                    encoded[i],
                    toks[:n],
                    top_ids[row, :n].clone(),
                    top_logp[row, :n].clone(),
                    temperature,
                    kept,
                ),
            )
        )
    return out


def answer_prompts(
    model,
    tokenizer,
    prompts: list[str],
    temperature: float,
    max_new_tokens: int,
    seed: int,
    batch_size: int = 16,
    top_k: int = 32,
    log: Callable[[str], None] = print,
    feature_layers: tuple[int, ...] = (),
) -> list[Answer]:
    """The target's answers to ``prompts`` (chat-formatted), greedy at ``temperature == 0``, else sampled
    at ``temperature`` with a generator seeded by ``seed`` and the batch index (deterministic on one
    machine and thread count). ``feature_layers``: also keep the target's hidden states at those
    layers for every position whose next token is known (``Answer.features``), captured during
    generation itself: no second pass of the target."""
    eos = tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    encoded = [tokenizer(format_chat(tokenizer, p), add_special_tokens=False).input_ids for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: len(encoded[i]))  # similar lengths share a batch
    answers: list[Answer | None] = [None] * len(prompts)
    t0, done_tokens = time.time(), 0
    for b, start in enumerate(range(0, len(order), batch_size)):
        idx = order[start : start + batch_size]
        ids, mask = _left_padded(encoded, idx, pad)
        recorder = _RecordTopK(top_k)
        capture = _CaptureLayers(model, feature_layers) if feature_layers else None
        torch.manual_seed(seed * 100003 + b)
        out = _generate(model, ids, mask, temperature, max_new_tokens, pad, eos, recorder)
        width = ids.shape[1]
        feats = capture.features() if capture is not None else None
        for i, answer in _batch_answers(
            prompts, encoded, idx, out[:, width:].cpu(), recorder, feats, width, eos, temperature
        ):
            answers[i] = answer
            done_tokens += len(answer.answer)
        if b % 10 == 0 or start + batch_size >= len(order):
            rate = done_tokens / max(time.time() - t0, 1e-9)
            log(
                f"[answers] T={temperature}: {min(start + batch_size, len(order))}/{len(order)} prompts, "
                f"{done_tokens} answer tokens ({rate:.0f} tokens/s)"
            )
    return [a for a in answers if a is not None]


def save_answers(answers: list[Answer], path) -> None:
    torch.save([a.__dict__ for a in answers], path)


def load_answers(path) -> list[Answer]:
    return [Answer(**d) for d in torch.load(path, weights_only=False)]
