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

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch

from specviz.bench import timing
from specviz.core.trees import ROOT
from specviz.models.tree_forward import CachedLM
from specviz.trace import RunTrace, StepRecord

QUICK_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
FULL_SIZES = tuple(range(1, 129))


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def round_robin_ms(
    calls: dict[Any, Callable[[], Any]],
    device: torch.device,
    rounds: int,
    before: dict[Any, Callable[[], Any]] | None = None,
    threads: int | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[Any, float]:
    """Median milliseconds of each call, timed round-robin by the shared routine (``timing.rounds``:
    one of each per round, after a warm-up round) so that a machine's drift in speed hits every call
    alike and their ratios hold. Each timed call follows an untimed one: ``before[name]`` where given,
    else the same call, so that it finds its weights as warm in the caches as in a run of calls, not
    evicted by the previous (different) call."""
    before = before or {}
    timings, _, _ = timing.time_calls(
        calls,
        rounds,
        threads=threads,
        device=str(device),
        clock=clock,
        before={name: before.get(name, fn) for name, fn in calls.items()},
        sync=(lambda: _sync(device)) if device.type == "cuda" else None,
    )
    return {name: 1000 * t.median for name, t in timings.items()}


def _chain_call(lm: CachedLM, tokens: list[int]) -> Callable[[], None]:
    """One forward of ``tokens`` as a chain after ``lm``'s prefix, rolled back (every call sees the same cache)."""
    chain = [ROOT] + list(range(len(tokens) - 1))

    def call() -> None:
        lm.forward(tokens, chain)
        lm.rollback()

    return call


def _primed(
    model, vocab_size: int | None, prefix: int, lean: bool | None = None, lm: CachedLM | None = None
) -> tuple[CachedLM, list[int]]:
    """A ``CachedLM`` (``lm``, or a new one on ``model``) with ``prefix`` random tokens cached, and 128
    more random ids to feed it (the same ids for the same ``prefix``)."""
    lm = lm or CachedLM(model, vocab_size, lean=lean)
    gen = torch.Generator().manual_seed(0)
    rows = vocab_size or model.config.get_text_config().vocab_size
    ids = torch.randint(0, rows, (prefix + max(FULL_SIZES),), generator=gen).tolist()
    lm.extend(ids[:prefix])
    lm.commit([])
    return lm, ids[prefix:]


def forward_times(
    model, sizes: tuple[int, ...] = QUICK_SIZES, prefix: int = 32, repeats: int = 5, vocab_size: int | None = None
) -> dict[int, float]:
    """Milliseconds of one ``CachedLM`` forward of ``n`` new tokens (a chain) after a cached ``prefix``
    of ``prefix`` tokens, for every n in ``sizes``: the exact call the engine makes (mask, positions,
    cache append), rolled back after each call; sizes timed round-robin, ``repeats`` rounds."""
    lm, ids = _primed(model, vocab_size, prefix)
    return round_robin_ms({n: _chain_call(lm, ids[:n]) for n in sizes}, lm.device, repeats)


def early_exit_times(
    pair, sizes: tuple[int, ...] = QUICK_SIZES, prefix: int = 32, repeats: int = 5
) -> dict[int, float]:
    """``forward_times`` of EESD's drafter: the early-exit model (the target's first layers, the exit
    layer and head) reading the trunk KV of a target cache holding the same ``prefix``, the call
    ``EarlyExitDrafter`` makes."""
    from specviz.models.early_exit import EarlyExitLM

    target, _ = _primed(pair.target, pair.vocab_size, prefix)
    lm, ids = _primed(None, pair.vocab_size, prefix, lm=EarlyExitLM(pair.early_exit, pair.vocab_size, share=target))
    return round_robin_ms({n: _chain_call(lm, ids[:n]) for n in sizes}, lm.device, repeats)


def feature_times(pair, sizes: tuple[int, ...] = QUICK_SIZES, prefix: int = 32, repeats: int = 5) -> dict[int, float]:
    """``forward_times`` of the feature drafter (``models.feature_head.FeatureLM``): its one layer and
    cut head after ``prefix`` committed rows read from a target cache holding their features, then n
    sibling nodes reading its own output feature: the call ``ModelDrafter`` makes one level deeper."""
    from specviz.models.feature_head import FeatureLM

    head = pair.feature
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, pair.vocab_size, (prefix + 1 + max(FULL_SIZES),), generator=gen).tolist()
    target = CachedLM(pair.target, pair.vocab_size, features=head.cfg.layers)
    target.extend(ids[:prefix])
    target.commit([])
    lm = FeatureLM(head, target, pair.target.get_input_embeddings().weight, pair.vocab_size)
    lm.extend(ids[: prefix + 1])

    def level(tokens: list[int]) -> Callable[[], None]:  # n siblings: a node reads its parent's output feature,
        def call() -> None:  # so one call feeds one tree level, never a chain
            lm.forward(tokens, [ROOT] * len(tokens))
            lm.rollback()

        return call

    return round_robin_ms({n: level(ids[prefix + 1 : prefix + 1 + n]) for n in sizes}, lm.device, repeats)


