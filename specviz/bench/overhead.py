"""``trace_overhead``: what recording the trace costs, measured in one process.

Decoding runs alternately with full recording (per-position distributions, ``record_top_k=8``) and
with recording off (``record_top_k=0``, the only optional part of a trace), and the overhead is the
median over rounds of ``time(full) / time(off) - 1``: pairing the two runs of one round cancels
most of the drift of a shared, loaded machine."""
from __future__ import annotations

import statistics
import time
from typing import Any


def trace_overhead(pair, algorithm: str, prompts: list[Any], max_new_tokens: int, rounds: int = 5,
                   record_top_k: int = 8) -> dict[str, float]:
    """``{"trace_overhead", "full_s", "off_s"}`` (medians) for greedy ``algorithm`` on ``prompts``."""
    import specviz

    def run(k: int) -> float:
        start = time.perf_counter()
        for prompt in prompts:
            specviz.decode(pair, algorithm, prompt, max_new_tokens=max_new_tokens, temperature=0, record_top_k=k)
        return time.perf_counter() - start

    run(record_top_k), run(0)  # warm-up
    ratios, full, off = [], [], []
    for i in range(rounds):
        order = (record_top_k, 0) if i % 2 == 0 else (0, record_top_k)
        got = {k: run(k) for k in order}
        full.append(got[record_top_k])
        off.append(got[0])
        ratios.append(got[record_top_k] / got[0] - 1)
    return {"trace_overhead": statistics.median(ratios), "full_s": statistics.median(full),
            "off_s": statistics.median(off)}
