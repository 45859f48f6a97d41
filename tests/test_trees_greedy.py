"""At temperature 0 ``mcsd``, ``specinfer`` and ``sequoia`` reproduce ``ar`` greedy output token for
token on the full-attention and the sliding-window families of ``tiny.py`` (close drafts, so long
accepted paths, KV commits of tree paths and residual fallbacks all happen; on the sliding families
the 32 new tokens run far past the window), and their traces are consistent. ``test_greedy.py``
checks ``ar`` against transformers' own greedy decoding."""

import json

import pytest
from tiny import FAMILIES, SLIDING_FAMILIES, tiny_pair

import specviz
from specviz.errors import InvalidParameterError
from specviz.trace import DRAFTED

PROMPTS = [[1, 2, 3, 4], [17, 5, 42, 9, 9, 30, 2]]
CONFIGS = [
    ("mcsd", {"k_config": "4x2x2"}),
    ("mcsd", {"k_config": "2x2x1x1x1", "replacement": True}),
    ("specinfer", {"k_config": "3x1x1x1"}),
    ("sequoia", {"size": 16, "depth": 6, "calibration_steps": 32}),
]
NEW_TOKENS = 32


@pytest.fixture(scope="module", params=FAMILIES + SLIDING_FAMILIES)
def pair(request):
    return tiny_pair(request.param, vocab=64, draft="noisy", init_range=0.05, hidden=32, noise=0.2)


def test_greedy_equals_ar(pair):
    taus = []
    for prompt in PROMPTS:
        ref = specviz.decode(pair, "ar", prompt, max_new_tokens=NEW_TOKENS, temperature=0).output_ids
        for algorithm, params in CONFIGS:
            trace = specviz.decode(pair, algorithm, prompt, max_new_tokens=NEW_TOKENS, temperature=0, seed=3, **params)
            assert trace.output_ids == ref, (algorithm, params)
            taus.append(trace.metrics["tau"])
    assert max(taus) > 2.0  # drafts are accepted often, so deep paths are exercised


@pytest.fixture(scope="module")
def llama():
    return tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32)


@pytest.mark.parametrize("algorithm,params", CONFIGS)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_trace_is_consistent(llama, algorithm, params, temperature):
    trace = specviz.decode(llama, algorithm, PROMPTS[0], max_new_tokens=24, temperature=temperature, seed=1, **params)
    assert len(trace.output_ids) == 24
    for step in trace.steps:
        nodes = step.forest
        assert [n.id for n in nodes] == list(range(len(nodes)))
        drafted, extra = nodes[:-1], nodes[-1]
        assert extra.status in ("resampled", "bonus")
        path = [n for n in drafted if n.status == "accepted"]
        # the accepted nodes form a root-to-node chain and the extra token hangs under its end
        for i, n in enumerate(path):
            assert n.parent == (path[i - 1].id if i else None) and n.depth == i
        assert extra.parent == (path[-1].id if path else None)
        assert [c.token_id for c in step.committed] == ([n.token_id for n in path] + [extra.token_id])[
            : len(step.committed)
        ]
        for n in drafted:
            assert 0 <= n.p <= 1 and n.status in DRAFTED
            if n.status != "not_reached":
                assert 0 <= n.accept_prob <= 1
            if n.status == "rejected" and n.draw is not None:
                assert n.draw >= n.accept_prob
            if n.status == "accepted" and n.draw is not None:
                assert n.draw < n.accept_prob
        assert step.draft_calls <= max((n.depth for n in drafted), default=-1) + 1
    back = specviz.RunTrace.from_json(trace.to_json())
    assert back.to_dict() == json.loads(trace.to_json())


def test_sequoia_controller(llama):
    trace = specviz.decode(
        llama,
        "sequoia",
        PROMPTS[1],
        max_new_tokens=30,
        temperature=1.0,
        seed=0,
        size=12,
        depth=5,
        hardware_aware=True,
        acceptance="0.6,0.2,0.1",
    )
    first = trace.steps[0].controller.to_json()
    assert first["kind"] == "sequoia" and first["acceptance_source"] == "given"
    assert first["acceptance"] == [0.6, 0.2, 0.1] and first["hardware_aware"]
    assert first["timing"]["sizes"][0] == 1 and first["speedup"]["n"] == first["n"] <= 12
    tree = first["tree"]
    assert len(tree["parents"]) == first["n"] and max(tree["levels"]) <= first["d"] - 1
    assert sum(tree["f"]) == pytest.approx(first["expected_tokens"])
    for step in trace.steps:
        c = step.controller.to_json()
        assert c["measured_tokens"] == step.n_accepted + 1
        assert len(c["accepted_ranks"]) == step.n_accepted
        assert 1 <= c["predicted_tokens"] <= c["step_d"]


def test_bad_parameters_get_clear_errors(llama):
    with pytest.raises(InvalidParameterError, match="k_config"):
        specviz.decode(llama, "mcsd", PROMPTS[0], max_new_tokens=4, k_config="4xtwo", temperature=1.0)
    with pytest.raises(InvalidParameterError, match="sum to at most 1"):
        specviz.decode(llama, "sequoia", PROMPTS[0], max_new_tokens=4, acceptance="0.9,0.5", temperature=1.0)


def test_same_seed_same_trace(llama):
    """Calibration is cached and seeded apart from the run, so a seed fixes the whole trace."""
    runs = [
        specviz.decode(llama, "sequoia", PROMPTS[0], max_new_tokens=16, seed=7, size=10, depth=4, temperature=1.0)
        for _ in range(2)
    ]
    assert runs[0].output_ids == runs[1].output_ids
    assert [s.controller.run.tree for s in runs[0].steps] == [s.controller.run.tree for s in runs[1].steps]


def test_acceptance_vector_is_joint_and_exact_for_a_self_draft(llama):
    """p_k is P(the k-th child is the accepted one): a draft equal to the target always accepts its
    first child; a different draft gives a vector summing to at most 1 with most mass on rank 1."""
    from specviz.algorithms.sequoia_tune import estimate_acceptance, isotonic
    from specviz.core.sampling import SamplingConfig
    from specviz.models.loading import ModelPair

    same = ModelPair(llama.target, llama.target, None, llama.vocab_size)
    for temperature in (0.0, 1.0):
        est = estimate_acceptance(same, SamplingConfig(temperature), width=8, steps=16)
        assert est.vector == (1.0,) + (0.0,) * 7 and est.steps == 16
    est = estimate_acceptance(tiny_pair("gpt2", vocab=16), SamplingConfig(1.0), width=8, steps=32)
    assert 0 < sum(est.vector) <= 1 and est.vector[0] == max(est.vector) and sum(est.counts) == est.steps
    assert isotonic([1.0, 3.0, 2.0, 4.0]) == [1.0, 2.5, 2.5, 4.0]
