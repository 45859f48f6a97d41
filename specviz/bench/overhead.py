"""``trace_overhead``: what recording the trace costs, measured in one process.

Decoding runs alternately with full recording (per-position distributions, ``record_top_k=8``) and
with recording off (``record_top_k=0``, the only optional part of a trace), and the overhead is the
median over rounds of ``time(full) / time(off) - 1``: pairing the two runs of one round cancels
most of the drift of a shared, loaded machine. ``recording_share`` is a second, drift-free estimate
from the full runs alone: the seconds spent inside ``position_record`` over the rest of the run."""
from __future__ import annotations

import statistics
import time
from typing import Any
from unittest import mock

from specviz.algorithms import tree_engine


def trace_overhead(pair, algorithm: str, prompts: list[Any], max_new_tokens: int, rounds: int = 5,
                   record_top_k: int = 8) -> dict[str, float]:
    """``{"trace_overhead", "recording_share", "full_s", "off_s"}`` (medians) for greedy ``algorithm`` on ``prompts``."""
    import specviz

    inside = [0.0]
    record = tree_engine.position_record

    def timed_record(*args: Any, **kwargs: Any):
        start = time.perf_counter()
        try:
            return record(*args, **kwargs)
        finally:
            inside[0] += time.perf_counter() - start

    def run(k: int) -> float:
        start = time.perf_counter()
        with mock.patch.object(tree_engine, "position_record", timed_record):
            for prompt in prompts:
                specviz.decode(pair, algorithm, prompt, max_new_tokens=max_new_tokens, temperature=0, record_top_k=k)
        return time.perf_counter() - start

    run(record_top_k), run(0)  # warm-up
    ratios, full, off, shares = [], [], [], []
    for i in range(rounds):
        order = (record_top_k, 0) if i % 2 == 0 else (0, record_top_k)
        inside[0] = 0.0
        got = {k: run(k) for k in order}
        shares.append(inside[0] / (got[record_top_k] - inside[0]))
        full.append(got[record_top_k])
        off.append(got[0])
        ratios.append(got[record_top_k] / got[0] - 1)
    return {"trace_overhead": statistics.median(ratios), "recording_share": statistics.median(shares),
            "full_s": statistics.median(full), "off_s": statistics.median(off)}
