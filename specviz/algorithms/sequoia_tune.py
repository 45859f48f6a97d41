"""Sequoia's offline inputs, measured on the pair at hand: the acceptance vector and verify times t(n).

* ``estimate_acceptance`` (Sequoia, arXiv:2402.12374, §4.1 and Def. 3.1-3.2): decode a few
  calibration prompts on-policy with a one-level tree of W children drafted without replacement
  (top-W at temperature 0) and verified by Sequoia's rule; p_k = (steps whose accepted child had rank
  k) / steps. It is the joint quantity the DP needs (Def. 3.2), specific to the pair and the sampling
  settings. Calibration prompts are fixed (not the user's prompt) and seeded, so the tree a pair gets
  does not depend on what ran before.
* ``measure_times``: the target's wall time for one call on n tokens after a 64-token prefix and
  the draft's time for one call, on the device the pair runs on (paper §3.3: t(n) is the measured
  verify time). Sizes are timed round-robin so that load on a shared machine hits them alike; each
  keeps its fastest reading (other work only ever adds time) and the curve is fitted non-decreasing
  in n (a call on more tokens is never cheaper), so one noisy reading cannot pick the size.

Both, and the DP tables built from them (``sequoia._dp``), are cached per pair (``pair_cache(pair)``,
a ``PairCache`` this module keeps for each loaded pair, not on the pair) per sampling settings / size
grid, so they are paid once per loaded pair. The cache is shared by every caller of the pair (all
visitors of the app), so it is bounded: the least recently used entries of a kind go first, at most
``CACHE_CAPS`` of each (a DP table for n = 512, d = 32 and a 64-entry vector is about 18 MB; issue
#21). ``measure_times`` is wall-clock and therefore not reproducible across processes; everything
else is.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Hashable

import torch

from specviz import interrupt
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.step_loop import take_step
from specviz.algorithms.tree_engine import StaticShape
from specviz.algorithms.tree_verifier import TreeVerifier
from specviz.core.rules import MultiCandidate
from specviz.core.sampling import SamplingConfig
from specviz.core.trees import ROOT, TreeShape
from specviz.models.chat import encode_prompt
from specviz.models.loading import ModelPair
from specviz.models.tree_forward import CachedLM

CALIBRATION_TEXTS = (
    "def main(argv=None):\n    ",
    "import os\nimport sys\n\n",
    'class Config:\n    """',
    "The quick brown fox",
    "    for i in range(len(",
    "# Copyright (c) Python Software Foundation.\n",
    'if __name__ == "__main__":\n',
    "Once upon a time, ",
)
# a chat pair is calibrated on what it is used for: questions in its chat template
CALIBRATION_QUESTIONS = (
    "What is the tallest mountain in Africa?",
    "Explain how a rainbow forms.",
    "Give me three tips for staying focused.",
    "Write a Python function that returns the largest of three numbers.",
)
SIZE_GRID = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)


@dataclass(frozen=True)
class AcceptanceEstimate:
    vector: tuple[float, ...]  # p_1..p_W (joint: rank k accepted)
    counts: tuple[int, ...]  # steps by accepted rank 1..W, then "none" last
    steps: int
    prompts: int


# entries kept per kind (a key's first element): DP tables, acceptance estimates, verify-time curves
CACHE_CAPS = {"dp": 8, "acceptance": 16, "times": 4}
OTHER_CAP = 8  # any other kind


