"""``dsbd``: Dynamic-Width Speculative Beam Decoding (Qin et al., AAAI 2025, arXiv 2409.16560).

One iteration = one target call:

1. **Draft** (``forest.ForestDrafter``): the draft model beam-samples ``gamma`` layers of ``width``
   (W_S) beams over the current beams: a forest with one tree per beam (Sec 3.1, Fig 2).
2. **Verify the forest in one target forward** (Sec 3.3, Fig 3): every beam's uncached token and
   every forest node in one ``CachedLM.forward`` over the shared cache (tree attention), so every
   node's target distribution is known.
3. **Layer by layer** (Algorithm 1, corrected; ``core.beams``): layer l's target beam distribution
   ``p_beam`` over (layer l - 1 nodes x V) weights each parent by its cumulative target
   log-likelihood, parents rejected earlier get zero mass (Eq 1); the width W_L^(l) is chosen
   from (p_beam, q_beam) before looking at the drafts (``width.WidthController`` plans it:
   Eqs 2-7); the drafts
   are tested in draw order with ``min(1, p'/q_beam)``, reset after an acceptance, one residual
   after each rejection (``layer_verifier.LayerRule``; the printed ratio ``q/p'`` is ``literal_ratio=True``). A
   layer with W_L^(l) acceptances passes; the first layer that does not is repaired (one beam from
   the residual, the rest fresh from p_beam) and ends the iteration; after gamma passed layers a
   bonus layer samples the beams from the target. At T = 0 the layer keeps the target's beam-search
   top W (``core.beams.verify_layer_greedy``).
4. **Keep** the output beams in both caches (``CachedLM.keep``); with ``single_beam`` (the
   memory-saving mode, Sec 3.4) only the best output beam (highest target log-likelihood; all
   outputs have equal length) is carried into the next iteration.

Widths: ``dynamic=False`` keeps W_L = ``min_width`` in every layer (and as the number of output
beams): exactly fixed-width beam sampling with ``min_width`` beams, i.e. ``beam`` with
``width=min_width`` in law (T > 0) and token for token (T = 0). With ``dynamic=True`` each layer is
still an exact beam-sampling step *for the width it chose*, but the width changes with the context,
so the run is not fixed-width beam sampling; the number of output beams is the width of the layer
the iteration ended in (the last draft layer's after a bonus layer): the paper's W_L (Algorithm 1,
"sample W_L beams"); ``output_width="code"`` is the official code's W_S instead (a failed layer is
filled up to W_S and the bonus layer samples W_S beams; at T = 0 only the bonus layer widens, a failed
layer keeps the target's top W_L), so the run is no fixed-width beam sampling even with ``dynamic``
off. At T = 0 p_beam is one-hot on
the target's best candidate c*, so the law of Eqs 2-3 is Binomial(W_S, q_beam(c*)) and the run is
beam search with a per-position width schedule: a narrowing keeps the best prefix so far, which can
end below greedy decoding (docs/algorithms.md). The memory-saving mode is not fixed-width beam
sampling either. Registered ``lossless=False`` like ``beam``: its reference is
``beam``, not ``ar``.

Committing and EOS as in ``beam``: an accepted EOS draft (in a passed layer) or an EOS output beam
finishes its beam, which is set aside (``state.Finished``) and is no parent in the next layer; the
iteration ends early when every kept beam finished. Counting: ``target_calls`` is the target
cache's call count over the iteration (1), ``draft_calls`` the draft's (the forest's depth,
``gamma`` unless cut by the budget or a layer of EOS drafts). ``StepRecord.controller`` (kind ``dsbd``):
per layer the parents still valid, the drafts, the chosen width and its unfloored value, the law
P(m accepted) and its survival function behind the choice with the threshold, accepted and kept
counts and whether the layer passed; ``l_last`` (the layer where the iteration ended), ``kept``
(trace node ids of the output beams) and the beams (``state.beam_rows``). ``StepRecord.positions``:
one record per parent row of each verified layer, on the joint scale (``positions.layer_positions``).

Assembly on the step loop (``step_loop``): ``forest.ForestDrafter`` proposes, ``layer_verifier.
LayerVerifier`` decides (steps 2-4) over the run's ``state.BeamState``, ``width.
WidthController`` plans the depth and the widths.
"""