def switch_ms(pair, prefix: int = 32, rounds: int = 100) -> dict[str, float]:
    """What alternating the two models costs on top of t(n): the extra milliseconds of a one-token call
    that follows a call of the other model over one that follows a call of its own
    (``draft_after_target``, ``target_after_draft``; at least 0). On a CPU the other model's call
    evicts part of this one's weights from the caches; t(n) is timed warm. Each timed call follows
    an untimed one of the chosen model, the four orders taken round-robin, medians over ``rounds``."""
    target, ids_t = _primed(pair.target, pair.vocab_size, prefix)
    draft, ids_d = _primed(pair.draft, pair.vocab_size, prefix)
    t, d = _chain_call(target, ids_t[:1]), _chain_call(draft, ids_d[:1])
    # timed call, and the untimed call before it: target after target, target after draft, ...
    med = round_robin_ms(
        {"tt": t, "dt": t, "dd": d, "td": d}, target.device, rounds, before={"tt": t, "dt": d, "dd": d, "td": t}
    )
    return {
        "draft_after_target": max(0.0, med["td"] - med["dd"]),
        "target_after_draft": max(0.0, med["dt"] - med["tt"]),
    }


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


def one_token_calls(pair, prefix: int = 32, rounds: int = 200) -> dict[str, float]:
    """Median milliseconds of the one-token calls the bench reports, timed round-robin: target and
    draft through ``CachedLM`` (``target_call``, ``draft_call``: the lean forward where the model has
    one), the same through the stock ``transformers`` forward (``stock_...``), and the target's bare
    matmuls (``bare_matmul``)."""
    calls: dict[str, Callable[[], None]] = {"bare_matmul": _bare_matmuls(pair.target)}
    for role, model in (("target", pair.target), ("draft", pair.draft)):
        if model is not None:
            for kind, lean in (("", True), ("stock_", False)):
                lm, ids = _primed(model, pair.vocab_size, prefix, lean)
                calls[f"{kind}{role}_call"] = _chain_call(lm, ids[:1])
    return round_robin_ms(calls, pair.device, rounds)


def interpolate(times: dict[int, float], n: float) -> float:
    """t(n) by linear interpolation between measured sizes (clamped to the measured range's ends,
    extrapolated linearly beyond the largest)."""
    xs = sorted(times)
    if n > xs[-1] and len(xs) > 1:
        a, b = xs[-2], xs[-1]
        return times[b] + (n - b) * (times[b] - times[a]) / (b - a)
    return float(np.interp(n, xs, [times[x] for x in xs]))


def _priced(t: dict[int, float], fed: list[int], prefill: int) -> float:
    """Milliseconds of calls that fed ``fed`` tokens each, ``prefill`` prompt tokens taken off the first."""
    return sum(interpolate(t, max(1, n - (prefill if i == 0 else 0))) for i, n in enumerate(fed))


def step_cost(
    step: StepRecord,
    t_target: dict[int, float],
    t_draft: dict[int, float] | None,
    prefill: int = 0,
    switch: dict[str, float] | None = None,
) -> float:
    """Modelled milliseconds of one step: every forward it made priced at t(tokens it fed)
    (``StepRecord.target_fed`` / ``draft_fed``), ``prefill`` prompt tokens left out of each model's
    first call, plus ``switch`` (``switch_ms``) once each way when the step alternated a separate
    draft model and the target. Traces written before the sizes were recorded: a verify of
    ``1 + n_drafted`` tokens per target call and the drafted nodes spread evenly over the draft calls."""
    if step.target_fed:
        cost = _priced(t_target, step.target_fed, prefill)
    else:
        cost = interpolate(t_target, 1 + step.n_drafted) * max(step.target_calls, 1)
    if t_draft and step.draft_fed:
        cost += _priced(t_draft, step.draft_fed, prefill)
    elif t_draft and step.draft_calls:
        cost += step.draft_calls * interpolate(t_draft, max(1.0, step.n_drafted / step.draft_calls))
    if switch and step.draft_calls:
        cost += switch["draft_after_target"] + switch["target_after_draft"]
    return cost


