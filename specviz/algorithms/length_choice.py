"""Which draft-length controller a chain runs: the declared choice ``sd`` and ``eesd`` share, and its factory.

The choices: EESD's Thompson-sampling controllers and its fixed baseline (``ts_controllers``: Liu et
al. 2024, arXiv 2406.03853, Algorithms 1-3 and Table 4) and the serving engines' (``length_controllers``:
transformers' heuristic schedule, confidence stop and adaptive threshold). Each controller's own
settings apply only under it (``Param.applies_when``); ``k_max``, the optional safety cap, under any.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from specviz.algorithms.length_controllers import (CONFIDENCE_THRESHOLD, ENGINE_CONTROLLERS, NUM_ASSISTANT_TOKENS,
                                                   AdaptiveConfidence, ConfidenceStop, HeuristicLength)
from specviz.algorithms.registry import Param
from specviz.algorithms.ts_controllers import TS_CONTROLLERS, BetaTS, CaliTS, FixedLength, LengthController, ThetaModel
from specviz.core import thompson as ts

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder

LENGTH_CONTROLLERS = TS_CONTROLLERS + ENGINE_CONTROLLERS


def controller_params(default: str, choices: tuple[str, ...]) -> tuple[Param, ...]:
    """The declared parameters of the draft-length controllers among ``choices`` (plus ``static``,
    which has none: the algorithm's own length)."""
    beta, cali = ("controller", ("beta_ts",)), ("controller", ("cali_ts",))
    return (
        Param("controller", default, "choice", choices=choices,
              help="draft-length control: beta_ts / cali_ts (Thompson sampling), fixed, or transformers' "
                   "heuristic / confidence / adaptive"),
        Param("fixed_length", 5, "int", 1, 64, help="tokens a round drafts under the fixed controller",
              applies_when=("controller", ("fixed",))),
        Param("num_assistant_tokens", NUM_ASSISTANT_TOKENS, "int", 1, 64,
              help="heuristic: the first round's length; confidence / adaptive: the most tokens a round drafts",
              applies_when=("controller", ENGINE_CONTROLLERS)),
        Param("confidence_threshold", CONFIDENCE_THRESHOLD, "float", 0.0, 1.0,
              help="stop drafting after a token whose draft probability is below this (adaptive: where it starts)",
              applies_when=("controller", ("confidence", "adaptive"))),
        Param("k_max", 0, "int", 0, 256, help="safety cap on tokens a round (0: none); logged when it bites",
              applies_when=("controller", LENGTH_CONTROLLERS)),
        Param("alpha0", 1.0, "float", 1e-3, 1e3, help="Beta-TS prior alpha", applies_when=beta),
        Param("beta0", 1.0, "float", 1e-3, 1e3, help="Beta-TS prior beta", applies_when=beta),
        Param("beta_rule", "paper", "choice", choices=ts.BETA_RULES, applies_when=beta,
              help="Beta-TS update: paper (|Q_v| = a + 1), acceptance, or paper_literal (printed, breaks)"),
        Param("sigma_m", 0.3, "float", 1e-3, 10.0, help="Cali-TS sigma_M (a saved calibration head's own wins)",
              applies_when=cali),
        Param("sigma_s", 0.25, "float", 1e-3, 10.0, help="Cali-TS sigma_S", applies_when=cali),
        Param("theta_hat0", 0.5, "float", 0.0, 1.0, help="Cali-TS start of the running estimate", applies_when=cali),
        Param("theta_hat_rule", "draft_fraction", "choice", choices=ts.THETA_HAT_RULES, applies_when=cali,
              help="Cali-TS running estimate: draft_fraction, trials, or paper_literal (drifts to 1)"),
        Param("cali_mode", "blend", "choice", choices=ts.CALI_MODES, help="Cali-TS: blend or an ablation",
              applies_when=cali),
    )
def controller_rng(dec: "Decoder") -> np.random.Generator:
    """A numpy generator for the coins, seeded from the run's torch generator (one draw)."""
    return np.random.default_rng(int(torch.randint(0, 2 ** 62, (1,), generator=dec.generator)))


def make_controller(dec: "Decoder", params: dict[str, Any], model: ThetaModel | None = None,
                    sigma_m: float | None = None) -> LengthController:
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
        config = ts.CaliConfig(sigma_m if sigma_m is not None else params["sigma_m"], params["sigma_s"],
                               params["theta_hat0"], params["theta_hat_rule"], params["cali_mode"])
        return CaliTS(rng, model or ThetaModel(), config, cap)
    raise ValueError(f"unknown controller {name!r}; one of {', '.join(LENGTH_CONTROLLERS)}")
