"""The public app's cost estimate (``ui.budget.run_cost``) is an upper bound on what a run reads.

Every registered algorithm, under every controller it declares, is run on a tiny pair with its
defaults, its largest settings (every integer parameter at its declared maximum) and adversarial ones (short
chains that are often fully accepted, so the draft catches up two tokens a step; a heuristic
schedule starting at 1 and growing; coins that always draft on; tiny caps), on a draft far from the
target (rejections) and one close to it (long accepted runs), greedy and sampled. The positions it
read (every call's tokens, ``StepRecord.target_fed`` plus ``draft_fed``, the prompt's prefill left
out) must never exceed ``run_cost``: an algorithm, controller or parameter added without a true bound
in its registration (``register(..., cost=...)``, ``algorithms.cost``) fails here instead of slipping
under a public cap.

Fast: vocabulary 16, a few new tokens, an explicit acceptance vector for Sequoia (its calibration is
priced by ``run_cost`` but runs before the steps)."""

from __future__ import annotations

import pytest
from tiny import tiny_pair, with_feature_head

import specviz
from specviz.models.loading import attach_early_exit
from specviz.ui.budget import chain_positions, cost_refusal, heuristic_reach, run_cost

PROMPT = [1, 2, 3]
TOKENS = (11,)
#: settings that are slow and change nothing the bound depends on (Sequoia's calibration and timing
#: run before the first step; its DP is priced as a one-off by run_cost), or a text that has no maximum
FAST = {
    "sequoia": {"acceptance": "0.6,0.2,0.1", "hardware_aware": False},
    "mcsd": {"k_config": "6x3x2"},
    "specinfer": {"k_config": "8x1x1x1"},
}
#: adversarial settings per algorithm, on top of its defaults (each controller's own are below)
ADVERSARIAL = {
    "sd": [{"gamma": 1}, {"gamma": 2}],
    "biased_sd": [{"gamma": 1, "eps": 1.0}],
    "batch_sd": [{"num_drafts": 1, "gamma": 1}],
    "dsbd": [{"width": 3, "gamma": 1, "min_width": 3, "dynamic": False}, {"width": 16, "min_width": 16, "gamma": 2}],
    "dyntree": [{"nodes": 3, "depth": 32, "topk": 1}],
    "mcsd": [{"k_config": "2x2", "replacement": True}],
    "specinfer": [{"k_config": "2x1"}],
    "sequoia": [{"size": 4, "depth": 4, "acceptance": "0.9,0.05"}],
    "pld": [{"num_tokens": 1, "max_ngram": 1}],
    "beam": [{"width": 1}],
}
CONTROLLER_SETTINGS = {
    "beta_ts": [{"alpha0": 1000.0, "beta0": 0.001}, {"alpha0": 1000.0, "beta0": 0.001, "k_max": 2}],
    "cali_ts": [{"theta_hat0": 1.0, "sigma_m": 0.001, "sigma_s": 0.001}, {"theta_hat0": 1.0, "k_max": 1}],
    "fixed": [{"fixed_length": 1}, {"fixed_length": 3, "k_max": 2}],
    "heuristic": [{"num_assistant_tokens": 1}, {"num_assistant_tokens": 2, "k_max": 5}],
    "confidence": [{"num_assistant_tokens": 3, "confidence_threshold": 0.0}, {"confidence_threshold": 0.0, "k_max": 4}],
    "adaptive": [{"num_assistant_tokens": 3, "confidence_threshold": 0.0}, {"confidence_threshold": 0.0}],
}


@pytest.fixture(scope="module")
def pairs():
    far = attach_early_exit(tiny_pair("llama", vocab=16), 1)
    close = attach_early_exit(tiny_pair("llama", vocab=16, draft="noisy", noise=0.01), 1)
    # drafter "auto" drafts with the feature head here: it re-reads every committed token
    feature = with_feature_head(attach_early_exit(tiny_pair("llama", vocab=16), 1), keep=12)
    return {"far": far, "close": close, "feature": feature}


def largest(spec) -> dict:
    """Every integer parameter at its declared maximum (the slow or unbounded ones as in ``FAST``)."""
    params = {p.name: int(p.max) for p in spec.params if p.kind == "int" and p.max is not None}
    params.update(FAST.get(spec.name, {}))
    if spec.check is not None:
        try:
            spec.resolve(params)
        except specviz.SpecvizError:  # e.g. dsbd's min_width <= width: both at their maximum are allowed
            pass
    return params


