"""Stage 1 of the default pair's recipe (``chat_pair``): the target's answers to the template chat
prompts (``chat_prompts``) through ``chat_data.answer_prompts``, greedy for every training prompt and
sampled for a share of them, plus its greedy answers to the held-out prompts; each set cached on disk
under a key of every setting that changes it, so a later stage can be redone without them."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable

from .recipes import ChatRecipe


def answers_path(cfg: ChatRecipe, source: dict) -> Path:
    """Where the answers of these settings are cached (keyed by every setting that changes them)."""
    from specviz.models.packaged import cache_root

    keyed = {
        k: getattr(cfg, k)
        for k in (
            "seed",
            "heldout_percent",
            "max_new_tokens",
            "sampled_fraction",
            "sampled_temperature",
            "answer_batch",
            "top_k",
        )
    }
    key = hashlib.sha256(json.dumps({**keyed, "source": source}, sort_keys=True).encode()).hexdigest()[:12]
    root = Path(cfg.cache_dir) if cfg.cache_dir else cache_root()
    return root / "chat-answers" / f"answers-{key}.pt"


def _cached(path: Path, make: Callable[[], list], log, what: str) -> tuple[list, float | None]:
    """``make()``'s answers, kept at ``path`` (written atomically); the seconds it took, None if read."""
    from .chat_data import load_answers, save_answers

    if path.is_file():
        answers = load_answers(path)
        log(f"[answers] {len(answers)} {what} read from the cache")
        return answers, None
    t0 = time.time()
    answers = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_answers(answers, tmp)
    tmp.replace(path)
    return answers, round(time.time() - t0, 1)


def build_answers(cfg: ChatRecipe, model, tokenizer, log=print) -> tuple[list, list, dict]:
    """Stage 1: the target's answers to the training prompts and its greedy answers to the held-out
    ones (both cached), and their summary for the report."""
    import random

    from .chat_data import answer_prompts
    from .chat_prompts import prompt_set, split

    train, held = split(prompt_set(cfg.prompts, cfg.seed, questions=cfg.questions), cfg.heldout_percent)
    source = {"target": cfg.target, "prompts": hashlib.sha256("\n".join(train).encode()).hexdigest()[:16]}
    path = answers_path(cfg, source)

    def make_train() -> list:
        rng = random.Random(cfg.seed + 5)
        sampled = rng.sample(train, int(round(len(train) * cfg.sampled_fraction)))
        out = answer_prompts(
            model, tokenizer, train, 0.0, cfg.max_new_tokens, cfg.seed, cfg.answer_batch, cfg.top_k, log
        )
        return out + answer_prompts(
            model,
            tokenizer,
            sampled,
            cfg.sampled_temperature,
            cfg.max_new_tokens,
            cfg.seed + 1,
            cfg.answer_batch,
            cfg.top_k,
            log,
        )

    answers, seconds = _cached(path, make_train, log, "training answers")
    heldout, held_seconds = _cached(
        path.with_name(path.stem + "-heldout.pt"),
        lambda: answer_prompts(
            model, tokenizer, held, 0.0, cfg.max_new_tokens, cfg.seed, cfg.answer_batch, cfg.top_k, log
        ),
        log,
        "held-out answers",
    )
    summary = {
        "train_prompts": len(train),
        "heldout_prompts": len(held),
        "answers": len(answers),
        "answer_tokens": sum(len(a.answer) for a in answers),
        "greedy_answers": sum(a.temperature == 0 for a in answers),
        "heldout_answer_tokens": sum(len(a.answer) for a in heldout),
        "seconds": seconds,
        "heldout_seconds": held_seconds,
    }  # None: read from the cache
    return answers, heldout, summary
