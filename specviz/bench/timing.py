"""Wall-clock timing shared by the benchmarks: the median of repeated calls after one warm-up call."""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Call ``fn`` once to warm up, then ``repeats`` times; return the median seconds and the last result."""
    fn()
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result
