"""The serving engines' draft-length controllers: ``heuristic``, ``confidence``, ``adaptive``.

Hugging Face transformers' assisted generation (the engine most users meet first) chooses the draft
length three ways (``core.draft_length`` has the maths, with the source lines):

* ``HeuristicLength`` (``num_assistant_tokens_schedule="heuristic"``): draft ``length`` tokens, then
  ``length + 2`` after a step whose drafts were all accepted and ``length - 1`` (at least 1) otherwise,
  starting from ``num_assistant_tokens`` (transformers' default 20);
* ``ConfidenceStop`` (``assistant_confidence_threshold``, transformers' ``ConfidenceCriteria``): draft
  up to ``num_assistant_tokens``, stopping after a token whose draft probability q is below the
  threshold (default 0.4);
* ``AdaptiveConfidence``: the same stop, its threshold retuned after every step from the ROC curve of
  (q, accepted?) over the tokens verified so far (transformers does this whenever the threshold is set
  and scikit-learn is installed; the unsupervised form of DISCO, arXiv 2405.04304).

Each is an EESD-style ``LengthController`` (``ts_controllers``: a decision after every drafted token,
the budget, EOS and ``k_max`` handled there), so it drives ``sd``'s draft model and ``eesd``'s early
exit alike. Here q is the probability the drafter drew the token with (the warped draft law; at
temperature 0 the draft's plain softmax, as transformers reads it). Only how far to draft is decided,
never what is accepted, so the output law is the target's.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from specviz import step_state as ss
from specviz.algorithms.step_types import DraftedTree
from specviz.algorithms.ts_controllers import DIGITS, LengthController
from specviz.core import draft_length as dl

ENGINE_CONTROLLERS = ("heuristic", "confidence", "adaptive")
NUM_ASSISTANT_TOKENS, CONFIDENCE_THRESHOLD = 20, 0.4   # transformers' GenerationConfig defaults
STOP_EVERY_TOKEN = 1.01  # the ROC's +inf threshold (stop after every token), finite for the trace: q <= 1 < 1.01


def _r(x: float) -> float:
    return round(float(x), DIGITS)


class HeuristicLength(LengthController):
    """transformers' heuristic schedule: ``length`` tokens a round, +2 after a full accept, else -1."""

    kind = "heuristic"
    coin_stop = "length"
    STATE, DRAW = ss.HeuristicState, ss.StopDraw

    def __init__(self, rng: np.random.Generator, num_assistant_tokens: int = NUM_ASSISTANT_TOKENS, k_max: int = 0):
        super().__init__(rng, k_max)
        self.length = int(num_assistant_tokens)

    def snapshot(self) -> ss.LengthSnapshot:
        return ss.LengthSnapshot(self.length)

    def decide(self, i: int) -> dict[str, Any]:
        return {"chi": int(i < self.length)}

    def learn(self, drafted: int, accepted: int) -> ss.HeuristicUpdate:
        before, self.length = self.length, dl.heuristic_length(self.length, drafted, accepted)
        return ss.HeuristicUpdate(before, self.length, accepted == drafted)


class ConfidenceStop(LengthController):
    """transformers' ``ConfidenceCriteria``: stop after a token with q < ``threshold``, or at
    ``num_assistant_tokens`` tokens."""

    kind = "confidence"
    STATE, DRAW = ss.ConfidenceState, ss.ConfidenceDraw

    def __init__(self, rng: np.random.Generator, num_assistant_tokens: int = NUM_ASSISTANT_TOKENS,
                 threshold: float = CONFIDENCE_THRESHOLD, k_max: int = 0):
        super().__init__(rng, k_max)
        self.length, self.threshold = int(num_assistant_tokens), float(threshold)
        self.q = 1.0
        self.round_q: list[float] = []

    def snapshot(self) -> ss.Record:
        return ss.ConfidenceSnapshot(self.length, _r(self.threshold))

    def begin_round(self) -> None:
        self.round_q = []

    def go_on(self, tree: DraftedTree, node: int) -> bool:
        self.q = float(tree.q_draw[node])
        self.round_q.append(self.q)
        return super().go_on(tree, node)

    def decide(self, i: int) -> dict[str, Any]:
        sure = dl.confident(self.q, self.threshold)
        self.coin_stop = "length" if sure else "low_confidence"
        return {"q": _r(self.q), "threshold": _r(self.threshold), "chi": int(sure and i < self.length)}


class AdaptiveConfidence(ConfidenceStop):
    """``ConfidenceStop`` whose threshold is retuned after every step (``core.draft_length.roc_threshold``)
    from every (q, accepted?) sample so far: the accepted tokens and the first rejected one."""

    kind = "adaptive"
    STATE = ss.AdaptiveState

    def __init__(self, rng: np.random.Generator, num_assistant_tokens: int = NUM_ASSISTANT_TOKENS,
                 threshold: float = CONFIDENCE_THRESHOLD, k_max: int = 0):
        super().__init__(rng, num_assistant_tokens, threshold, k_max)
        self.probs: list[float] = []
        self.matches: list[int] = []

    def snapshot(self) -> ss.AdaptiveSnapshot:
        return ss.AdaptiveSnapshot(self.length, _r(self.threshold), len(self.probs), sum(self.matches))

    def learn(self, drafted: int, accepted: int) -> ss.AdaptiveUpdate:
        probs, matches = dl.verified_samples(self.round_q, accepted)
        self.probs += probs
        self.matches += matches
        before = self.threshold
        self.threshold = min(dl.roc_threshold(self.probs, self.matches, self.threshold), STOP_EVERY_TOKEN)
        return ss.AdaptiveUpdate(_r(before), _r(self.threshold), tuple((_r(q), m) for q, m in zip(probs, matches)))
