"""What one run may cost in a public app (issue #21, docs/hosting.md), estimated from its parameters
before anything runs.

The unit is a *token position*: one token the target or the draft reads in one call. A run's cost
is every position both models may read, summed over its steps (``StepRecord.target_fed`` plus
``draft_fed``), plus what it pays once before the first step (Sequoia's calibration, timing and DP).
The prompt's prefill (its tokens in each model's first call) is left out: ``max_prompt_chars``
bounds it. The estimate is an upper bound for the worst case of every parameter, not a prediction:
``tests/test_budget_bound.py`` runs every algorithm under every controller with its largest and with
adversarial settings and checks that no run reads more than this.

Per step, a tree of n draft nodes is verified in one target call of at most ``1 + n`` tokens (the
last committed token and the nodes), and the draft reads at most ``n + 1`` (the tokens committed
since its last call, at most two, then every node with children); a step commits at least one
token, so there are at most ``max_new_tokens`` steps. A chain (``sd``, ``biased_sd``, ``eesd``) is
cut to the tokens still allowed (a step with r tokens left drafts at most ``r - 1``), so its worst
case is a run that drafts its longest chain every step and has its first draft rejected: the sum over
r of ``2 min(L, r - 1) + 1``. L, the longest chain a step may draft, is its controller's own cap:
``gamma``; ``fixed_length``; ``num_assistant_tokens`` for ``confidence`` / ``adaptive``; for
``heuristic`` (transformers' schedule, +2 after a fully accepted draft) the longest length its full
accepts can reach within the run's tokens; none for ``beta_ts``, ``cali_ts`` (a coin after every
token) or a controller this module does not know; and ``k_max`` caps every one of them.

A feature drafter (``drafter`` ``feature``, or ``auto`` on a pair with a feature head) reads the
tokens a step committed again, with the target's features (``models.feature_head.FeatureLM``): every
new token once more, at most ``max_new_tokens`` positions on top of the draft model's bound.

``run_cost`` returns the estimate and the parameter that dominates it; ``cost_refusal`` is the
sentence a request over ``AppConfig.max_run_cost`` gets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from specviz.algorithms.registry import ALGORITHMS

TIMING_REPEATS = 6  # measure_times: a warm-up round and 5 timed rounds
CHAINS = ("sd", "biased_sd", "eesd")  # a chain cut to the tokens still allowed, its length maybe a controller's
NO_DRAFT = ("ar", "pld", "beam")  # only the target reads tokens
LENGTH_PARAMS = ("gamma", "fixed_length", "k_max", "num_tokens", "num_assistant_tokens")


@dataclass(frozen=True)
class Cost:
    positions: int        # token positions, the worst case
    parameter: str        # the parameter (or parameters) that makes it large, as shown in the message
    detail: str           # how the number comes about, e.g. "size 512 x 128 new tokens"
    advice: str = ""      # what to change, when lowering ``parameter`` is not it (a controller without a cap)


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


def heuristic_reach(start: int, tokens: int) -> int:
    """The longest draft length transformers' heuristic schedule can reach from ``start`` within a run
    of ``tokens`` new tokens. Only a fully accepted draft raises it (+2), and one at length l commits
    l + 1 tokens; to end at L the last such draft was at length >= L - 2, the one before at >= L - 4,
    ..., so reaching L > start takes f = ceil((L - start) / 2) of them and at least
    sum_{j=1..f} (L + 1 - 2j) = f (L + 1) - f (f + 1) tokens."""
    length = max(1, start)
    while length < tokens:
        nxt = length + 1
        f = -(-(nxt - start) // 2)
        if f * (nxt + 1) - f * (f + 1) > tokens:
            break
        length = nxt
    return length


def _chain_length(params: dict[str, Any], steps: int) -> tuple[int | None, str]:
    """The longest chain one step may draft (None: no cap but the tokens left) and the parameter that
    sets it."""
    controller = str(params.get("controller", "static"))
    if controller == "static":
        length, name = max(1, _int(params, "gamma", 4)), "gamma"
    elif controller == "fixed":
        length, name = max(1, _int(params, "fixed_length", 5)), "fixed_length"
    elif controller in ("confidence", "adaptive"):
        length, name = max(1, _int(params, "num_assistant_tokens", 20)), "num_assistant_tokens"
    elif controller == "heuristic":
        start = max(1, _int(params, "num_assistant_tokens", 20))
        length, name = heuristic_reach(start, steps), "num_assistant_tokens"
    else:  # beta_ts, cali_ts, and any controller not known here: the tokens left are the only cap
        length, name = None, "k_max"
    k_max = _int(params, "k_max") if controller != "static" else 0
    if k_max and (length is None or k_max < length):
        length, name = k_max, "k_max"
    return length, name


def chain_positions(length: int | None, steps: int) -> int:
    """Both models' positions of a chain run of ``steps`` new tokens whose steps draft at most
    ``length`` tokens (None: any number): sum over r = 1..steps of 2 min(length, r - 1) + 1."""
    cap = steps - 1 if length is None else min(length, steps - 1)
    drafted = cap * (cap - 1) // 2 + (steps - cap) * cap  # sum over r of min(cap, r - 1)
    return 2 * drafted + steps


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
    steps = max(1, _int({"n": max_new_tokens}, "n", 1))
    models = 1 if algorithm in NO_DRAFT else 2  # the draft reads about what the target verifies
    per_step, name = 1, "max new tokens"
    once, once_name, once_detail = 0, "", ""
    total, detail, advice = None, "", ""
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
    elif algorithm in CHAINS:
        length, name = _chain_length(params, steps)
        total = chain_positions(length, steps)
        longest = steps - 1 if length is None else min(length, steps - 1)
        if length is None:
            detail = (f"controller {params.get('controller')} without k_max (up to {2 * longest + 1} positions "
                      f"a step, drafts up to the tokens left) x {steps} new tokens")
            advice = "Set k_max (a cap on tokens a round) or lower max new tokens."
        else:
            detail = f"{name} {length} (up to {2 * longest + 1} positions a step) x {steps} new tokens"
    else:  # other chains (pld, ...): the longest draft a step may make
        lengths = {k: _int(params, k) for k in LENGTH_PARAMS if k in params}
        if lengths:
            name = max(lengths, key=lengths.get)
            per_step = 1 + lengths[name]
    if total is None:
        per_step *= models
        total = per_step * steps
        detail = f"{name} ({per_step} positions a step) x {steps} new tokens"
    if params.get("drafter") in ("auto", "feature"):  # a feature drafter re-reads each committed token once
        total += steps
        detail += f" + {steps} re-read by the feature drafter"
    total += once
    if once:
        detail += f" + {once_detail} ({once:,})"
        if once > total - once:
            name, advice = once_name, ""
    return Cost(total, name, detail, advice)


def cost_refusal(algorithm: str, params: dict[str, Any], max_new_tokens: int, cap: int | None) -> str | None:
    """The sentence for a run over ``cap`` token positions, or None (no cap, or within it)."""
    if cap is None:
        return None
    cost = run_cost(algorithm, params, max_new_tokens)
    if cost.positions <= cap:
        return None
    advice = cost.advice or f"Lower {cost.parameter.replace(' x ', ' or ')} or max new tokens."
    return (f"{algorithm}: {cost.detail} is about {cost.positions:,} token positions; this app allows "
            f"{cap:,} per algorithm. {advice}")