def predicted_speedup(
    traces: list[RunTrace],
    t_target: dict[int, float],
    t_draft: dict[int, float] | None,
    switch: dict[str, float] | None = None,
) -> float:
    """Predicted speedup over ``ar`` of runs with these traces: ``ar`` time (one ``t_target(1)`` per
    token) over the modelled time of every step (``step_cost``; module docstring). The prompt's
    prefill is left out of both sides; ``t_draft`` is the drafter's own t(n) (the draft model's, or
    the early-exit drafter's for EESD) and ``switch`` what alternating it with the target adds
    (``switch_ms``; ``None`` for a drafter that is part of the target); drafters without forwards
    (``ar``, prompt lookup) cost nothing but their verify."""
    tokens, cost = 0, 0.0
    for trace in traces:
        tokens += len(trace.output_ids)
        for step in trace.steps:
            cost += step_cost(step, t_target, t_draft, len(trace.prompt_ids) - 1 if step.n_before == 0 else 0, switch)
    return tokens * interpolate(t_target, 1) / cost if cost else 0.0


def chain_speedup(
    t_target: dict[int, float],
    t_draft: dict[int, float] | None,
    gamma: int,
    tau: float,
    switch: dict[str, float] | None = None,
) -> float:
    """Chain SD's modelled speedup at draft length ``gamma`` for ``tau`` tokens a step (Leviathan et
    al. 2023, Sec. 3.3): ``tau * t_target(1)`` over ``gamma`` one-token draft calls, one verify of
    ``gamma + 1`` tokens and, for a separate draft model, the cost of switching models."""
    step = gamma * interpolate(t_draft, 1) if t_draft else 0.0
    step += interpolate(t_target, gamma + 1) + (sum(switch.values()) if switch else 0.0)
    return tau * interpolate(t_target, 1) / step


def ceiling(
    t_target: dict[int, float],
    t_draft: dict[int, float] | None,
    gammas=range(1, 17),
    switch: dict[str, float] | None = None,
) -> dict[str, float]:
    """The cost model's limit for chain SD with this pair on this machine: a draft that is always
    right (tau = gamma + 1), at the draft length where that pays most."""
    best = max(gammas, key=lambda g: chain_speedup(t_target, t_draft, g, g + 1, switch))
    return {"gamma": best, "speedup": chain_speedup(t_target, t_draft, best, best + 1, switch)}


# ---- the cost model of a set of runs, here and on a GPU (issue 34: the verdict under every result) ----


def drafter_key(trace: RunTrace) -> str | None:
    """Which t(n) prices ``trace``'s draft calls: ``"draft"`` (a separate draft model), ``"feature"``
    (the feature head), ``"early_exit"`` (EESD's drafter), or None (no drafter forwards: ``ar``,
    prompt lookup, beams), from ``RunTrace.drafter``."""
    kind = (trace.drafter or {}).get("kind")
    return {"draft_model": "draft", "feature": "feature", "early_exit": "early_exit"}.get(kind)


def _layers(model) -> int:
    return int(model.config.get_text_config().num_hidden_layers)


def _weights(module) -> int:
    return sum(p.numel() for p in module.parameters())


def gpu_draft_cost(pair, key: str | None) -> float | None:
    """The assumed cost of a ``key`` drafter's call as a share of a target call on a GPU at batch 1:
    the larger of its share of the decoder layers (the kernels launched, which set the time of models
    this small) and of the weights (the memory read, which sets it for large ones). None: no drafter."""
    layers = _layers(pair.target)
    if key == "draft" and pair.draft is not None:
        return max(_layers(pair.draft) / layers, _weights(pair.draft) / _weights(pair.target))
    if key == "feature" and pair.feature is not None:
        return max(1 / layers, _weights(pair.feature) / _weights(pair.target))
    if key == "early_exit" and pair.early_exit is not None:
        return (pair.early_exit.exit_layer + 1) / layers  # the first layers, the exit layer and a head
    return None


