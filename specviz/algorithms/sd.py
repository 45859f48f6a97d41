"""``sd``: chain speculative sampling (Leviathan et al. 2023; Chen et al. 2023; theory paper Algorithm 1).

Per step: the draft samples ``gamma`` tokens autoregressively from its warped distribution q; the
target scores all of them in one call; token i is accepted with probability
``min(1, p_i(x_i) / q_i(x_i))``; at the first rejection a token is drawn from the residual
``norm(max(0, p_i - q_i))``; if all are accepted a bonus token is drawn from ``p_{gamma+1}``. The
output law is exactly the target's (theory paper Thm 1).

This is the one-branch case of the tree engine: a chain of ``gamma`` nodes, each a sibling group of
one, so the acceptance rule is ``core.acceptance.sibling_schedule`` with k=1, whose output law is
checked exactly by enumeration. The chain is cut to the tokens still allowed, and drafting stops
after an EOS draft, neither of which changes the output law.

``controller`` (default ``static``: always ``gamma``) swaps in a draft-length controller
(``length_controllers``): EESD's (``beta_ts``, ``cali_ts``, ``fixed``; Liu et al. 2024,
arXiv 2406.03853, Table 5: Beta-TS on vanilla SD) or transformers' assisted generation's
(``heuristic``, ``confidence``, ``adaptive``). No calibration head fits a separate draft model, so ``cali_ts`` here uses
the untrained head's theta_M = 0.5.
"""

from __future__ import annotations

from typing import Any, Iterator

from specviz.algorithms.cost import chain_cost
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafter_choice import DRAFTER
from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.length_controllers import make_controller
from specviz.algorithms.length_params import LENGTH_CONTROLLERS, controller_params
from specviz.algorithms.registry import Param, register
from specviz.algorithms.tree_engine import run_engine, run_tree
from specviz.core.rules import MultiCandidate
from specviz.core.trees import chain_shape
from specviz.trace import StepRecord

GAMMA = Param(
    "gamma", 3, "int", 1, 32, help="draft tokens per step", applies_when=("controller", ("static",))
)  # a controller sets the length itself


@register(
    "sd",
    description="Chain speculative sampling: draft gamma tokens, verify in one target call.",
    paper="Leviathan et al. 2023; Chen et al. 2023; theory paper Algorithm 1",
    params=(GAMMA,) + controller_params("static", ("static",) + LENGTH_CONTROLLERS) + (DRAFTER,),
    cost=chain_cost,
    color="#2563eb",
    page_rank=2,
)
def run_sd(dec: Decoder, gamma: int, **control: Any) -> Iterator[StepRecord]:
    if control["controller"] == "static":
        yield from run_tree(dec, chain_shape(gamma), replacement=True)
    else:  # EESD's draft-length control on a draft model (EESD Table 5); Cali-TS's theta_M is 0.5 here
        yield from run_engine(dec, ModelDrafter(dec.draft), make_controller(dec, control), MultiCandidate(True))
