"""The declared parameters of the draft-length controllers (``length_controllers``): the one choice
``sd`` and ``eesd`` share between EESD's Thompson-sampling controllers and its fixed baseline (Liu et
al. 2024, arXiv 2406.03853, Algorithms 1-3 and Table 4) and the serving engines' (transformers'
heuristic schedule, confidence stop and adaptive threshold), and each controller's own settings,
which apply only under it (``Param.applies_when``); ``k_max``, the optional safety cap, under any."""

from __future__ import annotations

from specviz.algorithms.registry import Param
from specviz.core import thompson as ts

TS_CONTROLLERS = ("beta_ts", "cali_ts", "fixed")
ENGINE_CONTROLLERS = ("heuristic", "confidence", "adaptive")
LENGTH_CONTROLLERS = TS_CONTROLLERS + ENGINE_CONTROLLERS
NUM_ASSISTANT_TOKENS, CONFIDENCE_THRESHOLD = 20, 0.4  # transformers' GenerationConfig defaults


def controller_params(default: str, choices: tuple[str, ...]) -> tuple[Param, ...]:
    """The declared parameters of the draft-length controllers among ``choices`` (plus ``static``,
    which has none: the algorithm's own length): the choice, the length schedules', Beta-TS's, Cali-TS's."""
    return (
        (
            Param(
                "controller",
                default,
                "choice",
                choices=choices,
                help="draft-length control: beta_ts / cali_ts (Thompson sampling), fixed, or transformers' "
                "heuristic / confidence / adaptive",
            ),
        )
        + _schedule_params()
        + _beta_ts_params()
        + _cali_ts_params()
    )


def _schedule_params() -> tuple[Param, ...]:
    """The fixed length, transformers' schedules (heuristic / confidence / adaptive) and the cap all share."""
    return (
        Param(
            "fixed_length",
            5,
            "int",
            1,
            64,
            help="tokens a round drafts under the fixed controller",
            applies_when=("controller", ("fixed",)),
        ),
        Param(
            "num_assistant_tokens",
            NUM_ASSISTANT_TOKENS,
            "int",
            1,
            64,
            help="heuristic: the first round's length; confidence / adaptive: the most tokens a round drafts",
            applies_when=("controller", ENGINE_CONTROLLERS),
        ),
        Param(
            "confidence_threshold",
            CONFIDENCE_THRESHOLD,
            "float",
            0.0,
            1.0,
            help="stop drafting after a token whose draft probability is below this (adaptive: where it starts)",
            applies_when=("controller", ("confidence", "adaptive")),
        ),
        Param(
            "k_max",
            0,
            "int",
            0,
            256,
            help="safety cap on tokens a round (0: none); logged when it bites",
            applies_when=("controller", LENGTH_CONTROLLERS),
        ),
    )


def _beta_ts_params() -> tuple[Param, ...]:
    """Beta-TS's prior and update rule (EESD, arXiv:2406.03853)."""
    beta = ("controller", ("beta_ts",))
    return (
        Param("alpha0", 1.0, "float", 1e-3, 1e3, help="Beta-TS prior alpha", applies_when=beta),
        Param("beta0", 1.0, "float", 1e-3, 1e3, help="Beta-TS prior beta", applies_when=beta),
        Param(
            "beta_rule",
            "paper",
            "choice",
            choices=ts.BETA_RULES,
            applies_when=beta,
            help="Beta-TS update: paper (|Q_v| = a + 1), acceptance, or paper_literal (printed, breaks)",
        ),
    )


def _cali_ts_params() -> tuple[Param, ...]:
    """Cali-TS's noise scales, running estimate and mode (EESD, arXiv:2406.03853)."""
    cali = ("controller", ("cali_ts",))
    return (
        Param(
            "sigma_m",
            0.3,
            "float",
            1e-3,
            10.0,
            help="Cali-TS sigma_M (a saved calibration head's own wins)",
            applies_when=cali,
        ),
        Param("sigma_s", 0.25, "float", 1e-3, 10.0, help="Cali-TS sigma_S", applies_when=cali),
        Param("theta_hat0", 0.5, "float", 0.0, 1.0, help="Cali-TS start of the running estimate", applies_when=cali),
        Param(
            "theta_hat_rule",
            "draft_fraction",
            "choice",
            choices=ts.THETA_HAT_RULES,
            applies_when=cali,
            help="Cali-TS running estimate: draft_fraction, trials, or paper_literal (drifts to 1)",
        ),
        Param(
            "cali_mode",
            "blend",
            "choice",
            choices=ts.CALI_MODES,
            help="Cali-TS: blend or an ablation",
            applies_when=cali,
        ),
    )
