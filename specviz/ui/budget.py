"""What one run may cost in a public app (issue #21, docs/hosting.md), estimated from its parameters
before anything runs.

The unit is a *token position*: one token the target (or the draft) reads in one call. A run's cost
is the positions it may draft and verify per step times the steps it may take (at most one per new
token), plus what it pays once before the first step (Sequoia's calibration, timing and DP). The
estimate is an upper bound for the worst case of each parameter, not a prediction: it only has to
grow with what makes a run slow, so that a cap on it bounds a run's time on any pair.

``run_cost`` returns the estimate and the parameter that dominates it; ``cost_refusal`` is the
sentence a request over ``AppConfig.max_run_cost`` gets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from specviz.algorithms.registry import ALGORITHMS

TIMING_REPEATS = 6  # measure_times: a warm-up round and 5 timed rounds


@dataclass(frozen=True)
class Cost:
    positions: int        # token positions, the worst case
    parameter: str        # the parameter (or parameters) that makes it large, as shown in the message
    detail: str           # how the number comes about, e.g. "size 512 x 128 new tokens"


def _int(params: dict[str, Any], name: str, default: int = 0) -> int:
    value = params.get(name, default)
    try:
        return max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        return default


def _k_config_nodes(text: Any) -> int:
    from specviz.core.trees import k_config_size, parse_k_config

    try:
        return k_config_size(parse_k_config(text))
    except Exception:  # noqa: BLE001 - an invalid k_config is refused by the run itself, with its message
        return 1


def _timing_positions(size: int) -> int:
    from specviz.algorithms.sequoia_tune import SIZE_GRID

    sizes = {k for k in SIZE_GRID if k <= size} | {max(1, size)}
    return TIMING_REPEATS * sum(sizes)


def run_cost(algorithm: str, params: dict[str, Any], max_new_tokens: int) -> Cost:
    """The worst-case token positions of one run of ``algorithm`` with ``params`` (validated or raw:
    values that are not numbers count as their defaults) for ``max_new_tokens`` new tokens."""
    spec = ALGORITHMS.get(algorithm)
    given = dict(params or {})
    if spec is not None:
        full = {p.name: p.default for p in spec.params}
        full.update(given)
        params = spec.effective(full)
    else:
        params = given
    steps = max(1, int(max_new_tokens))
    per_step, name = 1, "max new tokens"
    once, once_name, once_detail = 0, "", ""
    if algorithm in ("mcsd", "specinfer"):
        per_step, name = 1 + _k_config_nodes(params.get("k_config")), "k_config"
    elif algorithm == "sequoia":
        size, depth = max(1, _int(params, "size", 32)), max(1, _int(params, "depth", 8))
        per_step, name = size, "size"
        if str(params.get("acceptance", "auto")).strip().lower() == "auto":
            width, calib = max(1, _int(params, "width", 16)), _int(params, "calibration_steps", 64)
            once, once_name = calib * (width + 1), "calibration_steps x width"
            once_detail = f"calibration_steps {calib} x (width {width} + 1)"
        dp = math.ceil(size * size * min(depth, size) / 1024)
        if dp > once:
            once, once_name, once_detail = dp, "size and depth", f"the DP for size {size}, depth {depth}"
        if params.get("hardware_aware") is True:
            timing = _timing_positions(size)
            if timing > once:
                once, once_name, once_detail = timing, "size (hardware_aware)", f"timing sizes up to {size}"
    elif algorithm == "dyntree":
        per_step, name = 1 + max(1, _int(params, "nodes", 31)), "nodes"
    elif algorithm == "dsbd":
        width, gamma = max(1, _int(params, "width", 4)), max(1, _int(params, "gamma", 3))
        per_step, name = width * (gamma + 1), "width x gamma"
    elif algorithm == "batch_sd":
        drafts, gamma = max(1, _int(params, "num_drafts", 4)), max(1, _int(params, "gamma", 4))
        per_step, name = drafts * (gamma + 1), "num_drafts x gamma"
    elif algorithm == "beam":
        per_step, name = max(1, _int(params, "width", 4)), "width"
    else:  # chains: sd, eesd, biased_sd, pld, ...: the longest draft a step may make
        lengths = {k: _int(params, k) for k in ("gamma", "fixed_length", "k_max", "num_tokens", "num_assistant_tokens")
                   if k in params}
        if lengths:
            name = max(lengths, key=lengths.get)
            per_step = 1 + lengths[name]
    total = per_step * steps + once
    detail = f"{name} ({per_step} positions a step) x {steps} new tokens"
    if once:
        detail += f" + {once_detail} ({once:,})"
        if once > per_step * steps:
            name = once_name
    return Cost(total, name, detail)


def cost_refusal(algorithm: str, params: dict[str, Any], max_new_tokens: int, cap: int | None) -> str | None:
    """The sentence for a run over ``cap`` token positions, or None (no cap, or within it)."""
    if cap is None:
        return None
    cost = run_cost(algorithm, params, max_new_tokens)
    if cost.positions <= cap:
        return None
    return (f"{algorithm}: {cost.detail} is about {cost.positions:,} token positions; this app allows "
            f"{cap:,} per algorithm. Lower {cost.parameter.replace(' x ', ' or ')} or max new tokens.")