class PairCache:
    """A thread-safe LRU map with a cap per kind of entry (``key[0]``: ``CACHE_CAPS``), so a pair
    shared by many callers keeps a bounded number of DP tables whatever vectors they ask for."""

    def __init__(self, caps: dict[str, int] | None = None, other: int = OTHER_CAP):
        self.caps = dict(CACHE_CAPS if caps is None else caps)
        self.other = other
        self._kinds: dict[Any, OrderedDict] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _kind(key: Hashable) -> Any:
        return key[0] if isinstance(key, tuple) and key else None

    def cap(self, kind: Any) -> int:
        return self.caps.get(kind, self.other)

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            entries = self._kinds.get(self._kind(key))
            if entries is None or key not in entries:
                return default
            entries.move_to_end(key)
            return entries[key]

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._kinds.get(self._kind(key), ())

    def __getitem__(self, key: Hashable) -> Any:
        missing = object()
        value = self.get(key, missing)
        if value is missing:
            raise KeyError(key)
        return value

    def __setitem__(self, key: Hashable, value: Any) -> None:
        kind = self._kind(key)
        with self._lock:
            entries = self._kinds.setdefault(kind, OrderedDict())
            entries[key] = value
            entries.move_to_end(key)
            while len(entries) > max(1, self.cap(kind)):
                entries.popitem(last=False)

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The cached value of ``key``, made (outside the lock) and cached if absent."""
        missing = object()
        value = self.get(key, missing)
        if value is missing:
            value = make()
            self[key] = value
        return value

    def __len__(self) -> int:
        with self._lock:
            return sum(len(e) for e in self._kinds.values())

    def count(self, kind: Any) -> int:
        with self._lock:
            return len(self._kinds.get(kind, ()))


# Sequoia's cache of each loaded pair, owned here and keyed by the pair itself (``ModelPair`` is
# hashed by identity): it lives as long as the pair and goes with it. Its values are plain data
# (vectors, timings, DP tables), never the pair, so they do not keep the pair alive.
_CACHES: "weakref.WeakKeyDictionary[ModelPair, PairCache]" = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def pair_cache(pair: ModelPair) -> PairCache:
    """The pair's bounded Sequoia cache, made on first use (one per pair, whichever thread asks first)."""
    with _CACHES_LOCK:
        cache = _CACHES.get(pair)
        if cache is None:
            cache = _CACHES[pair] = PairCache()
        return cache


def calibration_prompts(pair: ModelPair, count: int = 4) -> list[list[int]]:
    """Fixed prompts: built-in questions in the chat template of a chat pair, built-in texts through
    the pair's tokenizer otherwise, or seeded random ids without one."""
    if pair.has_chat_template:
        return [encode_prompt(pair, q, chat=True)[0] for q in CALIBRATION_QUESTIONS][:count]
    if pair.tokenizer is not None:
        prompts = [ids for ids in (pair.encode(t) for t in CALIBRATION_TEXTS) if ids]
        if prompts:
            return prompts[:count]
    gen = torch.Generator().manual_seed(1234)
    return [torch.randint(pair.vocab_size, (6,), generator=gen).tolist() for _ in range(count)]


