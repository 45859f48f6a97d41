"""Trace JSON parsing against malformed and hostile input (property-based, hypothesis): every input
either raises ``TraceFormatError`` with a message or gives a trace that writes and reads back."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import specviz
from specviz.errors import TraceFormatError
from specviz.trace import RunTrace
from tests.tiny import tiny_pair

PAIR = tiny_pair("llama", vocab=8)
VALID = json.loads(specviz.decode(PAIR, "mcsd", [1, 2, 3], max_new_tokens=6, seed=0).to_json())

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=10**30, max_value=10**300),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.just([[[[[[[[[[[]]]]]]]]]]]), st.just({"a": {"b": {"c": {}}}}),
)
JSON = st.recursive(HOSTILE, lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                                                       max_size=4), max_leaves=30)


def check(parse, arg) -> None:
    """``parse(arg)`` raises TraceFormatError with a message, or returns a trace that round-trips."""
    try:
        trace = parse(arg)
    except TraceFormatError as exc:
        assert str(exc).strip()
        return
    assert isinstance(trace, RunTrace)
    text = trace.to_json()
    assert RunTrace.from_json(text).to_json() == text


def _paths(value, prefix=()):
    """Every (path, value) inside a decoded JSON value."""
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


PATHS = [p for p, _ in _paths(VALID) if p]


def _replace(data, path, value):
    data = json.loads(json.dumps(data))
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


def test_the_valid_trace_reads_back():
    check(RunTrace.from_dict, VALID)
    assert len(RunTrace.from_dict(VALID).steps) == len(VALID["steps"]) > 0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), JSON)
def test_one_field_replaced_by_hostile_value(path, value):
    data = _replace(VALID, path, value)
    check(RunTrace.from_dict, data)
    check(RunTrace.from_json, json.dumps(data, allow_nan=True))


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_arbitrary_json(value):
    check(RunTrace.from_dict, value)
    check(RunTrace.from_json, json.dumps(value, allow_nan=True))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_arbitrary_text_and_bytes(text):
    check(RunTrace.from_json, text)


@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,  # deep nesting
    '{"schema_version": 2, "params": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "1" * 5000,  # an integer beyond Python's 4300-digit conversion limit
    '{"schema_version": 2, "seed": ' + "9" * 5000 + "}",
    '{"schema_version": 1e999}', "NaN", '{"schema_version": NaN}', '{"schema_version": true}',
    json.dumps({**VALID, "seed": float("nan")}, allow_nan=True),
    json.dumps({**VALID, "prompt_ids": [1.5]}),
    json.dumps({**VALID, "steps": ["not a step"]}),
    json.dumps({**VALID, "steps": [[["index", 0]]]}),
], ids=lambda t: t[:24])
def test_hostile_texts(text):
    check(RunTrace.from_json, text)


def test_wrong_types_are_refused_with_the_field_named():
    with pytest.raises(TraceFormatError, match="prompt_ids"):
        RunTrace.from_dict({**VALID, "prompt_ids": "abc"})
    with pytest.raises(TraceFormatError, match=r"steps\[0\].forest\[0\].token_id"):
        RunTrace.from_dict(_replace(VALID, ("steps", 0, "forest", 0, "token_id"), math.inf))
    with pytest.raises(TraceFormatError):
        RunTrace.from_json(12)


# ``trace.loads`` (orjson where it reads exactly what json reads, json.loads otherwise): the same values,
# types, key order and float bits as ``json.loads``, and the same error, for any text.
def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def _outcome(parse, text):
    try:
        return "ok", parse(text)
    except Exception as exc:  # noqa: BLE001 - the kind and words of the error are compared
        return "error", (type(exc), str(exc))


def _parses_as_json(text) -> None:
    from specviz.trace import loads

    want, got = _outcome(json.loads, text), _outcome(loads, text)
    assert want[0] == got[0] and (_same(want[1], got[1]) if want[0] == "ok" else want[1] == got[1]), (text, want, got)


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}', '{"a": 1, "b": 2, "a": 3}', "1e999", "-1e999", "NaN", "[Infinity, -Infinity]", "-0", "-0.0",
    "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
    "9999999999999999999", "-9999999999999999999", '{"seed":\t123456789012345678901234567890}',
    '[1,\n-12345678901234567890]', "1e-0000000000000000000001", '"\\ud800"', '{"\\ud800": 1}', '"\ud800"',
    "\ufeff{}", " {} ", "{} x", "[" * 2000 + "]" * 2000, '"\\u0000"', "[5e-324, 2.2250738585072014e-308]",
    "0.30000000000000004441", "1.00000000000000011102230246251565404236316680908203125", '"12345678901234567890"',
    b'\xef\xbb\xbf{"a": 1}', '{"a": 1}'.encode("utf-16"), '{"a": 1}'.encode("utf-32-le"), b"\xff", b'{"a": 1}',
])
def test_loads_reads_as_json_does(text):
    _parses_as_json(text)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_loads_reads_any_json_as_json_does(value):
    _parses_as_json(json.dumps(value, allow_nan=True))
    _parses_as_json(json.dumps(value, allow_nan=True, ensure_ascii=False))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_loads_reads_any_text_as_json_does(text):
    _parses_as_json(text)
