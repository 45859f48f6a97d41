"""The feature drafter's data: the target's own answers with its hidden states, made in resumable chunks.

``answer_chunks`` answers the prompts ``chunk`` at a time through ``chat_data.answer_prompts`` (batched
generation with the KV cache), capturing the target's hidden states at ``layers`` during generation
itself (EAGLE-3, arXiv 2503.01840, Section 3: the target's own answers, its low, middle and high
features). Each chunk is written to the cache as soon as it is done, under a name keyed by every
setting that changes it, so a run that is cut off continues with the next missing chunk.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable

from .chat_data import Answer, answer_prompts, load_answers, save_answers


def chunk_path(root: Path, settings: dict, prompts: list[str]) -> Path:
    """The cache file of one chunk: keyed by the settings and the chunk's prompts."""
    key = hashlib.sha256(json.dumps({**settings, "prompts": prompts}, sort_keys=True).encode()).hexdigest()[:16]
    return root / f"chunk-{key}.pt"


def answer_chunks(
    model,
    tokenizer,
    prompts: list[str],
    temperature: float,
    max_new_tokens: int,
    seed: int,
    batch: int,
    top_k: int,
    layers: tuple[int, ...],
    root: Path,
    chunk: int = 256,
    log: Callable[[str], None] = print,
) -> tuple[list[Answer], float, int]:
    """Every prompt's answer with features, read from ``root`` where a chunk is cached; returns the answers,
    the seconds spent making the chunks that were missing and how many were."""
    root.mkdir(parents=True, exist_ok=True)
    settings = {
        "temperature": temperature,
        "max_new_tokens": max_new_tokens,
        "seed": seed,
        "batch": batch,
        "top_k": top_k,
        "layers": list(layers),
        "dtype": str(next(model.parameters()).dtype),  # answers and features differ with the dtype
    }
    out: list[Answer] = []
    spent, made_chunks = 0.0, 0
    for c, start in enumerate(range(0, len(prompts), chunk)):
        part = prompts[start : start + chunk]
        path = chunk_path(root, settings, part)
        if path.is_file():
            out += load_answers(path)
            continue
        t0 = time.time()
        made = answer_prompts(
            model, tokenizer, part, temperature, max_new_tokens, seed * 1009 + c, batch, top_k, log, layers
        )
        tmp = path.with_suffix(".tmp")
        save_answers(made, tmp)
        tmp.replace(path)  # a chunk is either whole in the cache or absent
        spent += time.time() - t0
        made_chunks += 1
        out += made
        log(
            f"[answers] T={temperature}: chunk {c + 1}/{-(-len(prompts) // chunk)} done "
            f"({sum(len(a.answer) for a in out)} answer tokens so far, {spent:.0f} s)"
        )
    return out, round(spent, 1), made_chunks
