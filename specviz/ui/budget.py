"""What one run may cost in a public app (issue #21, docs/hosting.md), estimated from its parameters
before anything runs.

The unit is a *token position*: one token the target or the draft reads in one call (``algorithms.cost``).
Each algorithm prices itself: its registration's ``cost(params, steps)`` bounds what its steps read,
and what it pays once before the first step (Sequoia's calibration, timing and DP), for its declared
parameters; this module fills in the declared defaults, keeps only the parameters that apply, and adds
what does not depend on the algorithm. The prompt's prefill (its tokens in each model's first call) is
left out: ``max_prompt_chars`` bounds it. The estimate is an upper bound for the worst case of every
parameter, not a prediction: ``tests/test_budget_bound.py`` runs every algorithm under every controller
with its defaults, its largest and adversarial settings and checks that no run reads more than this.

A feature drafter (``drafter`` ``feature``, or ``auto`` on a pair with a feature head) reads the
tokens a step committed again, with the target's features (``models.feature_head.FeatureLM``): every
new token once more, at most ``max_new_tokens`` positions on top of the draft model's bound.

``run_cost`` returns the estimate and the parameter that dominates it; ``cost_refusal`` is the
sentence a request over ``AppConfig.max_run_cost`` gets.
"""

from __future__ import annotations

from typing import Any

from specviz.algorithms.cost import Cost, chain_positions, heuristic_reach, int_param, per_step
from specviz.algorithms.registry import ALGORITHMS, AlgorithmSpec

__all__ = ["Cost", "chain_positions", "cost_refusal", "heuristic_reach", "run_cost"]


def _priced(spec: AlgorithmSpec, given: dict[str, Any]) -> dict[str, Any]:
    """``spec``'s defaults overlaid with ``given``, an integer parameter given as something that is not a
    number counted as its default, and only the parameters that apply (``AlgorithmSpec.effective``)."""
    declared = {p.name: p for p in spec.params}
    full = spec.defaults
    for name, value in given.items():
        if name in declared and declared[name].kind == "int":
            try:
                int(value)
            except (TypeError, ValueError, OverflowError):
                continue
        full[name] = value
    return spec.effective(full)


def _unregistered(params: dict[str, Any], steps: int) -> Cost:
    """A name no algorithm registers (refused before it runs): the longest length parameter given."""
    lengths = {
        k: int_param(params, k)
        for k in ("gamma", "fixed_length", "k_max", "num_tokens", "num_assistant_tokens")
        if k in params
    }
    if not lengths:
        return per_step(1, "max new tokens", steps)
    name = max(lengths, key=lengths.get)
    return per_step(1 + lengths[name], name, steps)


def run_cost(algorithm: str, params: dict[str, Any], max_new_tokens: int) -> Cost:
    """The worst-case token positions of one run of ``algorithm`` with ``params`` (validated or raw:
    values that are not numbers count as their defaults) for ``max_new_tokens`` new tokens: the
    registration's ``cost``, a feature drafter's re-reading, and the one-off positions."""
    spec = ALGORITHMS.get(algorithm) if isinstance(algorithm, str) else None
    given = dict(params or {})
    steps = max(1, int_param({"n": max_new_tokens}, "n") or 1)
    params = _priced(spec, given) if spec is not None else given
    cost = spec.cost(params, steps) if spec is not None else _unregistered(params, steps)
    total, name, detail, advice = cost.positions, cost.parameter, cost.detail, cost.advice
    if params.get("drafter") in ("auto", "feature"):  # a feature drafter re-reads each committed token once
        total += steps
        detail += f" + {steps} re-read by the feature drafter"
    total += cost.once
    if cost.once:
        detail += f" + {cost.once_detail} ({cost.once:,})"
        if cost.once > total - cost.once:
            name, advice = cost.once_parameter, ""
    return Cost(total, name, detail, advice)


def cost_refusal(algorithm: str, params: dict[str, Any], max_new_tokens: int, cap: int | None) -> str | None:
    """The sentence for a run over ``cap`` token positions, or None (no cap, or within it)."""
    if cap is None:
        return None
    cost = run_cost(algorithm, params, max_new_tokens)
    if cost.positions <= cap:
        return None
    advice = cost.advice or f"Lower {cost.parameter.replace(' x ', ' or ')} or max new tokens."
    return (
        f"{algorithm}: {cost.detail} is about {cost.positions:,} token positions; this app allows "
        f"{cap:,} per algorithm. {advice}"
    )
