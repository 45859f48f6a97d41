"""Budgets for a public app (issue #21, points 3 and 4; docs/hosting.md): bounded caches, a cost cap
on algorithm parameters, a per-run deadline that pacing and the page's reports count against, Measure
that stops with its client, bounded session state and export / upload quotas.

In-process and fast: time is driven by the Explorer's injected ``clock`` and ``pause``, never by the
machine's speed."""
from __future__ import annotations

import specviz
from specviz.algorithms.sequoia_tune import CACHE_CAPS, PairCache, pair_cache
from tiny import tiny_pair


# ---- (a) Sequoia's per-pair cache is a bounded LRU -------------------------------------------------------
def test_pair_cache_evicts_the_least_recently_used_of_a_kind():
    cache = PairCache({"dp": 2, "times": 1})
    cache[("dp", 1)] = "a"
    cache[("dp", 2)] = "b"
    assert cache.get(("dp", 1)) == "a"  # now the most recently used
    cache[("dp", 3)] = "c"
    assert ("dp", 2) not in cache and cache[("dp", 1)] == "a" and cache[("dp", 3)] == "c"
    cache[("times", 1)] = "t"
    cache[("times", 2)] = "u"
    assert cache.count("times") == 1 and cache.count("dp") == 2 and len(cache) == 3
    made = []
    assert cache.get_or_make(("dp", 3), lambda: made.append(1)) == "c" and not made


def test_sequoia_keeps_a_bounded_number_of_dp_tables_per_pair():
    pair = tiny_pair("llama", vocab=16)
    cap = CACHE_CAPS["dp"]
    for i in range(cap + 4):
        vec = f"{0.5 - i / 100:.2f},0.2,0.1"
        specviz.decode(pair, "sequoia", [1, 2, 3], max_new_tokens=2, size=6, depth=3, acceptance=vec)
    cache = pair_cache(pair)
    assert pair.extras["sequoia"] is cache
    assert cache.count("dp") == cap
    # the oldest vectors went first; the newest is still there (no recompute for a repeated request)
    assert not any(k[1][0] == 0.5 for k in cache._kinds["dp"])
    assert any(abs(k[1][0] - (0.5 - (cap + 3) / 100)) < 1e-12 for k in cache._kinds["dp"])
