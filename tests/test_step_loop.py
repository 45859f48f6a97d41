"""The step loop's contracts (issue #22 points 1 and 3): every algorithm's step has the same timing
fields, set by the loop; a verifier's ``record`` is a pure function of its outcome (it draws nothing
and gives the same record twice); drafters get a frozen plan, never the controller."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from tiny import tiny_pair

import specviz
from specviz.algorithms.step_loop import take_step
from specviz.algorithms.step_types import Plan
from specviz.core.trees import chain_shape

TIMINGS = ["draft_ms", "verify_ms", "total_ms", "bookkeeping_ms"]
CASES = [
    ("ar", {}),
    ("sd", {"gamma": 3}),
    ("sd", {"controller": "beta_ts"}),
    ("mcsd", {"k_config": "2x2"}),
    ("pld", {"num_tokens": 3}),
    ("dyntree", {"nodes": 5, "depth": 3, "topk": 2}),
    ("beam", {"width": 3}),
    ("dsbd", {"width": 3, "gamma": 2}),
]


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=16, draft="noisy", noise=0.5)


@pytest.mark.parametrize("algorithm,params", CASES, ids=[f"{a}-{i}" for i, (a, _) in enumerate(CASES)])
def test_every_step_is_timed_by_the_loop(pair, algorithm, params):
    trace = specviz.decode(pair, algorithm, [1, 2, 3, 1, 2], max_new_tokens=8, seed=1, **params, temperature=1.0)
    for s in trace.steps:
        assert list(s.timings) == TIMINGS
        assert s.timings["total_ms"] >= s.timings["draft_ms"] + s.timings["verify_ms"] - 1e-9
        assert s.timings["bookkeeping_ms"] >= 0 and s.timings["verify_ms"] > 0


@pytest.mark.parametrize("temperature", [0.0, 1.0])
@pytest.mark.parametrize(
    "algorithm,params",
    [("mcsd", {"k_config": "2x2"}), ("beam", {"width": 3}), ("dsbd", {"width": 3, "gamma": 2})],
    ids=["tree", "beam", "forest"],
)
def test_recording_is_a_pure_function_of_the_outcome(pair, monkeypatch, algorithm, params, temperature):
    """Each verifier's ``record``, called twice on the same outcome, draws nothing and gives equal records."""
    import specviz.algorithms.beams.beam_verifier as bv
    import specviz.algorithms.beams.layer_verifier as lv
    import specviz.algorithms.tree_verifier as tv

    calls = []
    for cls in (tv.TreeVerifier, bv.BeamVerifier, lv.LayerVerifier):
        real = cls.record

        def twice(self, dec, proposal, outcome, real=real):
            state = dec.generator.get_state()
            first, second = real(self, dec, proposal, outcome), real(self, dec, proposal, outcome)
            assert torch.equal(state, dec.generator.get_state())
            assert dataclasses.asdict(first) == dataclasses.asdict(second)
            calls.append(1)
            return first

        monkeypatch.setattr(cls, "record", twice)
    run = specviz.decode(pair, algorithm, [1, 2, 3], max_new_tokens=8, seed=3, temperature=temperature, **params)
    assert len(calls) == len(run.steps) > 0


def test_a_plan_is_frozen():
    plan = Plan(chain_shape(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.width = 2  # type: ignore[misc]
    assert len(plan.cut(1).shape) == 1 and len(plan.cut(-2).shape) == 0 and len(plan.shape) == 3


def test_take_step_returns_the_record_and_the_result(pair):
    from specviz.algorithms.decoder import Decoder
    from specviz.algorithms.drafters import ModelDrafter
    from specviz.algorithms.tree_engine import StaticShape
    from specviz.algorithms.tree_verifier import TreeVerifier
    from specviz.core.rules import MultiCandidate
    from specviz.core.sampling import SamplingConfig

    dec = Decoder(pair, [1, 2, 3], 6, SamplingConfig(1.0), seed=0)
    record, result = take_step(
        dec, 0, ModelDrafter(dec.draft), TreeVerifier(MultiCandidate(True)), StaticShape(chain_shape(3))
    )
    assert result.index == record.index == 0 and result.produced == len(record.committed)
    assert [n.id for n in record.forest if n.status == "accepted"] == result.path
    assert record.target_calls == 1 and record.draft_calls == len(result.plan.shape)
