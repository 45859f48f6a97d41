"""``mcsd`` (both variants), ``specinfer`` and ``sequoia`` preserve the target distribution exactly.

The law of the first two generated tokens is compared (chi-square on the joint law and on the first
token's marginal, ``tiny.goodness_of_fit``) with the exactly enumerated target law, on a tiny pair
whose draft is a different model (rejections are frequent), at temperature 1 and at 0.7 with top-k
and top-p. At temperature 1 each run may generate three tokens, so the first step drafts a two-level
tree and the first two tokens go through sibling verification, residuals and the accepted child's own
p and q rows; with the warps each run generates two tokens (a one-level tree: sibling verification
on truncated supports, Sequoia's uniform fallback, the bonus from a leaf) to halve the cost. The same
test must flag MCSD without replacement with the residual update order swapped (q updated before the
residual), so it has the power to see such a bias.

Budget: one run costs 2-5 model calls (5-12 ms on a 2-core CPU), so 2500 runs per case. At that size
moving 4% of the probability mass from the second to the first likeliest first token is caught 80%
of the time (3%: a third of the time; simulated with these laws), and the wrong residual order
(about 4% of total variation on the first token) fails with p = 1e-5 at 2000 runs. Smaller biases
in the rules themselves are excluded by ``test_acceptance.py``, which checks them exactly (1e-6,
no sampling); what this file adds is the plumbing: draft and target rows, caches, tree shapes.
"""

import pytest
from tiny import exact_distribution, goodness_of_fit, sample_counts, tiny_pair

from specviz.core import acceptance
from specviz.core.sampling import SamplingConfig

RUNS = 2500
PROMPT = [1, 2, 3]
T1 = SamplingConfig(1.0)
WARPED = SamplingConfig(0.7, top_k=5, top_p=0.9)
CASES = [
    ("mcsd", {"k_config": "3x2"}),
    ("mcsd", {"k_config": "3x2", "replacement": True}),
    ("specinfer", {"k_config": "3x1"}),
    ("sequoia", {"size": 8, "depth": 3, "calibration_steps": 64}),
]


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=8, draft="different")


@pytest.mark.slow
@pytest.mark.parametrize("sampling", [T1, WARPED], ids=["t1", "t07-topk-topp"])
@pytest.mark.parametrize("algorithm,params", CASES, ids=["mcsd", "mcsd-replacement", "specinfer", "sequoia"])
def test_first_two_tokens_follow_the_target(pair, algorithm, params, sampling):
    law = exact_distribution(pair, PROMPT, 2, sampling)
    counts = sample_counts(pair, algorithm, PROMPT, 2, RUNS, sampling, budget=3 if sampling is T1 else 2, **params)
    assert goodness_of_fit(counts, law) > 1e-3


@pytest.mark.slow
def test_the_test_sees_a_wrong_residual_order(pair, monkeypatch):
    """MCSD Algorithm 2 / Eq. 10: zeroing and renormalising q *before* taking the residual is biased."""

    def q_first(res, d, x, rejected):
        d = d.clone()
        d[x] = 0.0
        d = d / d.sum()
        return acceptance.residual(res, d), d

    monkeypatch.setattr(acceptance, "reject_without_replacement", q_first)
    law = exact_distribution(pair, PROMPT, 2, T1)
    counts = sample_counts(pair, "mcsd", PROMPT, 2, 2000, T1, k_config="3x2")
    assert goodness_of_fit(counts, law) < 1e-3
