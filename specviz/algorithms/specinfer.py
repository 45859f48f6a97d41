"""``specinfer``: SpecInfer's multi-step speculative sampling on a given tree (Miao et al. 2024;
Sequoia paper App. B.2, Algorithm 3), the baseline Sequoia is compared with.

Siblings are sampled from the draft **with replacement**; at each node they are tested in draw
order, accepting x with ``min(1, R(x)/q(x))`` and replacing the target R by ``norm(max(R - q, 0))``
after each rejection (q never changes); if all fail the output comes from R. This is exactly MCSD's
Algorithm 1, so the two share ``core.acceptance``; the difference is the tree: the default
``4x1x1x1`` is four independent chains of four tokens, the "k x L" shape of the SpecInfer baselines
in the Sequoia paper (arXiv:2402.12374, §4 baselines); any k-config is accepted. Duplicate siblings are shown and
rejected with probability 1, the failure mode Sequoia's without-replacement rule removes.
"""

from __future__ import annotations

from typing import Iterator

from specviz.algorithms.cost import k_config_cost
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafter_choice import DRAFTER
from specviz.algorithms.mcsd import K_CONFIG_HELP
from specviz.algorithms.registry import Param, register
from specviz.algorithms.tree_engine import run_tree
from specviz.core.trees import k_config_shape, parse_k_config
from specviz.trace import StepRecord


@register(
    "specinfer",
    description="SpecInfer: a draft tree sampled with replacement, verified by "
    "residual rejection sampling (default: 4 independent chains of 4).",
    paper="Miao et al. 2024 (SpecInfer); Sequoia paper App. B.2, Algorithm 3",
    params=(Param("k_config", "4x1x1x1", "str", help=K_CONFIG_HELP, check=parse_k_config), DRAFTER),
    cost=k_config_cost,
    color="#7c3aed",
    page_rank=3,
)
def run_specinfer(dec: Decoder, k_config: str) -> Iterator[StepRecord]:
    shape = k_config_shape(parse_k_config(k_config))
    yield from run_tree(dec, shape, replacement=True)
