"""Which drafter proposes a draft-model algorithm's tokens: the pair's draft model or its feature head.

``DRAFTER`` is one parameter of every algorithm that drafts with a draft model (``sd``, ``mcsd``,
``specinfer``, ``sequoia``, ``dyntree``): ``model`` (the independent draft), ``feature`` (the feature
head over the target's own hidden states, EAGLE-3, arXiv 2503.01840; ``models.feature_head``),
``model_cut`` (the independent draft with its head cut to the feature head's draft vocabulary,
FR-Spec, arXiv 2502.14856: q = 0 outside it, still exact) or ``auto`` (the feature head when the
pair has one, else the draft model). The choice shapes the
``Decoder`` (which caches the target keeps, what ``dec.draft`` is), not the algorithm: its body is
the same for both, and the trace records the choice that ran.
"""

from __future__ import annotations

from typing import Any

from specviz import validation
from specviz.algorithms.registry import Param
from specviz.errors import InvalidParameterError

DRAFTER = Param(
    "drafter",
    "auto",
    "choice",
    choices=("auto", "model", "feature", "model_cut"),
    help="what drafts: the draft model, the feature head on the target's hidden states (EAGLE-3), "
    "the draft model over the feature head's cut vocabulary (model_cut, FR-Spec), "
    "or auto (the feature head when the pair has one)",
)


def resolve_drafter(params: dict[str, Any], pair: Any) -> str:
    """The drafter a run with resolved ``params`` uses on ``pair`` (``"model"`` for an algorithm without
    the parameter); ``feature`` on a pair without a feature head is refused, naming the parameter."""
    choice = params.get("drafter", "model")
    has_feature = getattr(pair, "feature", None) is not None
    if choice == "auto":
        return "feature" if has_feature else "model"
    if choice in ("feature", "model_cut") and not has_feature:
        raise validation.about(
            InvalidParameterError(
                f"drafter {choice!r} needs a feature head on the pair (its draft vocabulary): load_pair(..., "
                "feature=DIR) (the default pair's is assets/smollm2/feature), or take drafter 'model'."
            ),
            "drafter",
        )
    return choice
