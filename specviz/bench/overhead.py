"""``trace_overhead``: what recording the trace costs, measured in one process.

Each prompt is decoded twice in a row, with full recording (per-position distributions,
``record_top_k=8``) and with recording off (``record_top_k=0``, the only optional part of a trace),
the order alternating from pair to pair; ``trace_overhead`` is the median over all pairs of
``time(full) / time(off) - 1``, with its quartiles (``spread``). Pairing two runs a fraction of a
second apart cancels most of a shared machine's drift, and the median of many short pairs is far
steadier than a ratio of whole passes. Two direct estimates come with it, both from the full runs
alone and free of drift: ``recording_share``, the seconds spent inside ``position_records`` over the
rest of the run, and ``gc_share``, the seconds the cyclic garbage collector ran over the whole run
(an indirect cost the recording's allocations could cause)."""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any, Callable
from unittest import mock

from specviz.algorithms import tree_verifier


class _Stopwatch:
    """Seconds spent inside ``timed(f)`` wrappers, and in GC passes while ``on``."""

    def __init__(self) -> None:
        self.inside = self.gc = self._gc_start = 0.0
        self.on = False

    def timed(self, f: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return f(*args, **kwargs)
            finally:
                self.inside += time.perf_counter() - start

        return wrapper

    def gc_callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        elif self.on:
            self.gc += time.perf_counter() - self._gc_start


def trace_overhead(
    pair, algorithm: str, prompts: list[Any], max_new_tokens: int, rounds: int = 5, record_top_k: int = 8
) -> dict[str, Any]:
    """``{"trace_overhead", "spread", "pairs", "recording_share", "gc_share", "full_s", "off_s"}`` for
    greedy ``algorithm`` on ``prompts``, ``rounds`` pairs per prompt (``full_s`` / ``off_s``: median
    seconds per pass over the prompts)."""
    from specviz.decoding import decode

    watch = _Stopwatch()

    def run(k: int, prompt: Any) -> float:
        watch.on = k == record_top_k  # the GC time of the full runs only
        start = time.perf_counter()
        decode(pair, algorithm, prompt, max_new_tokens=max_new_tokens, temperature=0, record_top_k=k)
        return time.perf_counter() - start

    ratios, full, off, shares, gcs = [], [], [], [], []
    gc.callbacks.append(watch.gc_callback)
    try:
        with mock.patch.object(tree_verifier, "position_records", watch.timed(tree_verifier.position_records)):
            for prompt in prompts:  # warm-up
                run(record_top_k, prompt), run(0, prompt)
            for i in range(rounds):
                watch.inside = watch.gc = 0.0
                both = {record_top_k: 0.0, 0: 0.0}
                for j, prompt in enumerate(prompts):
                    order = (record_top_k, 0) if (i + j) % 2 == 0 else (0, record_top_k)
                    got = {k: run(k, prompt) for k in order}
                    ratios.append(got[record_top_k] / got[0] - 1)
                    both = {k: both[k] + got[k] for k in both}
                full.append(both[record_top_k])
                off.append(both[0])
                shares.append(watch.inside / (both[record_top_k] - watch.inside))
                gcs.append(watch.gc / both[record_top_k])
    finally:
        gc.callbacks.remove(watch.gc_callback)
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {
        "trace_overhead": statistics.median(ratios),
        "spread": [quartiles[0], quartiles[2]],
        "pairs": len(ratios),
        "recording_share": statistics.median(shares),
        "gc_share": statistics.median(gcs),
        "full_s": statistics.median(full),
        "off_s": statistics.median(off),
    }
