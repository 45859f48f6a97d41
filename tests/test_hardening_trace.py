"""Trace JSON parsing against malformed and hostile input (property-based, hypothesis): every input
either raises ``TraceFormatError`` with a message or gives a trace that writes and reads back."""

from __future__ import annotations

import json
import math
import sys
import types

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import specviz
from specviz.errors import TraceFormatError
from specviz.trace import RunTrace
from tests.tiny import tiny_pair

PAIR = tiny_pair("llama", vocab=8)
VALID = json.loads(specviz.decode(PAIR, "mcsd", [1, 2, 3], max_new_tokens=6, seed=0, temperature=1.0).to_json())

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**30, max_value=10**300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.just([[[[[[[[[[[]]]]]]]]]]]),
    st.just({"a": {"b": {"c": {}}}}),
)
JSON = st.recursive(
    HOSTILE,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=30,
)


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


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000 + "]" * 100_000,  # deep nesting
        "[" * 1000 + "]" * 1000,  # deeper than json.loads goes at Python's default limit, not than orjson goes
        '{"schema_version": 2, "params": ' + "[" * 50_000 + "]" * 50_000 + "}",
        "1" * 5000,  # an integer beyond Python's 4300-digit conversion limit
        '{"schema_version": 2, "seed": ' + "9" * 5000 + "}",
        '{"schema_version": 1e999}',
        "NaN",
        '{"schema_version": NaN}',
        '{"schema_version": true}',
        json.dumps({**VALID, "seed": float("nan")}, allow_nan=True),
        json.dumps({**VALID, "prompt_ids": [1.5]}),
        json.dumps({**VALID, "steps": ["not a step"]}),
        json.dumps({**VALID, "steps": [[["index", 0]]]}),
    ],
    ids=lambda t: t[:24],
)
def test_hostile_texts(text):
    check(RunTrace.from_json, text)


