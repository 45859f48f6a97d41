"""transformers' draft-length controllers on ``sd`` and ``eesd`` (``length_controllers``): greedy
equality with ``ar``, the target's law at T = 1, and each step's record checked against the rule it
states, recomputed from the trace's own nodes.

Exactness power: ``confidence`` is the controller whose stop depends on the drafted token itself (its
draft probability q), which is still exact since the decision to draft on reads only what the draft
has drawn. The pair and 4000 runs are ``test_eesd``'s design for ``sd`` with Beta-TS; with
``num_assistant_tokens=2`` and a threshold of 0.1 the first step drafts two tokens in 81% of runs,
so both output tokens go through the rule. Measured when the test was written, same 4000 seeds: the
exact rule p = 0.55; a 20% over-acceptance (``tiny.over_accept(1.2)``) p = 7e-13 and a 10% one
p = 4e-4, both flagged at the 1e-3 threshold.
"""

from __future__ import annotations

import os

import pytest
from test_eesd import ee_pair, out
from tiny import FAMILIES, exact_distribution, goodness_of_fit, sample_counts, tiny_pair

import specviz
from specviz.core import draft_length as dl
from specviz.core.sampling import SamplingConfig
from specviz.trace import DRAFTED

RUNS = int(os.environ.get("SPECVIZ_EXACTNESS_RUNS", 4000))
PROMPT = [1, 2, 3]
ENGINE = ("heuristic", "confidence", "adaptive")


@pytest.mark.parametrize("family", FAMILIES)
def test_sd_greedy_equals_ar_under_every_engine_controller(family):
    pair = tiny_pair(family, vocab=64, draft="noisy", init_range=0.05, hidden=32)
    ar = out(specviz.decode(pair, "ar", [5, 9, 2, 7], max_new_tokens=40, temperature=0))
    for controller in ENGINE:
        tr = specviz.decode(
            pair,
            "sd",
            [5, 9, 2, 7],
            max_new_tokens=40,
            temperature=0,
            controller=controller,
            num_assistant_tokens=5,
            seed=3,
        )
        assert out(tr) == ar and tr.lossless, controller
        assert any(s.n_drafted > s.n_accepted for s in tr.steps)  # rejections happened


@pytest.mark.parametrize("controller", ENGINE)
def test_eesd_greedy_equals_ar(controller):
    pair = ee_pair("llama")
    ar = out(specviz.decode(pair, "ar", [5, 9, 2, 7], max_new_tokens=40, temperature=0))
    tr = specviz.decode(
        pair,
        "eesd",
        [5, 9, 2, 7],
        max_new_tokens=40,
        temperature=0,
        controller=controller,
        num_assistant_tokens=4,
        seed=3,
    )
    assert out(tr) == ar
    assert all(s.controller.to_json()["kind"] == controller for s in tr.steps)


@pytest.mark.slow
def test_sd_with_the_confidence_stop_follows_the_target_law():
    pair = tiny_pair("llama", vocab=8)
    sampling = SamplingConfig(1.0)
    law = exact_distribution(pair, PROMPT, 2, sampling)
    counts = sample_counts(
        pair,
        "sd",
        PROMPT,
        2,
        RUNS,
        sampling,
        budget=3,
        controller="confidence",
        num_assistant_tokens=2,
        confidence_threshold=0.1,
    )
    assert goodness_of_fit(counts, law) > 1e-3


def _drafted(step):
    """A chain's drafted nodes in order, with their q and whether they were accepted."""
    nodes = sorted((n for n in step.forest if n.status in DRAFTED), key=lambda n: n.depth)
    return [n.q for n in nodes], sum(n.status == "accepted" for n in nodes)


def _trace(controller, **params):
    pair = tiny_pair("llama", vocab=8, draft="noisy", init_range=0.5, noise=0.3)
    return specviz.decode(
        pair, "sd", PROMPT, max_new_tokens=80, temperature=1.0, seed=5, controller=controller, **params
    )


def test_the_heuristic_schedule_moves_plus_two_and_minus_one():
    tr = _trace("heuristic", num_assistant_tokens=3)
    length = 3
    for step in tr.steps:
        st = step.controller.to_json()
        qs, accepted = _drafted(step)
        assert st["length"] == length and len(qs) <= length
        if st["stop_reason"] == "length":
            assert len(qs) == length
        length = dl.heuristic_length(length, len(qs), accepted)
        assert st["after"]["length"] == length
    states = [s.controller for s in tr.steps]
    grew = [c for c in states if c.update and c.update.length_after > c.before.length]
    shrank = [c for c in states if c.update and c.update.length_after < c.before.length]
    assert grew and shrank


def test_the_confidence_stop_ends_each_draft_at_the_first_unsure_token():
    tr = _trace("confidence", num_assistant_tokens=3, confidence_threshold=0.3)
    reasons = set()
    for step in tr.steps:
        qs, _ = _drafted(step)
        reason = step.controller.to_json()["stop_reason"]
        reasons.add(reason)
        assert all(q >= 0.3 for q in qs[:-1])  # every token before the last was confident
        if reason == "low_confidence":
            assert qs[-1] < 0.3
        elif reason == "length":
            assert len(qs) == 3 and qs[-1] >= 0.3
    assert {"low_confidence", "length"} <= reasons


def test_the_adaptive_threshold_is_the_roc_optimum_of_every_verified_token():
    tr = _trace("adaptive", num_assistant_tokens=6, confidence_threshold=0.4)
    probs, matches, threshold = [], [], 0.4
    for step in tr.steps:
        st = step.controller.to_json()
        assert st["threshold"] == round(threshold, 5)
        qs, accepted = _drafted(step)
        if not qs:
            continue
        p, m = dl.verified_samples(qs, accepted)
        probs, matches = probs + p, matches + m
        threshold = min(dl.roc_threshold(probs, matches, threshold), 1.01)
        assert st["update"]["threshold_after"] == round(threshold, 5)
    assert len({s.controller.to_json()["threshold"] for s in tr.steps}) > 2  # it moved


def test_a_public_host_prices_a_confidence_round_at_its_cap():
    from specviz.ui.budget import chain_positions, run_cost

    cost = run_cost("sd", {"controller": "confidence", "num_assistant_tokens": 12, "drafter": "model"}, 40)
    assert (cost.positions, cost.parameter) == (chain_positions(12, 40), "num_assistant_tokens")
    assert run_cost(
        "sd", {"controller": "static", "gamma": 3, "num_assistant_tokens": 40, "drafter": "model"}, 10
    ).positions == chain_positions(3, 10)
