"""``mcsd``: Multi-Candidate Speculative Decoding (Yang et al. 2024, arXiv:2401.06706).

A ``k1xk2x...xkγ`` tree (every node at level d - 1 gets k_d children; the paper's §4.4 budget
configurations, laid out as in its §3.3 / Fig. 2) is drafted
level by level from the draft's own distribution at each node (γ draft calls) and verified in one
target call. Siblings are tested in draw order by multi-candidate speculative sampling:
``replacement=True`` is Algorithm 1 (i.i.d. siblings, q never changes); ``replacement=False`` is
Algorithm 2 (siblings drawn without replacement; residual with the current q̄, *then* q̄ loses the
rejected token and is renormalised). When all siblings fail, the output comes from the final residual;
when a leaf is accepted, a bonus token from the leaf's p. Exact for the warped target (App. A-B).

Choices where the paper is silent (see ``tree_verifier``): the depth is cut to the tokens still allowed;
without replacement, a node never gets more children than its q has support (Algorithm 2 cannot
draw past it); with replacement, a duplicate sibling keeps no subtree (it can never be accepted);
temperature 0 is the exact-match rule with top-k siblings (without replacement) or the argmax
repeated (with replacement, which is then chain SD; the paper's argmax setting, §4.1).
"""

from __future__ import annotations

from typing import Iterator

from specviz.algorithms.cost import k_config_cost
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafter_choice import DRAFTER
from specviz.algorithms.registry import Param, register
from specviz.algorithms.tree_engine import run_tree
from specviz.core.trees import k_config_shape, parse_k_config
from specviz.trace import StepRecord

K_CONFIG_HELP = (
    "children per node at each level, e.g. 4x2x2 (4 under the root, 2 under each of those, ...): "
    "widths in ASCII digits joined by a lowercase x, no spaces"
)


@register(
    "mcsd",
    description="Multi-candidate SD: a k1xk2x... draft tree, siblings verified in turn "
    "against the residual (with or without replacement).",
    paper="Yang et al. 2024, Multi-Candidate Speculative Decoding, Algorithms 1-2",
    params=(
        Param("k_config", "4x2x2", "str", help=K_CONFIG_HELP, check=parse_k_config),
        Param(
            "replacement",
            False,
            "bool",
            help="draw siblings i.i.d. (Algorithm 1) instead of without replacement (Algorithm 2)",
        ),
        DRAFTER,
    ),
    cost=k_config_cost,
    color="#db2777",
    page_rank=4,
)
def run_mcsd(dec: Decoder, k_config: str, replacement: bool) -> Iterator[StepRecord]:
    shape = k_config_shape(parse_k_config(k_config))
    yield from run_tree(dec, shape, replacement=replacement)