def controllers(spec) -> list:
    declared = [p for p in spec.params if p.name == "controller"]
    return list(declared[0].choices) if declared else [None]


def cases():
    for name, spec in specviz.ALGORITHMS.items():
        for controller in controllers(spec):
            extra = {} if controller is None else {"controller": controller}
            yield pytest.param(name, {**FAST.get(name, {}), **extra}, id=f"{name}-{controller or 'none'}-defaults")
            # only the settings that apply: one its controller ignores is refused (AlgorithmSpec.resolve)
            yield pytest.param(
                name, spec.effective({**largest(spec), **extra}), id=f"{name}-{controller or 'none'}-largest"
            )
            settings = (
                CONTROLLER_SETTINGS.get(controller, [])
                if controller not in (None, "static")
                else ADVERSARIAL.get(name, [])
            )
            for i, setting in enumerate(settings):
                yield pytest.param(name, {**setting, **extra}, id=f"{name}-{controller or 'none'}-{i}")


def read_positions(trace, prompt_len: int) -> int:
    """Tokens every call of the run fed, both models, less the prompt in each model's first call."""
    total = 0
    for key in ("target_fed", "draft_fed"):
        fed = [n for step in trace.steps for n in getattr(step, key)]
        total += sum(fed) - (min(prompt_len, fed[0]) if fed else 0)
    return total


@pytest.mark.parametrize("algorithm,params", list(cases()))
def test_no_run_reads_more_than_its_estimate(pairs, algorithm, params):
    for which, pair in pairs.items():
        for temperature in (0.0, 1.0):
            for tokens in TOKENS:
                trace = specviz.decode(
                    pair, algorithm, PROMPT, max_new_tokens=tokens, temperature=temperature, seed=tokens, **params
                )
                assert all(step.target_fed for step in trace.steps)  # recorded, so the sum is the real one
                read = read_positions(trace, len(PROMPT))
                cost = run_cost(algorithm, params, tokens)
                assert read <= cost.positions, (which, temperature, tokens, read, cost)


def test_every_declared_controller_is_run_here():
    """A controller added to an algorithm is exercised above (with its largest settings at least)."""
    for name, spec in specviz.ALGORITHMS.items():
        for controller in controllers(spec):
            if controller not in (None, "static"):
                assert controller in CONTROLLER_SETTINGS, (name, controller)


def test_controllers_without_a_cap_are_priced_at_the_tokens_left():
    """beta_ts and cali_ts draft until a coin says stop: only k_max or the tokens left bound a round
    (they were priced at one position a step); the heuristic schedule grows past its start."""
    for algorithm in ("sd", "eesd"):
        model = {"drafter": "model"} if algorithm == "sd" else {}  # a feature drafter re-reads: see below
        for controller in ("beta_ts", "cali_ts"):
            assert run_cost(algorithm, {"controller": controller, **model}, 128).positions == 128 * 128
            assert run_cost(
                algorithm, {"controller": controller, "k_max": 4, **model}, 128
            ).positions == chain_positions(4, 128)
        assert (
            run_cost(algorithm, {"controller": "heuristic", "num_assistant_tokens": 1}, 64).positions
            > run_cost(algorithm, {"controller": "confidence", "num_assistant_tokens": 1}, 64).positions
        )
    assert run_cost("sd", {"controller": "unknown_future_one", "drafter": "model"}, 32).positions == 32 * 32
    for drafter in ("feature", "auto"):  # each committed token read once more by the feature head
        assert run_cost("sd", {"gamma": 4, "drafter": drafter}, 32).positions == chain_positions(4, 32) + 32


def test_heuristic_reach_is_what_full_accepts_can_buy():
    # from 1: accepts at 1, 3, 5 cost 2 + 4 + 6 = 12 tokens and reach 7
    assert heuristic_reach(1, 12) >= 7 and heuristic_reach(20, 128) >= 30
    assert heuristic_reach(20, 5) == 20  # no full accept fits: the start (the chain is cut to the budget)
    assert chain_positions(None, 5) == 25 and chain_positions(1, 5) == 2 * 4 + 5


def test_an_uncapped_controller_is_refused_with_what_to_set():
    message = cost_refusal("eesd", {"controller": "beta_ts"}, 200, 16_384)
    assert message is not None and "Set k_max" in message and "16,384" in message
    assert cost_refusal("eesd", {"controller": "beta_ts", "k_max": 8}, 200, 16_384) is None