from __future__ import annotations

from typing import Any, Iterator

from specviz import validation
from specviz.algorithms.beams.forest import ForestDrafter
from specviz.algorithms.beams.layer_verifier import LayerRule, LayerVerifier
from specviz.algorithms.beams.state import BeamState, Slot
from specviz.algorithms.beams.width import WidthController
from specviz.algorithms.cost import Cost, int_param, per_step
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.registry import Param, register
from specviz.algorithms.step_loop import run_steps
from specviz.core.trees import ROOT
from specviz.errors import InvalidParameterError
from specviz.trace import StepRecord

PARAMS = (
    Param("width", 4, "int", 1, 16, help="W_S: draft beams per layer"),
    Param("min_width", 1, "int", 1, 16, help="W_min: floor of the width (the fixed width when dynamic is off)"),
    Param("threshold", 0.7, "float", 0.0, 1.0, help="t: keep the largest K with P(#accepted >= K) >= t"),
    Param("gamma", 3, "int", 1, 16, help="draft layers per iteration"),
    Param("dynamic", True, "bool", help="dynamic width (Eqs 5-7); off: fixed at min_width, exact beam sampling"),
    Param("single_beam", False, "bool", help="memory-saving mode: carry only the best beam (Sec 3.4)"),
    Param("literal_ratio", False, "bool", help="Algorithm 1's printed ratio min(1, q/p') (wrong; for comparison)"),
    Param(
        "output_width",
        "paper",
        "choice",
        choices=("paper", "code"),
        help="beams an iteration outputs: paper = W_L of the last layer (Algorithm 1), code = W_S (the official "
        "code: a failed layer is filled up to W_S, the bonus layer samples W_S)",
    ),
)


def check_widths(params: dict[str, Any]) -> None:
    """``min_width`` is the width's floor, so it may not exceed ``width``."""
    if params["min_width"] > params["width"]:
        raise validation.about(
            InvalidParameterError(
                f"dsbd: parameter 'min_width' must be in [1, width = {params['width']}], got {params['min_width']}."
            ),
            "min_width",
            "dsbd: parameter 'min_width'",
        )


def cost(params: dict[str, Any], steps: int) -> Cost:
    """A forest of ``width`` beams of ``gamma`` layers a step, plus the beams' own tokens, in each model."""
    return per_step(
        max(1, int_param(params, "width")) * (max(1, int_param(params, "gamma")) + 1), "width x gamma", steps
    )


@register(
    "dsbd",
    description="Dynamic-width speculative beam decoding: a drafted beam forest, verified "
    "layer by layer in one target call.",
    paper="Dynamic-Width Speculative Beam Decoding (arXiv 2409.16560), Algorithm 1, Eqs 1-7",
    params=PARAMS,
    lossless=False,
    controller="dsbd",
    check=check_widths,
    cost=cost,
    color="#65a30d",
    page_rank=7,
)
def run_dsbd(
    dec: Decoder,
    width: int,
    min_width: int,
    threshold: float,
    gamma: int,
    dynamic: bool,
    single_beam: bool,
    literal_ratio: bool,
    output_width: str,
) -> Iterator[StepRecord]:
    drafter = ForestDrafter(dec.draft, [Slot(ROOT, list(dec.tokens))])
    verifier = LayerVerifier(BeamState.start(dec), LayerRule(literal_ratio, output_width), single_beam)
    controller = WidthController(width, min_width, threshold, gamma, dynamic, single_beam)
    yield from run_steps(dec, drafter, verifier, controller)
