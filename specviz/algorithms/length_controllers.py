"""The draft-length controllers of a chain (``sd``, ``eesd``): how far to draft, decided after every token.

Three families, each an engine ``Controller`` (``step_types``), and the declared choice between them:

**EESD's** (``beta_ts``, ``cali_ts``, ``fixed``). Liu et al. 2024, "Speculative Decoding via
Early-exiting for Faster LLM Inference with Thompson Sampling Control Mechanism" (arXiv 2406.03853),
Algorithm 1 lines 8-11: after **every** drafted token (``go_on``) a coin decides whether to draft on;
the token that drew the stop coin is still verified.
``update`` learns from the verified round; ``state`` is the round as its typed
``step_state.LengthState`` (``StepRecord.controller``). The maths is ``specviz.core.thompson``:

* ``BetaTS`` (Algorithm 2): theta ~ Beta(alpha, beta) at every step, posterior reset per prompt,
  updated by ``beta_update`` (``beta_rule``: the corrected ``|Q_v| = a + 1`` form by default, the
  textbook acceptance update and the printed form as switches);
* ``CaliTS`` (Algorithm 3, Eqs. 5-10): theta ~ N(mu, sigma^2) blending the calibration head's
  theta_M with the running estimate theta_hat (``cali_posterior``), updated by ``cali_update``;
* ``FixedLength``: the no-TS baseline, K tokens a round.

Every controller takes an optional safety cap ``k_max`` (0: none, as in the paper); a round it ends
is logged with ``stop_reason = "k_cap"``. The chain never passes the token budget (``"max_len"``,
the paper's ``t + i < L``) and stops after an EOS draft (``"eos"``). The coins use their own numpy
generator, seeded once from the run's torch generator, so a seeded run replays exactly. The stop
rule only decides how far to draft, so the output law is untouched (every drafted token is verified
by the exact rule).

**The serving engines'** (``heuristic``, ``confidence``, ``adaptive``). Hugging Face transformers'
assisted generation (the engine most users meet first) chooses the draft length three ways
(``core.draft_length`` has the maths, with the source lines):

* ``HeuristicLength`` (``num_assistant_tokens_schedule="heuristic"``): draft ``length`` tokens, then
  ``length + 2`` after a step whose drafts were all accepted and ``length - 1`` (at least 1) otherwise,
  starting from ``num_assistant_tokens`` (transformers' default 20);
* ``ConfidenceStop`` (``assistant_confidence_threshold``, transformers' ``ConfidenceCriteria``): draft
  up to ``num_assistant_tokens``, stopping after a token whose draft probability q is below the
  threshold (default 0.4);
* ``AdaptiveConfidence``: the same stop, its threshold retuned after every step from the ROC curve of
  (q, accepted?) over the tokens verified so far (transformers does this whenever the threshold is set
  and scikit-learn is installed; the unsupervised form of DISCO, arXiv 2405.04304).

Each is an EESD-style ``LengthController`` (above: a decision after every drafted token,
the budget, EOS and ``k_max`` handled there), so it drives ``sd``'s draft model and ``eesd``'s early
exit alike. Here q is the probability the drafter drew the token with (the warped draft law; at
temperature 0 the draft's plain softmax, as transformers reads it). Only how far to draft is decided,
never what is accepted, so the output law is the target's.

**The choice** (``controller_params``, ``make_controller``): the one declared choice ``sd`` and
``eesd`` share, between EESD's Thompson-sampling controllers and its fixed baseline (Liu et al. 2024,
arXiv 2406.03853, Algorithms 1-3 and Table 4) and the serving engines' (transformers' heuristic
schedule, confidence stop and adaptive threshold). Each controller's own settings apply only under
it (``Param.applies_when``); ``k_max``, the optional safety cap, under any. The declarations (and
the controllers' names) are ``length_params``, imported here; ``make_controller`` builds the
controller they name.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from specviz import step_state as ss
from specviz.algorithms.length_params import (
    CONFIDENCE_THRESHOLD,
    LENGTH_CONTROLLERS,
    NUM_ASSISTANT_TOKENS,
)
from specviz.algorithms.step_types import Controller, DraftedTree
from specviz.core import draft_length as dl
from specviz.core import thompson as ts
from specviz.core.trees import TreeShape, chain_shape

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder
    from specviz.algorithms.step_types import StepResult

__all__ = [
    "STOP_EVERY_TOKEN",
    "DIGITS",
    "LengthController",
    "FixedLength",
    "BetaTS",
    "ThetaModel",
    "CaliTS",
    "HeuristicLength",
    "ConfidenceStop",
    "AdaptiveConfidence",
    "controller_rng",
    "make_controller",
]

DIGITS = 5


def _r(x: float) -> float:
    return round(float(x), DIGITS)


class LengthController(Controller):
    """A chain whose length is decided token by token (``decide``); the shared stop/cap/budget logic
    and the per-round record. Subclasses implement ``decide(i)`` (the kind's own fields of its ``DRAW``
    row, ``chi`` included), ``snapshot()`` and ``learn(k, a)``, and name their ``STATE`` and ``DRAW``."""

    kind = "length"
    coin_stop = "chi0"  # the stop reason logged when ``decide`` says stop
    STATE: ClassVar[type[ss.LengthState]]
    DRAW: ClassVar[type[ss.Record]]

    def __init__(self, rng: np.random.Generator, k_max: int = 0):
        self.rng = rng
        self.k_max = int(k_max) or None
        self.round = 0
        self.budget = 0
        self.dec: "Decoder | None" = None
        self.draws: list[ss.Record] = []
        self.stop: str | None = None
        self.before: ss.Record | None = None
        self.learned: ss.Record | None = None

    # ---- engine hooks ----------------------------------------------------------------------------
    def plan(self, dec: "Decoder") -> TreeShape:
        self.dec, self.draws, self.stop, self.learned = dec, [], None, None
        self.budget = max(dec.remaining - 1, 0)  # the engine cuts the chain to this too
        self.stop = None if self.budget else "max_len"  # the last token of the budget: nothing to draft
        self.before = self.snapshot()
        self.begin_round()
        return chain_shape(self.budget)

    def go_on(self, tree: DraftedTree, node: int) -> bool:
        i = tree.level(node)
        eos = self.dec is not None and self.dec.is_eos(tree.tokens[node])
        draw = self.decide(i)
        self.stop = ts.stop_reason(i, draw["chi"], self.k_max, self.budget, eos)
        self.stop = self.coin_stop if self.stop == "chi0" else self.stop
        draw.update(i=i, token=int(tree.tokens[node]), chi=int(draw["chi"]), stop=self.stop, go_on=self.stop is None)
        self.draws.append(self.DRAW(**draw))
        return self.stop is None

    def update(self, dec: "Decoder", result: "StepResult") -> None:
        k, a = len(result.tree.tokens), len(result.path)
        if k:
            self.learned = self.learn(k, a)
            self.round += 1

    def state(self, result: "StepResult") -> ss.LengthState:
        k, a = len(result.tree.tokens), len(result.path)
        return self.STATE(
            round=self.round,
            before=self.before,
            draws=tuple(self.draws),
            stop_reason=self.stop,
            k_cap_hit=self.stop == "k_cap",
            k_max=self.k_max,
            drafted=k,
            accepted=a,
            update=self.learned,
            after=self.snapshot(),
        )

    # ---- per controller --------------------------------------------------------------------------
    def snapshot(self) -> ss.Record:
        raise NotImplementedError

    def begin_round(self) -> None:
        return None

    def decide(self, i: int) -> dict[str, Any]:
        raise NotImplementedError

    def learn(self, drafted: int, accepted: int) -> ss.Record | None:
        return None


class FixedLength(LengthController):
    """The no-TS baseline: every round drafts ``fixed_length`` tokens (EESD Table 4, "w/o TS")."""

    kind = "fixed"
    coin_stop = "fixed_length"
    STATE, DRAW = ss.FixedState, ss.StopDraw

    def __init__(self, rng: np.random.Generator, fixed_length: int, k_max: int = 0):
        super().__init__(rng, k_max)
        self.fixed_length = int(fixed_length)

    def snapshot(self) -> ss.FixedSnapshot:
        return ss.FixedSnapshot(self.fixed_length)

    def decide(self, i: int) -> dict[str, Any]:
        return {"chi": ts.fixed_decide(i, self.fixed_length)}


class BetaTS(LengthController):
    """Beta-TS (Algorithm 2): theta ~ Beta(alpha, beta) and a coin after every drafted token."""

    kind = "beta_ts"
    STATE, DRAW = ss.BetaTSState, ss.ThetaDraw

    def __init__(
        self, rng: np.random.Generator, alpha0: float = 1.0, beta0: float = 1.0, rule: str = "paper", k_max: int = 0
    ):
        super().__init__(rng, k_max)
        self.rule = rule
        self.post = ts.beta_prior(alpha0, beta0)

    def snapshot(self) -> ss.BetaSnapshot:
        p = self.post
        return ss.BetaSnapshot(self.rule, _r(p.alpha), _r(p.beta), _r(p.mean))

    def decide(self, i: int) -> dict[str, Any]:
        c = ts.beta_decide(self.post, self.rng)
        return {"theta": _r(c.theta), "u": _r(c.u), "chi": c.chi}

    def learn(self, drafted: int, accepted: int) -> ss.BetaUpdate:
        self.post, up = ts.beta_update(self.post, drafted, accepted, self.rule)
        return ss.BetaUpdate(up.r, up.n_trials, up.d_alpha, up.d_beta, up.rule)


class ThetaModel:
    """Where Cali-TS's theta_M comes from. This base is an untrained calibration head (``W_p = 0``):
    theta_M = softmax(0)[1] = 0.5 for every token. ``round_start`` runs at each plan (once per round),
    ``verified`` after each verification, ``theta_m(i)`` at draft step i."""

    source = "untrained (W_p = 0): 0.5"

    def round_start(self) -> None:
        return None

    def verified(self, result: "StepResult") -> None:
        return None

    def theta_m(self, i: int) -> float:
        return 0.5


class CaliTS(LengthController):
    """Cali-TS (Algorithm 3): theta ~ N(mu, sigma^2) from theta_M (``theta_m(i)``, the calibration head
    on the draft's hidden state of token i) blended with the running estimate theta_hat (Eqs. 6-7)."""

    kind = "cali_ts"
    STATE, DRAW = ss.CaliTSState, ss.CaliDraw

    def __init__(self, rng: np.random.Generator, model: "ThetaModel", config: ts.CaliConfig, k_max: int = 0):
        super().__init__(rng, k_max)
        self.model, self.config = model, config
        self.est = ts.cali_prior(config)

    def snapshot(self) -> ss.CaliSnapshot:
        e, c = self.est, self.config
        return ss.CaliSnapshot(
            _r(e.theta_hat), e.n_ver, _r(e.weight), c.rule, c.mode, _r(c.sigma_m), _r(c.sigma_s), self.model.source
        )

    def begin_round(self) -> None:
        self.model.round_start()

    def decide(self, i: int) -> dict[str, Any]:
        d = ts.cali_decide(self.est, self.model.theta_m(i), self.rng, self.config)
        p = d.posterior
        return {
            "theta_m": _r(p.theta_m),
            "theta_hat": _r(p.theta_hat),
            "w_m": _r(p.w_m),
            "mu": _r(p.mu),
            "sigma": _r(p.sigma),
            "theta_raw": _r(d.theta),
            "theta": _r(d.coin.theta),
            "u": _r(d.coin.u),
            "chi": d.coin.chi,
        }

    def state(self, result: "StepResult") -> ss.CaliTSState:
        out = super().state(result)
        if out.draws:  # the Gaussian of the round's first draft step (the figure's curve)
            first = out.draws[0]
            out = dataclasses.replace(
                out,
                mu=first.mu,
                sigma=first.sigma,
                w_m=first.w_m,
                theta_m=_r(float(np.mean([d.theta_m for d in out.draws]))),
            )
        return out

    def update(self, dec: "Decoder", result: "StepResult") -> None:
        self.model.verified(result)
        super().update(dec, result)

    def learn(self, drafted: int, accepted: int) -> ss.CaliUpdate:
        self.est, up = ts.cali_update(self.est, drafted, accepted, self.config)
        return ss.CaliUpdate(_r(up.theta_hat_before), _r(up.theta_hat_after), up.s, up.c, up.rule)


# ---- the serving engines' controllers --------------------------------------------------------------

STOP_EVERY_TOKEN = 1.01  # the ROC's +inf threshold (stop after every token), finite for the trace: q <= 1 < 1.01


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

    def __init__(
        self,
        rng: np.random.Generator,
        num_assistant_tokens: int = NUM_ASSISTANT_TOKENS,
        threshold: float = CONFIDENCE_THRESHOLD,
        k_max: int = 0,
    ):
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

    def __init__(
        self,
        rng: np.random.Generator,
        num_assistant_tokens: int = NUM_ASSISTANT_TOKENS,
        threshold: float = CONFIDENCE_THRESHOLD,
        k_max: int = 0,
    ):
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


# ---- the choice -----------------------------------------------------------------------------------


def controller_rng(dec: "Decoder") -> np.random.Generator:
    """A numpy generator for the coins, seeded from the run's torch generator (one draw)."""
    return np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=dec.generator)))


