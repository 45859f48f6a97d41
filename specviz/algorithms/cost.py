"""What one run may read, for the public cost cap (``ui.budget``): the vocabulary each algorithm's
registration (``register(..., cost=...)``) prices itself with, as a function of its resolved parameters.

The unit is a *token position*: one token the target or the draft reads in one call, summed over a
run's steps (``StepRecord.target_fed`` plus ``draft_fed``); the prompt's prefill is left out. A bound
is an upper bound for the worst case of every parameter, not a prediction; ``tests/test_budget_bound.py``
runs every registered algorithm under every controller it declares and checks no run reads more.

A step commits at least one token, so a run of ``steps`` new tokens has at most ``steps`` steps. A
tree of n draft nodes is verified in one target call of at most ``1 + n`` tokens, and the draft reads
at most ``n + 1``. A chain is cut to the tokens still allowed (a step with r tokens left drafts at most
``r - 1``), so its worst case is a run that drafts its longest chain every step and has its first draft
rejected: the sum over r of ``2 min(L, r - 1) + 1`` (``chain_positions``), L the longest chain a step
may draft, its draft-length controller's own cap (``chain_length``).

Pure Python, no model stack: the page prices a run before anything loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Cost:
    positions: int  # token positions, the worst case (the one-off ``once`` included)
    parameter: str  # the parameter (or parameters) that makes it large, as shown in the message
    detail: str  # how the number comes about, e.g. "size 512 (512 positions a step) x 128 new tokens"
    advice: str = ""  # what to change, when lowering ``parameter`` is not it (a controller without a cap)
    once: int = 0  # positions read once before the first step (Sequoia's calibration, timing, DP)
    once_parameter: str = ""  # the parameter that sets ``once``
    once_detail: str = ""  # how ``once`` comes about


def int_param(params: dict[str, Any], name: str) -> int:
    """``params[name]`` as a whole number >= 0 (0 when missing: ``ui.budget`` fills in the declared
    defaults, and replaces a value that is not a number by its default, before pricing)."""
    try:
        return max(0, int(params.get(name, 0)))
    except (TypeError, ValueError, OverflowError):
        return 0


def per_step(positions: int, parameter: str, steps: int, models: int = 2) -> Cost:
    """A run whose every step reads at most ``positions`` tokens in each of ``models`` models (1: the
    target alone, nothing drafted by a model)."""
    per = positions * models
    return Cost(per * steps, parameter, f"{parameter} ({per} positions a step) x {steps} new tokens")


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


def chain_length(params: dict[str, Any], steps: int) -> tuple[int | None, str]:
    """The longest chain one step may draft (None: no cap but the tokens left) and the parameter that
    sets it, under the draft-length controller ``params["controller"]`` (``static``: ``gamma``):
    ``fixed_length``; ``num_assistant_tokens`` for ``confidence`` / ``adaptive``; for ``heuristic``
    (+2 after a fully accepted draft) the longest length its full accepts can reach within the run's
    tokens; none for ``beta_ts``, ``cali_ts`` (a coin after every token) or a controller not known
    here; and ``k_max`` caps every one of them."""
    controller = str(params.get("controller", "static"))
    if controller == "static":
        length, name = max(1, int_param(params, "gamma")), "gamma"
    elif controller == "fixed":
        length, name = max(1, int_param(params, "fixed_length")), "fixed_length"
    elif controller in ("confidence", "adaptive"):
        length, name = max(1, int_param(params, "num_assistant_tokens")), "num_assistant_tokens"
    elif controller == "heuristic":
        start = max(1, int_param(params, "num_assistant_tokens"))
        length, name = heuristic_reach(start, steps), "num_assistant_tokens"
    else:  # beta_ts, cali_ts, and any controller not known here: the tokens left are the only cap
        length, name = None, "k_max"
    k_max = int_param(params, "k_max") if controller != "static" else 0
    if k_max and (length is None or k_max < length):
        length, name = k_max, "k_max"
    return length, name


def chain_positions(length: int | None, steps: int) -> int:
    """Both models' positions of a chain run of ``steps`` new tokens whose steps draft at most
    ``length`` tokens (None: any number): sum over r = 1..steps of 2 min(length, r - 1) + 1."""
    cap = steps - 1 if length is None else min(length, steps - 1)
    drafted = cap * (cap - 1) // 2 + (steps - cap) * cap  # sum over r of min(cap, r - 1)
    return 2 * drafted + steps


def chain_cost(params: dict[str, Any], steps: int) -> Cost:
    """A chain drafted by a model and cut to the tokens still allowed, its length ``gamma`` or its
    controller's (``chain_length``)."""
    length, name = chain_length(params, steps)
    longest = steps - 1 if length is None else min(length, steps - 1)
    if length is None:
        detail = (
            f"controller {params.get('controller')} without k_max (up to {2 * longest + 1} positions "
            f"a step, drafts up to the tokens left) x {steps} new tokens"
        )
        return Cost(
            chain_positions(None, steps), name, detail, "Set k_max (a cap on tokens a round) or lower max new tokens."
        )
    return Cost(
        chain_positions(length, steps),
        name,
        f"{name} {length} (up to {2 * longest + 1} positions a step) x {steps} new tokens",
    )


def k_config_cost(params: dict[str, Any], steps: int) -> Cost:
    """A fixed ``k_config`` tree (``mcsd``, ``specinfer``): 1 + its nodes a step in each model."""
    from specviz.core.trees import k_config_size, parse_k_config

    try:
        nodes = k_config_size(parse_k_config(params.get("k_config")))
    except Exception:  # noqa: BLE001 - an invalid k_config is refused by the run itself, with its message
        nodes = 1
    return per_step(1 + nodes, "k_config", steps)
