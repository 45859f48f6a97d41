"""The per-step trace: what every step records, its metrics, the JSON round trip, seeding,
EOS and max_new_tokens honoured exactly, and ``stream`` yielding the same steps as ``decode``."""

import json

import pytest
from tiny import tiny_pair

import specviz
from specviz.errors import TraceFormatError
from specviz.trace import NODE_STATUSES, TOKEN_KINDS


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=16, draft="noisy", noise=0.5)


def test_steps_account_for_every_token(pair):
    trace = specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=25, temperature=1.0, seed=3, gamma=4)
    assert len(trace.output_ids) == 25 and trace.finish_reason == "length"
    assert [t.token_id for s in trace.steps for t in s.committed] == trace.output_ids
    for step in trace.steps:
        assert step.n_before == sum(len(s.committed) for s in trace.steps[: step.index])
        assert {n.status for n in step.forest} <= set(NODE_STATUSES)
        assert {t.kind for t in step.committed} <= set(TOKEN_KINDS)
        # exactly one resampled or bonus token ends every step that was not cut by the budget
        if step is not trace.steps[-1]:
            assert step.committed[-1].kind in ("resampled", "bonus")
            assert all(t.kind == "draft" for t in step.committed[:-1])
        for node in step.forest:
            if node.status in ("accepted", "rejected"):
                assert 0 < node.q <= 1 and 0 <= node.p <= 1
                assert node.accept_prob == pytest.approx(min(1.0, node.p / node.q))
                if node.draw is None:  # a certain outcome uses no coin
                    assert node.accept_prob == (1.0 if node.status == "accepted" else 0.0)
                else:
                    assert 0 <= node.draw < 1
                    assert (node.draw < node.accept_prob) == (node.status == "accepted")
        assert step.timings["total_ms"] >= step.timings["verify_ms"] > 0
    m = trace.metrics
    assert m["target_calls"] == len(trace.steps)
    assert m["tau"] == pytest.approx(25 / len(trace.steps))
    assert m["acceptance_rate"] == pytest.approx(m["accepted"] / m["drafted"])
    assert m["accepted"] == sum(1 for s in trace.steps for t in s.committed if t.kind == "draft")


def test_same_seed_same_trace_and_json_round_trip(pair):
    a = specviz.decode(pair, "sd", [1, 2], max_new_tokens=30, temperature=0.8, seed=11, gamma=3)
    b = specviz.decode(pair, "sd", [1, 2], max_new_tokens=30, temperature=0.8, seed=11, gamma=3)
    c = specviz.decode(pair, "sd", [1, 2], max_new_tokens=30, temperature=0.8, seed=12, gamma=3)
    strip = lambda t: [[(n.token_id, n.status, n.draw) for n in s.forest] for s in t.steps]  # noqa: E731
    assert strip(a) == strip(b) and a.output_ids == b.output_ids
    assert strip(a) != strip(c)
    again = specviz.RunTrace.from_json(a.to_json())
    assert again == a
    assert json.loads(again.to_json())["schema_version"] == specviz.trace.SCHEMA_VERSION == 6


def test_stream_yields_the_steps_live(pair):
    run = specviz.stream(pair, "sd", [1, 2, 3], max_new_tokens=12, temperature=0, gamma=2)
    seen = []
    for step in run:
        seen.append(step.index)
        assert run.trace.steps[-1] is step  # the trace grows as steps arrive
    assert seen == list(range(len(run.trace.steps)))
    assert run.trace.metrics["new_tokens"] == 12
    assert (
        run.trace.output_ids
        == specviz.decode(pair, "sd", [1, 2, 3], max_new_tokens=12, temperature=0, gamma=2).output_ids
    )


@pytest.mark.parametrize("algo", ["ar", "sd"])
def test_eos_stops_exactly(pair, algo):
    free = specviz.decode(pair, algo, [1, 2, 3], max_new_tokens=30, temperature=1.0, seed=5)
    eos = free.output_ids[7]
    first = free.output_ids.index(eos)
    pair.target.generation_config.eos_token_id = eos
    try:
        # room for 200 tokens: sd's random stream differs once EOS exists (no draft past an EOS draft)
        stopped = specviz.decode(pair, algo, [1, 2, 3], max_new_tokens=200, temperature=1.0, seed=5)
    finally:
        pair.target.generation_config.eos_token_id = None
    assert stopped.finish_reason == "eos"
    assert stopped.output_ids[-1] == eos and eos not in stopped.output_ids[:-1]
    if algo == "ar":  # same random stream: same text up to and including the first EOS
        assert stopped.output_ids == free.output_ids[: first + 1]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_max_new_tokens_is_never_overshot(pair, n):
    trace = specviz.decode(pair, "sd", [1], max_new_tokens=n, temperature=1.0, gamma=8)
    assert len(trace.output_ids) == n and sum(len(s.committed) for s in trace.steps) == n


@pytest.mark.parametrize("text", ["", "{", "[]", '{"schema_version": 99}', '{"schema_version": 1, "steps": 3}'])
def test_malformed_traces_are_refused(text):
    with pytest.raises(TraceFormatError):
        specviz.RunTrace.from_json(text)


@pytest.mark.parametrize("text", ['{"algorithm": "sd"}', "{}"])
def test_a_trace_without_a_version_is_told_the_field_is_missing(text):
    """Issue 35, point 4: not "Trace schema version None"."""
    with pytest.raises(TraceFormatError, match="has no schema_version field") as caught:
        specviz.RunTrace.from_json(text)
    assert "None" not in str(caught.value)


def test_reading_a_trace_loads_no_model_library():
    """``import specviz.trace`` (and the errors) is plain Python: replaying or checking a trace's data
    needs neither torch nor transformers (``specviz.decode`` and friends load them on first use, as every
    other test does)."""
    import subprocess
    import sys

    code = (
        "import sys, specviz.trace, specviz\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'eager'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