def estimate_acceptance(
    pair: ModelPair,
    sampling: SamplingConfig,
    width: int,
    steps: int = 128,
    prompts: list[list[int]] | None = None,
    seed: int = 0,
    drafter: str = "model",
) -> AcceptanceEstimate:
    """Positional acceptance vector of width ``min(width, vocab)`` from ``steps`` calibration steps (cached),
    drafted by ``drafter`` (``Decoder``'s: the draft model or the feature head)."""
    width = min(width, pair.vocab_size)
    prompts = prompts if prompts is not None else calibration_prompts(pair)
    key = ("acceptance", sampling, width, steps, tuple(map(tuple, prompts)), seed, drafter)
    cache = pair_cache(pair)
    found = cache.get(key)
    if found is not None:
        return found
    shape = TreeShape((ROOT,) * width)
    counts = [0] * (width + 1)
    per_prompt = -(-steps // len(prompts))
    for i, prompt in enumerate(prompts):
        budget = min(2 * per_prompt + 2, pair.context_length - len(prompt) - 1)
        if budget < 2:
            continue
        dec = Decoder(pair, list(prompt), budget, sampling, seed + i, record_top_k=0, drafter=drafter)
        drafter, controller = ModelDrafter(dec.draft, fallback=True), StaticShape(shape)
        verifier = TreeVerifier(MultiCandidate(replacement=False))
        for index in range(per_prompt):
            interrupt.check("Sequoia's calibration")
            if dec.finished or dec.remaining < 2:
                break
            ts = take_step(dec, index, drafter, verifier, controller)[1]
            if dec.finish_reason == "eos":  # the paper skips EOS-terminated steps
                break
            counts[ts.tree.rank(ts.path[0]) - 1 if ts.path else width] += 1
    total = sum(counts)
    vector = tuple(c / total for c in counts[:width]) if total else (0.0,) * width
    est = AcceptanceEstimate(vector, tuple(counts), total, len(prompts))
    cache[key] = est
    return est


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _time_call(lm: CachedLM, tokens: list[int]) -> float:
    """Milliseconds of one ``lm.forward`` on ``tokens`` (a one-level tree under the prefix), rolled back after."""
    _sync(lm.device)
    start = time.perf_counter()
    lm.forward(tokens, [ROOT] * len(tokens))
    _sync(lm.device)
    elapsed = 1000 * (time.perf_counter() - start)
    lm.rollback()
    return elapsed


def isotonic(values: list[float]) -> list[float]:
    """Least-squares non-decreasing fit (pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight]
    for v in values:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (m2, w2), (m1, w1) = blocks.pop(), blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
    return [m for m, w in blocks for _ in range(int(w))]


def measure_times(
    pair: ModelPair, max_size: int, repeats: int = 5, prefix: int = 64, drafter: str = "model"
) -> tuple[dict[int, float], float]:
    """``({n: target ms for one call on n tokens}, draft ms for one call)`` for n on ``SIZE_GRID`` up
    to ``max_size``, and ``max_size`` (cached). Sizes are timed round-robin ``repeats`` times after a
    warm-up round, each keeps its fastest reading, and the curve is fitted non-decreasing. ``drafter``
    (``Decoder``'s): the draft call timed is the draft model's or the feature head's."""
    sizes = tuple(sorted({k for k in SIZE_GRID if k <= max_size} | {max(1, max_size)}))
    key = ("times", sizes, repeats, prefix, str(pair.device), drafter)
    cache = pair_cache(pair)
    found = cache.get(key)
    if found is not None:
        return found
    gen = torch.Generator().manual_seed(0)
    prefix = max(1, min(prefix, pair.context_length - 1))
    context = torch.randint(pair.vocab_size, (prefix,), generator=gen).tolist()
    batches = {n: torch.randint(pair.vocab_size, (n,), generator=gen).tolist() for n in sizes}
    draft = None
    if drafter == "feature":
        from specviz.models.feature_head import FeatureLM

        target = CachedLM(pair.target, pair.vocab_size, features=pair.feature.cfg.layers)
        target.extend(context[:-1])
        target.commit([])
        draft = FeatureLM(pair.feature, target, pair.target.get_input_embeddings().weight, pair.vocab_size)
        draft.extend(context)
        target.extend(context[-1:])
        target.commit([])
    else:
        target = CachedLM(pair.target, pair.vocab_size)
        target.extend(context)
        if pair.draft is not None:
            draft = CachedLM(pair.draft, pair.vocab_size)
            draft.extend(context)
    best = {n: float("inf") for n in sizes}
    draft_ms = float("inf") if draft is not None else 0.0
    for r in range(repeats + 1):
        interrupt.check("Sequoia's timing of the target")
        for n in sizes:
            t = _time_call(target, batches[n])
            if r:
                best[n] = min(best[n], t)
        if draft is not None:
            t = _time_call(draft, [context[-1]])
            if r:
                draft_ms = min(draft_ms, t)
    verify = dict(zip(sizes, isotonic([best[n] for n in sizes])))
    cache[key] = (verify, draft_ms)
    return verify, draft_ms
