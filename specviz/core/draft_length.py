"""Draft-length rules of the serving engines, as pure functions (no model, no state).

Three published ways to choose how many tokens the draft proposes per step, all from Hugging Face
transformers' assisted generation (``generation/candidate_generator.py``,
``AssistedCandidateGenerator.update_candidate_strategy``, and ``generation/stopping_criteria.py``,
``ConfidenceCriteria``; transformers 4.45+, unchanged in 5.x):

* **heuristic schedule** (``num_assistant_tokens_schedule="heuristic"``): after a step whose every
  drafted token was accepted the length grows by 2, otherwise it shrinks by 1, never below 1
  (``heuristic_length``);
* **confidence stop** (``assistant_confidence_threshold``): drafting stops after a token whose draft
  probability is below the threshold; that token is still verified (``confident``);
* **adaptive threshold**: the threshold is retuned after every step from the ROC curve of (draft
  probability, accepted?) over every token verified so far, choosing the threshold that minimises
  ``fpr + 3 fnr`` (a false positive, drafting on after a token that is then rejected, costs 1; a false
  negative, stopping before a token that would have been accepted, costs 3), once there are more
  than 5 samples of both outcomes (``roc_threshold``, ``verified_samples``).

None of them touches the acceptance rule, so every controller built on them keeps the output law.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

FP_COST, FN_COST = 1, 3  # transformers: "a cost of 25% is assigned to false positives and 75% to false negatives"
MIN_SAMPLES = 6  # transformers: len(probs) > 5, with both outcomes present


def heuristic_length(length: int, drafted: int, accepted: int) -> int:
    """The next step's draft length under transformers' heuristic schedule: ``length + 2`` when the
    ``drafted`` tokens were all accepted, else ``max(1, length - 1)``. A step that drafted nothing
    (the token budget's last token) leaves it unchanged."""
    if drafted == 0:
        return length
    return length + 2 if accepted == drafted else max(1, length - 1)


def confident(q: float, threshold: float) -> bool:
    """Whether drafting goes on after a token the draft gave probability ``q``: ``ConfidenceCriteria``
    stops when ``q < threshold`` (so ``q == threshold`` goes on)."""
    return not q < threshold


def verified_samples(qs: Sequence[float], accepted: int) -> tuple[list[float], list[int]]:
    """The (probability, matched) samples one step adds to the ROC: every accepted token (1) and the
    first rejected one (0); drafted tokens beyond the first rejection were never judged and are dropped
    (transformers keeps ``probs`` and ``matches`` the same length the same way)."""
    n = min(len(qs), accepted + 1)
    return [float(q) for q in qs[:n]], [1] * min(accepted, n) + [0] * (n - min(accepted, n))


def roc_threshold(probs: Sequence[float], matches: Sequence[int], current: float) -> float:
    """The threshold minimising ``FP_COST * fpr + FN_COST * fnr`` over the ROC curve of ``probs``
    scoring ``matches`` (1 = accepted), or ``current`` while there are fewer than ``MIN_SAMPLES``
    samples or only one outcome.

    The candidate thresholds are +inf and every distinct probability, high to low (a token goes on
    when its probability is >= the threshold); on a tie the highest threshold wins, as ``np.argmin``
    over scikit-learn's ``roc_curve`` picks it (that curve drops only points on a straight segment,
    where the cost is linear, so the minimum and the tie-break are the same). Costs are compared in
    whole numbers (scaled by positives x negatives), so an exact tie is never split by rounding."""
    p = np.asarray(probs, dtype=float)
    m = np.asarray(matches, dtype=int)
    positives, negatives = int(m.sum()), int(len(m) - m.sum())
    if len(p) < MIN_SAMPLES or positives == 0 or negatives == 0:
        return current
    order = np.argsort(-p, kind="stable")
    p, m = p[order], m[order]
    last_of_run = np.r_[np.nonzero(np.diff(p))[0], len(p) - 1]  # each distinct value's last index
    true_pos = np.r_[0, np.cumsum(m)[last_of_run]]
    false_pos = np.r_[0, np.cumsum(1 - m)[last_of_run]]
    thresholds = np.r_[np.inf, p[last_of_run]]
    # the cost times positives x negatives, in whole numbers, so that ties are ties
    costs = FP_COST * false_pos * positives + FN_COST * (positives - true_pos) * negatives
    return float(thresholds[int(np.argmin(costs))])
