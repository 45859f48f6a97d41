"""The serving engines' draft-length rules (``core.draft_length``), against transformers' definitions."""

from __future__ import annotations

import math
import random

from specviz.core import draft_length as dl


def test_heuristic_schedule_grows_by_two_after_a_full_accept_and_shrinks_by_one_otherwise():
    length, seen = 5, []
    for drafted, accepted in [(5, 5), (7, 7), (9, 3), (8, 0), (7, 6), (0, 0)]:
        length = dl.heuristic_length(length, drafted, accepted)
        seen.append(length)
    assert seen == [7, 9, 8, 7, 6, 6]
    assert dl.heuristic_length(1, 1, 0) == 1  # never below one


def test_confidence_stop_goes_on_at_the_threshold_and_stops_below_it():
    assert dl.confident(0.4, 0.4) and dl.confident(0.9, 0.4)
    assert not dl.confident(0.399, 0.4)


def test_verified_samples_keep_the_accepted_tokens_and_the_first_rejection():
    assert dl.verified_samples([0.9, 0.5, 0.2, 0.1], 2) == ([0.9, 0.5, 0.2], [1, 1, 0])
    assert dl.verified_samples([0.9, 0.5], 2) == ([0.9, 0.5], [1, 1])  # all accepted: no rejection
    assert dl.verified_samples([0.3, 0.2], 0) == ([0.3], [0])
    assert dl.verified_samples([], 0) == ([], [])


def _brute_threshold(probs, matches, current):
    """The definition, spelled out: every candidate threshold, its false-positive and false-negative
    rates counted directly, the cheapest, the highest on a tie."""
    pos = sum(matches)
    neg = len(matches) - pos
    if len(probs) < 6 or not pos or not neg:
        return current
    best = None
    for t in [math.inf] + sorted(set(probs), reverse=True):
        go = [p >= t for p in probs]
        fp = sum(1 for g, m in zip(go, matches) if g and not m)
        fn = sum(1 for g, m in zip(go, matches) if not g and m)
        cost = fp * pos + 3 * fn * neg  # (fp / neg + 3 fn / pos) x pos x neg
        if best is None or cost < best[0]:
            best = (cost, t)
    return best[1]


def test_roc_threshold_by_hand():
    # P = N = 3. Costs: inf 3, 0.9 2, 0.8 1, 0.7 4/3, 0.3 1/3, 0.2 2/3, 0.1 1: the cheapest is 0.3
    probs, matches = [0.9, 0.8, 0.7, 0.3, 0.2, 0.1], [1, 1, 0, 1, 0, 0]
    assert dl.roc_threshold(probs, matches, 0.4) == 0.3
    assert dl.roc_threshold(probs[:5], matches[:5], 0.4) == 0.4  # too few samples: unchanged
    assert dl.roc_threshold([0.5] * 8, [1] * 8, 0.4) == 0.4  # one outcome only: unchanged


def test_roc_threshold_equals_the_definition_on_random_samples():
    rng = random.Random(3)
    for _ in range(300):
        n = rng.randint(1, 30)
        probs = [round(rng.random(), rng.choice([1, 2, 3])) for _ in range(n)]  # ties on purpose
        matches = [int(rng.random() < p + 0.2 * rng.uniform(-1, 1)) for p in probs]
        assert dl.roc_threshold(probs, matches, 0.4) == _brute_threshold(probs, matches, 0.4)