def gpu_speedup(traces: list[RunTrace], draft_cost: float | None) -> float:
    """``predicted_speedup`` on a GPU, a prediction: every call on n tokens costs what a one-token call
    does (t(n) = t(1): at batch 1 the weights are read once per call whatever n, for the n a run feeds),
    a draft call ``draft_cost`` of a target call (``gpu_draft_cost``), no cost for switching models."""
    return predicted_speedup(traces, {1: 1.0}, {1: draft_cost} if draft_cost is not None else None)


@dataclass(frozen=True)
class Prediction:
    """The cost model's speed-up over ``ar`` for one method's runs: ``here`` from t(n) timed on this
    machine, ``gpu`` on a GPU (``gpu_speedup``, with ``gpu_draft_cost`` a draft call's assumed share of a
    target call); ``tau`` tokens per target call, ``target_ms`` and ``draft_ms`` the one-token calls here."""

    here: float
    gpu: float
    tau: float | None
    gpu_draft_cost: float | None
    target_ms: float
    draft_ms: float | None
    drafter: str | None


def call_sizes(largest: int) -> tuple[int, ...]:
    """The sizes n whose t(n) a prediction times: 1, the powers of two below ``largest``, and
    ``largest`` itself (at most the largest of ``QUICK_SIZES``; between two it interpolates)."""
    top = max(1, min(largest, QUICK_SIZES[-1]))
    return tuple(sorted({1, top} | {n for n in QUICK_SIZES if n < top}))


def _largest_priced(traces: list[RunTrace], role: str) -> int:
    """The most tokens any ``role`` call of these runs is priced at (``step_cost``: a run's first calls
    without the prompt's prefill)."""
    sizes = [1]
    for trace in traces:
        for step in trace.steps:
            prefill = len(trace.prompt_ids) - 1 if step.n_before == 0 else 0
            fed = step.target_fed if role == "target" else step.draft_fed
            if role == "target" and not fed:
                fed, prefill = [1 + step.n_drafted], 0
            sizes += [max(1, n - (prefill if i == 0 else 0)) for i, n in enumerate(fed)]
    return max(sizes)


def predictions(
    pair, runs: dict[Any, list[RunTrace]], rounds: int = 7, threads: int | None = None
) -> dict[Any, Prediction]:
    """``Prediction`` of each method's runs (``runs``: method -> its traces): t(n) of the target and of
    each drafter the runs used, timed here at ``call_sizes`` up to the largest call they made, after
    as many cached tokens as their mean context, ``rounds`` rounds (``round_robin_ms``); ``switch_ms``
    (``2 * rounds``: a difference of two medians needs more) where a separate draft model ran. The
    work is bounded: at most 8 sizes of at most 128 tokens per model."""
    traces = [t for ts in runs.values() for t in ts]
    if not traces:
        return {}
    keys = {drafter_key(t) for t in traces} - {None}
    prefix = round(sum(len(t.prompt_ids) + len(t.output_ids) / 2 for t in traces) / len(traces))
    with timing.torch_threads(threads):
        t_target = forward_times(
            pair.target, call_sizes(_largest_priced(traces, "target")), prefix, rounds, pair.vocab_size
        )
        drafts = call_sizes(_largest_priced(traces, "draft"))
        t_drafts: dict[str, dict[int, float]] = {}
        if "draft" in keys:
            t_drafts["draft"] = forward_times(pair.draft, drafts, prefix, rounds, pair.vocab_size)
        if "early_exit" in keys:
            t_drafts["early_exit"] = early_exit_times(pair, drafts, prefix, rounds)
        if "feature" in keys:
            t_drafts["feature"] = feature_times(pair, drafts, prefix, rounds)
        switch = switch_ms(pair, prefix, 2 * rounds) if "draft" in keys else None
    out = {}
    for name, ts in runs.items():
        key = drafter_key(ts[0]) if ts else None
        calls = sum(int(t.metrics.get("target_calls", 0)) for t in ts if t.metrics)
        tokens = sum(len(t.output_ids) for t in ts)
        cost = gpu_draft_cost(pair, key)
        out[name] = Prediction(
            here=predicted_speedup(ts, t_target, t_drafts.get(key), switch if key == "draft" else None),
            gpu=gpu_speedup(ts, cost),
            tau=tokens / calls if calls else None,
            gpu_draft_cost=cost,
            target_ms=interpolate(t_target, 1),
            draft_ms=interpolate(t_drafts[key], 1) if key in t_drafts else None,
            drafter=key,
        )
    return out