def _deep(depth: int) -> list:
    """``[[[...]]]``, ``depth`` lists deep, built without recursion."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


# Free-form parts of a trace (a run's params, a step's rule or timings, a state of a kind unknown here)
# nested past json_values.FREE_DEPTH, at depths each parser reads: 20 (everything), 1000 (orjson, not
# json.loads at Python's default recursion limit), 5000 (json.loads under a raised limit).
def _deep_traces(depth: int) -> list[str]:
    inner = _deep_text(depth)
    step = json.dumps(VALID["steps"][0])[:-1]
    return [
        json.dumps({**VALID, "params": {"x": "@"}}).replace('"@"', inner),
        json.dumps({**VALID, "metrics": {"x": "@"}}).replace('"@"', inner),
        json.dumps({**VALID, "steps": ["@"]}).replace('"@"', step + ', "rule": {"x": ' + inner + "}}"),
        json.dumps({**VALID, "steps": ["@"]}).replace('"@"', step + ', "timings": {"x": ' + inner + "}}"),
        json.dumps({**VALID, "steps": ["@"]}).replace(
            '"@"',
            json.dumps({**VALID["steps"][0], "controller": {"kind": "from_elsewhere", "x": "@"}}).replace('"@"', inner),
        ),
    ]


@pytest.mark.parametrize("depth", [20, 1000])
def test_free_form_fields_nested_too_deep_are_refused_in_words(depth):
    for text in _deep_traces(depth):
        with pytest.raises(TraceFormatError, match="levels deep|nested too deeply"):
            RunTrace.from_json(text)
    deep = {"x": _deep(depth)}
    with pytest.raises(TraceFormatError, match="params nests lists and objects more than 16 levels deep"):
        RunTrace.from_dict({**VALID, "params": deep})
    with pytest.raises(TraceFormatError, match=r"steps\[0\].controller nests .* more than 16 levels deep"):
        RunTrace.from_dict({**VALID, "steps": [{**VALID["steps"][0], "controller": {"kind": "new", **deep}}]})


def test_free_form_fields_at_the_depth_bound_still_read():
    shallow = {"x": _deep(15)}  # 16 levels with the object itself
    check(RunTrace.from_dict, {**VALID, "params": shallow, "metrics": {**VALID["metrics"], **shallow}})
    # the schema reads it; the values' check then refuses an unknown parameter that is no plain value, in words
    assert RunTrace._read({**VALID, "params": shallow}, own=False).params == shallow


def test_deep_json_is_refused_in_words_whatever_the_recursion_limit():
    """A test library or a model stack may leave ``sys.setrecursionlimit`` raised (json.loads then reads
    deeper than orjson does): the answer is the same sentence, never a RecursionError."""
    texts = [
        _deep_text(5000),
        _deep_text(1000),
        '{"schema_version": 6, "params": ' + _deep_text(5000) + "}",
        *_deep_traces(5000),
    ]
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        for text in texts:
            check(RunTrace.from_json, text)
            with pytest.raises(TraceFormatError):
                RunTrace.from_json(text)
    finally:
        sys.setrecursionlimit(old)


def test_an_orjson_that_reads_any_depth_is_not_used():
    from specviz import fast_json

    assert fast_json._orjson is None or fast_json._bounded(fast_json._orjson)  # the installed one bounds its depth
    assert not fast_json._bounded(types.SimpleNamespace(loads=lambda raw: []))  # before 3.9.15: any depth


def test_wrong_types_are_refused_with_the_field_named():
    with pytest.raises(TraceFormatError, match="prompt_ids"):
        RunTrace.from_dict({**VALID, "prompt_ids": "abc"})
    with pytest.raises(TraceFormatError, match=r"steps\[0\].forest\[0\].token_id"):
        RunTrace.from_dict(_replace(VALID, ("steps", 0, "forest", 0, "token_id"), math.inf))
    with pytest.raises(TraceFormatError):
        RunTrace.from_json(12)


# ``fast_json.loads`` (orjson where it reads exactly what json reads, json.loads otherwise): the same values,
# types, key order and float bits as ``json.loads``, and the same error, for any text.
def _same(a, b) -> bool:
    """Equal values, types, key order and float bits, compared level by level (no recursion: under a raised
    recursion limit json.loads reads nesting far deeper than a recursive comparison could walk)."""
    pairs = [(a, b)]
    while pairs:
        a, b = pairs.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            if list(a) != list(b):
                return False
            pairs.extend((a[k], b[k]) for k in a)
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            pairs.extend(zip(a, b))
        elif isinstance(a, float):
            if repr(a) != repr(b):
                return False
        elif a != b:
            return False
    return True


def _outcome(parse, text):
    try:
        return "ok", parse(text)
    except Exception as exc:  # noqa: BLE001 - the kind and words of the error are compared
        return "error", (type(exc), str(exc))


def _parses_as_json(text) -> None:
    from specviz.trace import loads

    want, got = _outcome(json.loads, text), _outcome(loads, text)
    assert want[0] == got[0] and (_same(want[1], got[1]) if want[0] == "ok" else want[1] == got[1]), (text, want, got)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "a": 2}',
        '{"a": 1, "b": 2, "a": 3}',
        "1e999",
        "-1e999",
        "NaN",
        "[Infinity, -Infinity]",
        "-0",
        "-0.0",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        "9999999999999999999",
        "-9999999999999999999",
        '{"seed":\t123456789012345678901234567890}',
        "[1,\n-12345678901234567890]",
        "1e-0000000000000000000001",
        '"\\ud800"',
        '{"\\ud800": 1}',
        '"\ud800"',
        "\ufeff{}",
        " {} ",
        "{} x",
        "[" * 2000 + "]" * 2000,
        '"\\u0000"',
        "[5e-324, 2.2250738585072014e-308]",
        "0.30000000000000004441",
        "1.00000000000000011102230246251565404236316680908203125",
        '"12345678901234567890"',
        b'\xef\xbb\xbf{"a": 1}',
        '{"a": 1}'.encode("utf-16"),
        '{"a": 1}'.encode("utf-32-le"),
        b"\xff",
        b'{"a": 1}',
    ],
)
def test_loads_reads_as_json_does(text):
    _parses_as_json(text)


@pytest.mark.parametrize("limit", [1000, 2500, 20_000])
@pytest.mark.parametrize("depth", [900, 2000, 5000])
def test_loads_reads_deep_nesting_as_json_does_whatever_the_recursion_limit(limit, depth):
    """Whoever last set ``sys.setrecursionlimit`` (Hypothesis while it runs a test, Inductor when it compiles)
    decides how deep json.loads reads; fast_json.loads reads as deep, or fails with the same error."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        _parses_as_json("[" * depth + "]" * depth)
    finally:
        sys.setrecursionlimit(old)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_loads_reads_any_json_as_json_does(value):
    _parses_as_json(json.dumps(value, allow_nan=True))
    _parses_as_json(json.dumps(value, allow_nan=True, ensure_ascii=False))


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200)))
def test_loads_reads_any_text_as_json_does(text):
    _parses_as_json(text)


def test_json_values_describe_any_value_in_a_few_words():
    from specviz.json_values import describe, nests_within

    assert describe([1, 2]) == "a list ([1, 2])" and describe("abc") == 'a string ("abc")'
    assert describe(_deep(100_000)) == "a list" and describe(list(range(1000))) == "a list"
    assert describe(10**5000) == "a whole number" and describe("x" * 10_000) == "a string"
    assert describe(None) == "null" and describe(True) == "true/false (true)"
    assert [nests_within(v, 2) for v in (1, [1], {"a": [1]}, [[[1]]], [[[]]], [{}, [1]], [{}, [[]]])] == [
        True,
        True,
        True,
        False,
        False,
        True,
        False,
    ]
    assert nests_within(_deep(100_000), 100_000) and not nests_within(_deep(100_000), 99_999)
