"""The draft-length controllers' step states (``algorithms.length_controllers``): EESD's Thompson sampling
(``beta_ts``, ``cali_ts``, ``fixed``) and transformers' schedules (``heuristic``, ``confidence``, ``adaptive``):
a round's values before and after, a draw per drafted token, the update it learned."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from specviz.step_state.codec import ControllerState, Record, flat, key, optional

#: The fields every drafted token's row ends with, in this order: the coin ``chi`` (1: draft on), the
#: token's level ``i`` and id, why the round stopped after it (``None``: it went on) and ``go_on``
#: (JSON ``"continue"``).
DRAW_FIELDS = {"chi": "int", "i": "int", "token": "int", "stop": "str | None", "go_on": "bool"}


def draw_row(cls: type) -> type:
    """``cls`` (a ``Record`` declaring its kind's own fields) made a frozen dataclass whose fields are its
    own followed by ``DRAW_FIELDS``, the order its JSON object has."""
    cls.__annotations__ = {**cls.__dict__.get("__annotations__", {}), **DRAW_FIELDS}
    cls.go_on = key("continue")
    return dataclass(frozen=True)(cls)


@draw_row
class StopDraw(Record):
    """One drafted token of a fixed or heuristic round: ``DRAW_FIELDS`` alone."""


@draw_row
class ThetaDraw(Record):
    """Beta-TS: theta ~ Beta(alpha, beta), the uniform ``u`` it was compared with, then ``DRAW_FIELDS``."""

    theta: float
    u: float


@draw_row
class CaliDraw(Record):
    """Cali-TS: theta_M, theta_hat, their blend N(mu, sigma^2) (weight w_M), the raw and clipped theta."""

    theta_m: float
    theta_hat: float
    w_m: float
    mu: float
    sigma: float
    theta_raw: float
    theta: float
    u: float


@draw_row
class ConfidenceDraw(Record):
    """Confidence stop: the token's draft probability ``q`` against the ``threshold``."""

    q: float
    threshold: float


@dataclass(frozen=True)
class FixedSnapshot(Record):
    fixed_length: int


@dataclass(frozen=True)
class BetaSnapshot(Record):
    """The Beta posterior (``rule``: the update's form) and its mean."""

    rule: str
    alpha: float
    beta: float
    mean: float


@dataclass(frozen=True)
class CaliSnapshot(Record):
    """Cali-TS's running estimate theta_hat (``n_ver`` verifications, ``weight``) and its settings."""

    theta_hat: float
    n_ver: int
    weight: float
    rule: str
    mode: str
    sigma_m: float
    sigma_s: float
    theta_m_source: str


@dataclass(frozen=True)
class LengthSnapshot(Record):
    length: int


@dataclass(frozen=True)
class ConfidenceSnapshot(Record):
    length: int
    threshold: float


@dataclass(frozen=True)
class AdaptiveSnapshot(Record):
    length: int
    threshold: float
    samples: int
    accepted_samples: int


@dataclass(frozen=True)
class BetaUpdate(Record):
    r: float
    n_trials: float
    d_alpha: float
    d_beta: float
    rule: str


@dataclass(frozen=True)
class CaliUpdate(Record):
    theta_hat_before: float
    theta_hat_after: float
    s: float
    c: float
    rule: str


@dataclass(frozen=True)
class HeuristicUpdate(Record):
    length_before: int
    length_after: int
    all_accepted: bool


@dataclass(frozen=True)
class AdaptiveUpdate(Record):
    """The ROC retune: threshold before and after, and the (q, accepted 0/1) samples the step added."""

    threshold_before: float
    threshold_after: float
    samples_added: tuple[tuple[float, ...], ...]


@dataclass(frozen=True, kw_only=True)
class LengthState(ControllerState):
    """One round of a draft-length controller (``algorithms.length_controllers.LengthController``): the
    controller's values before the round (``before``, its keys inline), a draw per drafted token, why the
    round stopped, the cap, drafted and accepted counts, the update it learned and the values after.
    A subclass narrows ``before``/``after``, ``draws`` and ``update`` to its kind's rows."""

    round: int
    before: Record = flat()
    draws: tuple[Record, ...]
    stop_reason: str | None
    k_cap_hit: bool
    k_max: int | None
    drafted: int
    accepted: int
    update: Record | None
    after: Record


@dataclass(frozen=True, kw_only=True)
class FixedState(LengthState):
    kind: ClassVar[str] = "fixed"
    before: FixedSnapshot = flat()
    draws: tuple[StopDraw, ...]
    update: None
    after: FixedSnapshot


@dataclass(frozen=True, kw_only=True)
class ThompsonState(LengthState):
    """A Thompson-sampling round (Beta-TS or Cali-TS): ``density`` is the round's posterior over theta."""


@dataclass(frozen=True, kw_only=True)
class BetaTSState(ThompsonState):
    kind: ClassVar[str] = "beta_ts"
    before: BetaSnapshot = flat()
    draws: tuple[ThetaDraw, ...]
    update: BetaUpdate | None
    after: BetaSnapshot


@dataclass(frozen=True, kw_only=True)
class CaliTSState(ThompsonState):
    """Also the Gaussian of the round's first draft step (``mu``, ``sigma``, ``w_m``) and the mean
    theta_M of the round: absent when the round drafted nothing."""

    kind: ClassVar[str] = "cali_ts"
    before: CaliSnapshot = flat()
    draws: tuple[CaliDraw, ...]
    update: CaliUpdate | None
    after: CaliSnapshot
    mu: float | None = optional()
    sigma: float | None = optional()
    theta_m: float | None = optional()
    w_m: float | None = optional()


@dataclass(frozen=True, kw_only=True)
class HeuristicState(LengthState):
    kind: ClassVar[str] = "heuristic"
    before: LengthSnapshot = flat()
    draws: tuple[StopDraw, ...]
    update: HeuristicUpdate | None
    after: LengthSnapshot


@dataclass(frozen=True, kw_only=True)
class ConfidenceState(LengthState):
    kind: ClassVar[str] = "confidence"
    before: ConfidenceSnapshot = flat()
    draws: tuple[ConfidenceDraw, ...]
    update: None
    after: ConfidenceSnapshot


@dataclass(frozen=True, kw_only=True)
class AdaptiveState(LengthState):
    kind: ClassVar[str] = "adaptive"
    before: AdaptiveSnapshot = flat()
    draws: tuple[ConfidenceDraw, ...]
    update: AdaptiveUpdate | None
    after: AdaptiveSnapshot
