"""What every registered algorithm owes, generated from the registry (issue #37 point 2): a new
algorithm is held to all of it by registering, with no edit here. ``docs/architecture.md`` ("Adding an
algorithm") lists the obligations; the ones tested elsewhere, also over every registration:

- its golden trace (``tests/test_golden_traces.py``; a case at its defaults is made for an algorithm no
  case runs: ``python -m tests.test_golden_traces --regen NAME`` writes its files), which reads into its
  typed step state, writes back the same object and draws its views (``tests/test_step_state.py``);
- its cost bound (``register(..., cost=...)``) above what its runs read, under every controller it
  declares (``tests/test_budget_bound.py``);
- every fact its registration carries (``tests/test_registry.py``).

Here, for a lossless registration (``lossless=True``): greedy decoding equals ``ar``'s token for token on
the four full-attention families of ``tiny.py``, and the first two tokens follow the exactly enumerated
target law at two temperatures (1, and 0.7 with top-k and top-p), by chi-square. Power: ``RUNS`` = 2500
draws at vocabulary 8, as ``test_trees_exactness.py`` (its bias control shows this size of test rejects
a wrong residual order); ``SPECVIZ_EXACTNESS_RUNS`` raises it. An algorithm with its own test of the same
law at both temperatures and at least this power (``DEDICATED``, with its bias control there) is not
sampled twice: the suite's time goes to one test per law, and the map is checked against the files it
names. A lossy registration states its own law in its own test file (``test_biased_sd.py``,
``test_beams_law.py``, ``test_dsbd.py``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tiny import FAMILIES, exact_distribution, goodness_of_fit, sample_counts, tiny_pair, with_feature_head

import specviz
from specviz.core.sampling import SamplingConfig
from specviz.models.loading import attach_early_exit

RUNS = int(os.environ.get("SPECVIZ_EXACTNESS_RUNS", 2500))
PROMPT = [1, 2, 3]
SETTINGS = {"t1": SamplingConfig(1.0), "t07-topk-topp": SamplingConfig(0.7, top_k=5, top_p=0.9)}
#: what keeps a run short where the defaults would spend it before the first step (Sequoia's calibration
#: of 64 steps on built-in prompts): the obligation is the same at these settings
QUICK = {"sequoia": {"acceptance": "0.6,0.2,0.1"}}
LOSSLESS = [name for name, spec in specviz.ALGORITHMS.items() if spec.lossless]
#: the lossless algorithms whose target law is tested in their own file, at both settings of ``SETTINGS``
#: with at least ``RUNS`` draws (or 2000 with a bias control that shows the power; ``ar``, which samples the
#: target itself, at temperature 1)
DEDICATED = {
    "ar": "test_exactness.py",
    "sd": "test_exactness.py",
    "batch_sd": "test_batch_sd.py",
    "dyntree": "test_dyntree.py",
    "eesd": "test_eesd.py",
    "pld": "test_pld.py",
    "mcsd": "test_trees_exactness.py",
    "specinfer": "test_trees_exactness.py",
    "sequoia": "test_trees_exactness.py",
}


def pair_for(name: str, family: str, **kw):
    """A tiny pair with what ``name``'s registration says drafts for it."""
    spec = specviz.ALGORITHMS[name]
    pair = tiny_pair(family, draft="noisy", **kw)
    if spec.drafter == "early_exit":
        return attach_early_exit(pair, 1)
    if spec.drafter == "feature":
        return with_feature_head(pair)
    return pair


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("name", LOSSLESS)
def test_greedy_equals_ar(name, family):
    pair = pair_for(name, family, vocab=64, init_range=0.05, hidden=32, noise=0.2, layers=2)
    for prompt in ([1, 2, 3, 4], [17, 5, 42, 9, 9, 30, 2]):
        ar = specviz.decode(pair, "ar", prompt, max_new_tokens=24, temperature=0).output_ids
        out = specviz.decode(pair, name, prompt, max_new_tokens=24, temperature=0, seed=3, **QUICK.get(name, {}))
        assert out.output_ids == ar, (name, family, prompt)


def test_the_dedicated_exactness_tests_exist():
    """Each ``DEDICATED`` entry names a lossless registration and a test file that samples it against the
    enumerated law (``sample_counts`` and ``goodness_of_fit``) at both temperatures of ``SETTINGS``."""
    here = Path(__file__).parent
    for name, file in DEDICATED.items():
        assert name in LOSSLESS, name
        text = (here / file).read_text()
        assert (
            "goodness_of_fit(" in text and f'"{name}"' in text and "SamplingConfig(0.7, top_k=5, top_p=0.9)" in text
        ), (name, file)


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize(
    "name",
    [n for n in LOSSLESS if n not in DEDICATED]
    or [pytest.param("-", marks=pytest.mark.skip(reason="every lossless algorithm has its own"))],
)
def test_first_two_tokens_follow_the_target(name, setting):
    sampling = SETTINGS[setting]
    pair = pair_for(name, "llama", vocab=8, layers=2)
    law = exact_distribution(pair, PROMPT, 2, sampling)
    counts = sample_counts(pair, name, PROMPT, 2, RUNS, sampling, budget=3, **QUICK.get(name, {}))
    assert goodness_of_fit(counts, law) > 1e-3, (name, setting)