def make_controller(
    dec: "Decoder", params: dict[str, Any], model: ThetaModel | None = None, sigma_m: float | None = None
) -> LengthController:
    """The controller ``params["controller"]`` names, from the declared ``controller_params``.
    ``model``: Cali-TS's theta_M (default ``ThetaModel()``, the untrained head); ``sigma_m``: the
    calibration head's own sigma_M, overriding the parameter."""
    name, rng, cap = params["controller"], controller_rng(dec), params["k_max"]
    if name == "fixed":
        return FixedLength(rng, params["fixed_length"], cap)
    if name == "beta_ts":
        return BetaTS(rng, params["alpha0"], params["beta0"], params["beta_rule"], cap)
    if name == "heuristic":
        return HeuristicLength(rng, params["num_assistant_tokens"], cap)
    if name == "confidence":
        return ConfidenceStop(rng, params["num_assistant_tokens"], params["confidence_threshold"], cap)
    if name == "adaptive":
        return AdaptiveConfidence(rng, params["num_assistant_tokens"], params["confidence_threshold"], cap)
    if name == "cali_ts":
        config = ts.CaliConfig(
            sigma_m if sigma_m is not None else params["sigma_m"],
            params["sigma_s"],
            params["theta_hat0"],
            params["theta_hat_rule"],
            params["cali_mode"],
        )
        return CaliTS(rng, model or ThetaModel(), config, cap)
    raise ValueError(f"unknown controller {name!r}; one of {', '.join(LENGTH_CONTROLLERS)}")
