"""The cost model on the running hardware: forward time t(n) of a model fed n new tokens in one
pass, one-token call times, the bare matmul floor, and each run's predicted speedup.

The prediction follows the wall-time analysis of "Fast Inference from Transformers via Speculative
Decoding" (Leviathan et al. 2023, Sec. 3.3, Theorem 3.8: improvement = expected tokens per step /
cost of a step), with the cost measured instead of modelled: a step that verifies ``m`` drafted
nodes costs ``t_target(1 + m)`` plus its draft calls at ``t_draft(nodes per call)``, while ``ar``
pays ``t_target(1)`` per token. On a memory-bound GPU t(n) is flat in n for small n, so wide trees
are nearly free; on a CPU t(n) grows with n and a tree pays for its width.
"""
from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import numpy as np
import torch

from specviz.core.trees import ROOT
from specviz.models.tree_forward import CachedLM
from specviz.trace import RunTrace

QUICK_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
FULL_SIZES = tuple(range(1, 129))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _median_ms(fn: Callable[[], Any], repeats: int, device: torch.device) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append(1000 * (time.perf_counter() - start))
    return statistics.median(times)


def forward_times(model, sizes: tuple[int, ...] = QUICK_SIZES, prefix: int = 32, repeats: int = 5,
                  vocab_size: int | None = None) -> dict[int, float]:
    """Milliseconds of one ``CachedLM`` forward of ``n`` new tokens (a chain) after a cached ``prefix``
    of ``prefix`` tokens, for every n in ``sizes``: the exact call the engine makes (mask, positions,
    cache append), rolled back after each call so every call sees the same cache."""
    lm = CachedLM(model, vocab_size)
    gen = torch.Generator().manual_seed(0)
    rows = vocab_size or model.config.get_text_config().vocab_size
    ids = torch.randint(0, rows, (prefix + max(sizes),), generator=gen).tolist()
    lm.extend(ids[:prefix])
    lm.commit([])
    out: dict[int, float] = {}
    for n in sizes:
        chain = [ROOT] + list(range(n - 1))

        def call() -> None:
            lm.forward(ids[prefix:prefix + n], chain)
            lm.rollback()

        out[n] = _median_ms(call, repeats, lm.device)
    return out


def _bare_matmuls(model) -> Callable[[], None]:
    """Every ``nn.Linear`` weight of ``model`` (lm head included) applied to one token as bare ``torch``
    matmuls: the arithmetic floor of a one-token forward, without any framework code."""
    weights = [m.weight for m in model.modules() if isinstance(m, torch.nn.Linear)]
    device, dtype = weights[0].device, weights[0].dtype
    xs = {w.shape[1]: torch.randn(1, w.shape[1], device=device, dtype=dtype) for w in weights}

    @torch.inference_mode()
    def call() -> None:
        for w in weights:
            torch.mm(xs[w.shape[1]], w.t())

    return call


def bare_matmul_ms(model, repeats: int = 20) -> float:
    """Milliseconds of ``_bare_matmuls(model)``."""
    return _median_ms(_bare_matmuls(model), repeats, next(model.parameters()).device)


def one_token_calls(calls: dict[str, Callable[[], Any]], device: torch.device, rounds: int = 200) -> dict[str, float]:
    """Median milliseconds of each named call, timed round-robin (one of each per round, after a
    warm-up round) so that a machine's drift in speed hits every call alike and their ratios hold."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(rounds + 1):
        for name, fn in calls.items():
            _sync(device)
            start = time.perf_counter()
            fn()
            _sync(device)
            if round_:
                times[name].append(1000 * (time.perf_counter() - start))
    return {name: statistics.median(t) for name, t in times.items()}


def call_benchmarks(pair, prefix: int = 32) -> dict[str, Callable[[], None]]:
    """The one-token calls the bench reports: target and draft through ``CachedLM`` (the lean forward
    where the model has one, else the stock forward), the same through the stock ``transformers``
    forward, and the target's bare matmuls."""
    calls: dict[str, Callable[[], None]] = {"bare_matmul": _bare_matmuls(pair.target)}
    models = {"target": pair.target, "draft": pair.draft}
    for role, model in models.items():
        if model is None:
            continue
        for kind, lean in (("", True), ("stock_", False)):
            lm = CachedLM(model, pair.vocab_size, lean=lean)
            lm.extend(list(range(1, prefix + 1)))
            lm.commit([])

            def call(lm: CachedLM = lm) -> None:
                lm.forward([1], [ROOT])
                lm.rollback()

            calls[f"{kind}{role}_call"] = call
    return calls


def interpolate(times: dict[int, float], n: float) -> float:
    """t(n) by linear interpolation between measured sizes (clamped to the measured range's ends,
    extrapolated linearly beyond the largest)."""
    xs = sorted(times)
    if n > xs[-1] and len(xs) > 1:
        a, b = xs[-2], xs[-1]
        return times[b] + (n - b) * (times[b] - times[a]) / (b - a)
    return float(np.interp(n, xs, [times[x] for x in xs]))


def predicted_speedup(traces: list[RunTrace], t_target: dict[int, float], t_draft: dict[int, float] | None) -> float:
    """Predicted speedup over ``ar`` of runs with these traces: ``ar`` time (one ``t_target(1)`` per
    token) over the modelled time of every step (module docstring). The prompt's prefill is left out
    of both sides; drafters without draft calls (``ar``, prompt lookup) cost nothing but their verify."""
    tokens, cost = 0, 0.0
    for trace in traces:
        tokens += len(trace.output_ids)
        for step in trace.steps:
            cost += interpolate(t_target, 1 + step.n_drafted) * max(step.target_calls, 1)
            if step.draft_calls and t_draft:
                per_call = max(1.0, step.n_drafted / step.draft_calls)
                cost += step.draft_calls * interpolate(t_draft, per_call)
    return tokens * interpolate(t_target, 1) / cost if cost else 0.0
