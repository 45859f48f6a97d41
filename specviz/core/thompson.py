"""Thompson-sampling draft-length control of EESD, as pure functions over frozen state dataclasses.

Liu et al., "Speculative Decoding via Early-exiting for Faster LLM Inference with Thompson Sampling
Control Mechanism" (arXiv 2406.03853), Algorithms 1-3. After **each** drafted token (1-based index
``i``) a fresh theta is drawn from the posterior and a coin ``chi ~ Bernoulli(theta)`` decides whether
to keep drafting (Algorithm 1, lines 8-11): the token that drew ``chi = 0`` is still verified, so a
round drafts at least one token. The posterior is reset for every prompt and updated once per round
from ``k`` (tokens drafted, ``|Q_d|``) and ``a`` (draft tokens the target accepted).

``|Q_v|`` is read as ``a + 1``: the accepted drafts plus the target's correction or bonus token, the
tokens committed by the round. Read as ``a`` (the printed form), a round that accepts nothing gives
``r = -1`` and can drive alpha to 0 (``beta_rule="paper_literal"`` keeps that form for demonstration).

Every random draw takes an explicit ``numpy.random.Generator``, so a seeded run replays exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BETA_RULES = ("paper", "acceptance", "paper_literal")
THETA_HAT_RULES = ("draft_fraction", "trials", "paper_literal")
CALI_MODES = ("blend", "model_only", "sampling_only")
STOP_REASONS = ("chi0", "k_cap", "max_len", "eos")


# ------------------------------------------------------------------------------------------------
# Beta-TS (Algorithm 2, Eqs. 2-4)


@dataclass(frozen=True)
class BetaState:
    """Posterior ``Beta(alpha, beta)`` over theta = P(continue drafting), after ``rounds`` updates."""

    alpha: float = 1.0
    beta: float = 1.0
    rounds: int = 0

    @property
    def mean(self) -> float:
        """``alpha / (alpha + beta)``: P(chi = 1) at any draft step of the next round."""
        return self.alpha / (self.alpha + self.beta)

    @property
    def variance(self) -> float:
        s = self.alpha + self.beta
        return self.alpha * self.beta / (s * s * (s + 1))

    @property
    def mean_draft_length(self) -> float:
        """E[k] of a round under this posterior, ``(alpha + beta) / beta`` (geometric law)."""
        return (self.alpha + self.beta) / self.beta


@dataclass(frozen=True)
class Coin:
    """One continue/stop decision: the sampled ``theta`` (clipped to [0, 1]), the uniform ``u`` and
    ``chi = 1[u < theta]`` (1: keep drafting)."""

    theta: float
    u: float
    chi: int


@dataclass(frozen=True)
class BetaUpdate:
    """What one verification did to the posterior: Algorithm 2 lines 18-21 (``r``, ``n_trials``)."""

    drafted: int
    accepted: int
    r: float
    n_trials: float
    d_alpha: float
    d_beta: float
    rule: str


def beta_prior(alpha0: float = 1.0, beta0: float = 1.0) -> BetaState:
    """The per-prompt prior ``Beta(alpha0, beta0)`` (Algorithm 2, line 1)."""
    if not (alpha0 > 0 and beta0 > 0):
        raise ValueError(f"alpha0 and beta0 must be > 0, got {alpha0}, {beta0}")
    return BetaState(float(alpha0), float(beta0), 0)


def coin(theta: float, rng: np.random.Generator) -> Coin:
    """``chi ~ Bernoulli(clip(theta, 0, 1))`` by one uniform draw."""
    clipped = min(max(float(theta), 0.0), 1.0)
    u = float(rng.random())
    return Coin(clipped, u, int(u < clipped))


def beta_decide(state: BetaState, rng: np.random.Generator) -> Coin:
    """One draft step of Beta-TS: ``theta ~ Beta(alpha, beta)`` then the coin (Algorithm 2, lines 8-9)."""
    if not (state.alpha > 0 and state.beta > 0):
        raise ValueError(
            f"Beta({state.alpha}, {state.beta}) is not a distribution: alpha and beta must be > 0 "
            "(the printed |Q_v| = accepted convention can reach this; see beta_rule)"
        )
    return coin(float(rng.beta(state.alpha, state.beta)), rng)


def beta_update(state: BetaState, drafted: int, accepted: int, rule: str = "paper") -> tuple[BetaState, BetaUpdate]:
    """The posterior after a round that drafted ``drafted`` tokens and had ``accepted`` of them accepted.

    * ``"paper"`` (default; Algorithm 2 with ``|Q_v| = a + 1``): ``r = a``, ``n = min(a + 2, k)``,
      ``alpha += r``, ``beta += n - r``: all accepted -> (+k, +0); only the last rejected -> (+a, +1);
      otherwise (+a, +2), the rejected token and the first discarded one.
    * ``"acceptance"``: the textbook per-token acceptance posterior, ``alpha += a``, ``beta += 1[a < k]``.
    * ``"paper_literal"``: Algorithm 2 with ``|Q_v| = a`` as printed: ``r = a - 1``, ``n = min(a + 1, k)``;
      a round with ``a = 0`` lowers alpha by 1 (kept only to show why it cannot work).
    """
    k, a = int(drafted), int(accepted)
    if not 0 <= a <= k or k < 1:
        raise ValueError(f"need 0 <= accepted <= drafted and drafted >= 1, got accepted={a}, drafted={k}")
    if rule == "paper":
        r, n = a, min(a + 2, k)
    elif rule == "acceptance":
        r, n = a, a + (1 if a < k else 0)
    elif rule == "paper_literal":
        r, n = a - 1, min(a + 1, k)
    else:
        raise ValueError(f"beta rule must be one of {', '.join(BETA_RULES)}, got {rule!r}")
    new = BetaState(state.alpha + r, state.beta + (n - r), state.rounds + 1)
    return new, BetaUpdate(k, a, float(r), float(n), float(r), float(n - r), rule)


# ------------------------------------------------------------------------------------------------
# Cali-TS (Algorithm 3, Eqs. 5-10)


@dataclass(frozen=True)
class CaliConfig:
    """Hyper-parameters Phi_0 of Cali-TS (the paper reports none; these are the defaults we chose).

    ``sigma_m``: the calibration head's prediction error; ``sigma_s``: the per-round std of the mean
    coin, ``sigma_chi / sqrt(k_user)`` = 0.5 / 2; ``theta_hat0``: the running estimate's start, worth
    one pseudo-observation. ``rule``: the running-estimate update (see ``cali_update``). ``mode``:
    ``"blend"`` (Eqs. 6-7), ``"model_only"`` (ablation w/o sampling prediction: N(theta_M, sigma_m^2)),
    ``"sampling_only"`` (ablation w/o model prediction: N(theta_hat, sigma_s^2 / max(n_ver, 1))).
    """

    sigma_m: float = 0.3
    sigma_s: float = 0.25
    theta_hat0: float = 0.5
    rule: str = "draft_fraction"
    mode: str = "blend"

    def __post_init__(self):
        if not (self.sigma_m > 0 and self.sigma_s > 0):
            raise ValueError("sigma_m and sigma_s must be > 0")
        if self.rule not in THETA_HAT_RULES:
            raise ValueError(f"rule must be one of {', '.join(THETA_HAT_RULES)}, got {self.rule!r}")
        if self.mode not in CALI_MODES:
            raise ValueError(f"mode must be one of {', '.join(CALI_MODES)}, got {self.mode!r}")


@dataclass(frozen=True)
class CaliState:
    """The running estimate ``theta_hat`` with its weight ``W`` (= t + 1 under the default rule) and
    ``n_ver``, the verifications so far (the ``n`` of Eqs. 6-7)."""

    theta_hat: float = 0.5
    weight: float = 1.0
    n_ver: int = 0


@dataclass(frozen=True)
class CaliPosterior:
    """The Gaussian theta is drawn from at one draft step: ``N(mu, sigma^2)`` with model weight ``w_m``."""

    theta_m: float
    theta_hat: float
    n_ver: int
    w_m: float
    mu: float
    sigma: float

    @property
    def continue_probability(self) -> float:
        """P(chi = 1) = E[clip(theta, 0, 1)] for theta ~ N(mu, sigma^2)."""
        return clipped_normal_mean(self.mu, self.sigma)


@dataclass(frozen=True)
class CaliDecision:
    posterior: CaliPosterior
    theta: float  # the raw Gaussian draw (may leave [0, 1])
    coin: Coin  # coin.theta is the clipped draw


@dataclass(frozen=True)
class CaliUpdate:
    drafted: int
    accepted: int
    theta_hat_before: float
    theta_hat_after: float
    s: float  # added to the numerator
    c: float  # added to the weight
    rule: str


def cali_prior(config: CaliConfig = CaliConfig()) -> CaliState:
    """The per-prompt start: ``theta_hat_0``, weight 1, no verification yet (Algorithm 3, lines 1-2)."""
    return CaliState(float(config.theta_hat0), 1.0, 0)


def cali_posterior(state: CaliState, theta_m: float, config: CaliConfig = CaliConfig()) -> CaliPosterior:
    """Eqs. 6-7: ``mu = w_m theta_M + (1 - w_m) theta_hat``, ``w_m = s_S^2 / (n s_M^2 + s_S^2)``,
    ``sigma^2 = s_M^2 s_S^2 / (s_S^2 + n s_M^2)`` with ``n = n_ver`` (or an ablation, see ``CaliConfig``)."""
    sm2, ss2, n = config.sigma_m**2, config.sigma_s**2, state.n_ver
    if config.mode == "model_only":
        w_m, var = 1.0, sm2
    elif config.mode == "sampling_only":
        w_m, var = 0.0, ss2 / max(n, 1)
    else:
        w_m, var = ss2 / (n * sm2 + ss2), sm2 * ss2 / (ss2 + n * sm2)
    mu = w_m * float(theta_m) + (1 - w_m) * state.theta_hat
    return CaliPosterior(float(theta_m), state.theta_hat, n, w_m, mu, math.sqrt(var))


def cali_decide(
    state: CaliState, theta_m: float, rng: np.random.Generator, config: CaliConfig = CaliConfig()
) -> CaliDecision:
    """One draft step of Cali-TS: theta ~ N(mu, sigma^2), clipped to [0, 1], then the coin
    (Algorithm 3, lines 8-12; the clipping is ours: a Bernoulli needs a probability)."""
    post = cali_posterior(state, theta_m, config)
    theta = float(rng.normal(post.mu, post.sigma))
    return CaliDecision(post, theta, coin(theta, rng))


def cali_update(
    state: CaliState, drafted: int, accepted: int, config: CaliConfig = CaliConfig()
) -> tuple[CaliState, CaliUpdate]:
    """The running estimate after a round: ``theta_hat <- (theta_hat W + s) / (W + c)``, ``W <- W + c``.

    With ``|Q_v| = a + 1`` tokens committed:

    * ``"draft_fraction"`` (default): ``s = a``, ``c = |Q_v|``. ``W = t + 1`` as in Eq. 8 and theta_hat
      is the fraction of committed tokens that came from the draft, theta_hat_0 one pseudo-observation.
    * ``"trials"``: ``s, c`` = Beta-TS's ``r, n_trials``.
    * ``"paper_literal"``: Eq. 8 / Eq. 10 as printed, ``s = c = |Q_v|``: theta_hat = (theta_hat_0 + t) /
      (t + 1) -> 1 whatever is accepted.
    """
    k, a = int(drafted), int(accepted)
    if not 0 <= a <= k or k < 1:
        raise ValueError(f"need 0 <= accepted <= drafted and drafted >= 1, got accepted={a}, drafted={k}")
    qv = a + 1
    if config.rule == "draft_fraction":
        s, c = a, qv
    elif config.rule == "trials":
        s, c = a, min(a + 2, k)
    else:  # paper_literal
        s, c = qv, qv
    new_hat = (state.theta_hat * state.weight + s) / (state.weight + c)
    new = CaliState(new_hat, state.weight + c, state.n_ver + 1)
    return new, CaliUpdate(k, a, state.theta_hat, new_hat, float(s), float(c), config.rule)


# ------------------------------------------------------------------------------------------------
# Fixed length and the stop rule shared by every controller


def fixed_decide(i: int, fixed_length: int) -> int:
    """The no-TS baseline: keep drafting (1) until ``fixed_length`` tokens are drafted in the round."""
    if fixed_length < 1:
        raise ValueError(f"fixed_length must be >= 1, got {fixed_length}")
    return int(i < fixed_length)


def stop_reason(i: int, chi: int, k_max: int | None = None, budget: int | None = None, eos: bool = False) -> str | None:
    """Why the round stops after its ``i``-th drafted token, or None to draft on.

    ``"eos"``: the token ends the sequence; ``"max_len"``: ``budget`` tokens drafted (``t + i = L``);
    ``"chi0"``: the coin said stop; ``"k_cap"``: the coin said continue but ``k_max`` (optional safety
    cap, off by default in the paper) was reached, the case a trace logs as the cap biting.
    """
    if eos:
        return "eos"
    if budget is not None and i >= budget:
        return "max_len"
    if not chi:
        return "chi0"
    if k_max is not None and i >= k_max:
        return "k_cap"
    return None


# ------------------------------------------------------------------------------------------------
# Views of a posterior (for traces and figures)


def draft_length_pmf(p_continue: float, k: int) -> float:
    """P(a round drafts exactly ``k`` tokens) when every step continues with probability ``p_continue``:
    ``p^(k-1) (1 - p)`` (no cap)."""
    return p_continue ** (k - 1) * (1 - p_continue) if k >= 1 else 0.0


def clipped_normal_mean(mu: float, sigma: float) -> float:
    """``E[clip(theta, 0, 1)]`` for ``theta ~ N(mu, sigma^2)``:
    ``mu (Phi(b) - Phi(a)) + sigma (phi(a) - phi(b)) + 1 - Phi(b)``, ``a = -mu/sigma``, ``b = (1-mu)/sigma``."""
    if sigma <= 0:
        return min(max(mu, 0.0), 1.0)
    a, b = -mu / sigma, (1 - mu) / sigma
    cdf = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))  # noqa: E731
    pdf = lambda x: math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)  # noqa: E731
    return mu * (cdf(b) - cdf(a)) + sigma * (pdf(a) - pdf(b)) + 1 - cdf(b)
