"""The public API's error contract (issue 21, point 5): a bad value of ``decode``, ``stream``,
``load_pair``, any registered algorithm parameter or the CLI is refused by a ``SpecvizError`` whose
message names the parameter; a good one runs and is kept as given (nothing rounded, clamped or
read as something else). Hypothesis draws hostile values (NaN, infinities, huge and tiny floats,
bools, negative numbers, None, strings, long strings, lists, bytes); the reproductions of the issue
are checked one by one. Every model is a tiny random one and every run asks for at most 2 tokens."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tiny import save_checkpoint, tiny_model, tiny_pair, tiny_tokenizer

import specviz
from specviz.algorithms import ALGORITHMS, Param
from specviz.cli import main as cli_main
from specviz.errors import InvalidParameterError, ModelLoadError, PromptError, SpecvizError, UnknownAlgorithmError
from specviz.models.loading import ModelPair, attach_early_exit
from specviz.validation import MAX_SEED

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
NAN, INF = float("nan"), float("inf")
SPECIAL = [
    NAN,
    INF,
    -INF,
    1e308,
    -1e308,
    1e-45,
    5e-324,
    -0.0,
    0.0,
    0.5,
    1.5,
    2.0,
    -1,
    0,
    1,
    2,
    4,
    2**63 - 1,
    2**63,
    -(2**63),
    10**30,
    True,
    False,
    None,
    "",
    " ",
    "nan",
    "inf",
    "4",
    "1.5",
    "auto",
    "4x2",
    "0.5,0.2",
    "x" * 300,
    "0" * 226 + "4",
    b"def f():",
    bytearray(b"\x01"),
    [],
    [1, 2],
    ["a"],
    (3,),
    {},
    {"a": 1},
    {1},
    object(),
]
HOSTILE = st.one_of(
    st.sampled_from(SPECIAL),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**20), 10**20),
    st.text(max_size=40),
    st.booleans(),
    st.lists(st.integers(-3, 20), max_size=3),
    st.binary(max_size=6),
)
BASE = {"sequoia": {"acceptance": "0.6,0.2"}}  # a given vector: no calibration unless a fuzzed value asks for it


@pytest.fixture(scope="module")
def pair() -> ModelPair:
    """A draft and an early-exit head on one tiny target (no tokenizer): every algorithm runs on it."""
    return attach_early_exit(tiny_pair("llama", vocab=8, draft="noisy", layers=2), 1)


@pytest.fixture(scope="module")
def text_pair() -> ModelPair:
    """A tiny pair with a tokenizer and a chat template, for text prompts."""
    tok = tiny_tokenizer()
    tok.chat_template = (
        "{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}"
    )
    return ModelPair(
        tiny_model("llama", vocab=len(tok), hidden=16),
        tiny_model("llama", vocab=len(tok), seed=1, hidden=8),
        tok,
        len(tok),
    )


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "target", layers=2)


def names(message: str, name: str) -> bool:
    """Whether ``message`` names the parameter ``name`` (``early-exit`` names ``early_exit``)."""

    def norm(text: str) -> str:
        return text.lower().replace("-", "_").replace(" ", "_")

    return norm(name) in norm(message)


def boundaries(p: Param) -> list:
    """Values at and around a parameter's declared range, of its own kind and of others."""
    out: list = [p.default]
    for edge in (p.min, p.max):
        if edge is not None:
            out += [edge, edge - 1, edge + 1, edge + 0.5, float(edge), -edge]
    return out + list(p.choices) + [c.upper() for c in p.choices if isinstance(c, str)]


PARAMS = [(algo, p) for algo, spec in ALGORITHMS.items() for p in spec.params]


@st.composite
def algorithm_value(draw):
    """An algorithm, one of its parameters, and half the time a value at the edge of its range."""
    algo, p = draw(st.sampled_from(PARAMS))
    value = draw(st.sampled_from(boundaries(p)) if draw(st.booleans()) else HOSTILE)
    return algo, p, value


# ---------------------------------------------------------------- the fuzz


@FUZZ
@given(algorithm_value())
def test_every_algorithm_parameter_is_kept_exactly_or_refused_by_name(pair, drawn):
    algo, p, value = drawn
    params = {**BASE.get(algo, {}), p.name: value}
    try:
        trace = specviz.decode(pair, algo, [1, 2], max_new_tokens=2, **params)
    except SpecvizError as exc:
        assert names(str(exc), p.name), f"{algo}.{p.name}={value!r}: {exc}"
        assert exc.param == p.name, f"{algo}.{p.name}={value!r}: {exc} is marked as about {exc.param!r}"
        event("refused")
        return
    event("ran")
    kept = trace.params[p.name]
    assert kept == value and not (isinstance(value, float) and math.isnan(value))
    if p.kind == "float":
        assert isinstance(kept, float) and math.isfinite(kept) and not isinstance(value, bool)
    else:
        assert type(kept) is type(value), f"{algo}.{p.name}: {value!r} was kept as {kept!r}"
    assert len(trace.output_ids) <= 2


EDGES = {
    "max_new_tokens": [1, 2, 0, 3.0],
    "temperature": [0, 0.0, 1e-3, 0.5, 1, 100, 9.99e-4, 100.001],
    "top_p": [1e-9, 0.5, 1, 0, 1.0000001],
    "top_k": [0, 1, 8, 9, -1, 10**30],
    "seed": [0, 7, MAX_SEED, MAX_SEED + 1],
    "record_top_k": [0, 1, 256, 257],
    "chat": [False, True, 0],
}
DECODE_ARGS = tuple(EDGES)


@st.composite
def decode_value(draw):
    """A decode argument and half the time a value at the edge of its range."""
    name = draw(st.sampled_from(DECODE_ARGS))
    return name, draw(st.sampled_from(EDGES[name]) if draw(st.booleans()) else HOSTILE)


def _decode_checked(pair, name: str, value, use_stream: bool, refusal_allowed: bool = True) -> None:
    """``decode`` (or ``stream``) with ``name=value``: refused naming ``name`` (only if
    ``refusal_allowed``), or run with the value kept as given."""
    kwargs = {"max_new_tokens": 2, name: value}
    try:
        if use_stream:
            run = specviz.stream(pair, "sd", [1, 2], **kwargs)
            list(run)
            trace = run.trace
        else:
            trace = specviz.decode(pair, "sd", [1, 2], **kwargs)
    except SpecvizError as exc:
        assert refusal_allowed, f"{name}={value!r} is refused alone but was accepted with other arguments: {exc}"
        assert names(str(exc), name), f"{name}={value!r}: {exc}"
        assert exc.param == name, f"{name}={value!r}: {exc} is marked as about {exc.param!r}"
        event("refused")
        return
    event("ran")
    assert not isinstance(value, bool) or name == "chat", f"{name}={value!r} accepted"
    if name in ("max_new_tokens", "top_k", "seed", "record_top_k"):
        assert type(value) is int
    if name in ("temperature", "top_p"):
        assert trace.sampling[name] == value and math.isfinite(trace.sampling[name])
    if name == "seed":
        assert trace.seed == value and 0 <= value <= MAX_SEED
    if name == "max_new_tokens":
        assert 1 <= value and len(trace.output_ids) <= value


@settings(FUZZ, max_examples=100)
@given(decode_value(), st.booleans())
def test_every_decode_argument_is_kept_exactly_or_refused_by_name(pair, drawn, use_stream):
    _decode_checked(pair, *drawn, use_stream)


@settings(FUZZ, max_examples=60)
@given(
    st.one_of(HOSTILE, st.lists(st.one_of(st.integers(-2, 400), st.floats(), st.booleans(), st.none()), max_size=3)),
    st.booleans(),
)
def test_every_prompt_is_read_as_given_or_refused_by_name(text_pair, prompt, chat):
    try:
        trace = specviz.decode(text_pair, "sd", prompt, max_new_tokens=2, chat=chat, temperature=1.0)
    except SpecvizError as exc:
        assert isinstance(exc, PromptError) and names(str(exc), "prompt"), f"{prompt!r}: {exc}"
        event("refused")
        return
    event("ran")
    # text, or token ids as a list of ints (never a tuple, bools, floats or bytes)
    assert isinstance(prompt, str) or type(prompt) is list and all(type(i) is int for i in prompt)
    if not isinstance(prompt, str):
        assert trace.prompt_ids == list(prompt)


@settings(FUZZ, max_examples=25)
@given(HOSTILE)
def test_every_algorithm_name_is_a_registered_one_or_refused(pair, algorithm):
    try:
        specviz.decode(pair, algorithm, [1, 2], max_new_tokens=2, temperature=1.0)
    except SpecvizError as exc:
        assert isinstance(exc, UnknownAlgorithmError) and names(str(exc), "algorithm") and exc.param == "algorithm"
        return
    assert algorithm in ALGORITHMS


@settings(FUZZ, max_examples=60)
@given(st.dictionaries(st.sampled_from(DECODE_ARGS), HOSTILE, min_size=2, max_size=4))
def test_several_bad_arguments_at_once_name_one_of_them(pair, kwargs):
    try:
        specviz.decode(pair, "sd", [1, 2], **{"max_new_tokens": 2, **kwargs})
    except SpecvizError as exc:
        assert any(names(str(exc), n) for n in kwargs), f"{kwargs!r}: {exc}"
        event("refused")
        return
    event("ran")
    for name, value in kwargs.items():  # none refused together: each is a value decode takes alone, kept as given
        _decode_checked(pair, name, value, use_stream=False, refusal_allowed=False)


LOAD_EDGES = {
    "target": [" ", "/", "."],
    "draft": [None, " "],
    "device": ["cpu", "auto", "cuda:0", "CPU", "cuda:x"],
    "dtype": ["auto", "float32", "bfloat16", "int8", "FLOAT32"],
    "trust_remote_code": [False, True, 0],
    "early_exit": [1, 0, 2, -1, ".", "/"],
    "preset": ["", "no-such-preset"],
}


@st.composite
def load_value(draw):
    name = draw(st.sampled_from(tuple(LOAD_EDGES)))
    return name, draw(st.sampled_from(LOAD_EDGES[name]) if draw(st.booleans()) else HOSTILE)


@settings(FUZZ, max_examples=60)
@given(load_value())
def test_every_load_pair_argument_is_refused_by_name_or_loads(checkpoint, drawn):
    name, value = drawn
    kwargs = {"target": checkpoint, "device": "cpu", name: value}
    if name == "preset":
        kwargs.pop("target")
    try:
        loaded = specviz.load_pair(**kwargs)
    except SpecvizError as exc:
        shown = repr(value)[:20] if isinstance(value, str) else "\0"  # a model that is not there, by its name
        asked = "target" if name == "preset" and value is None else name  # preset=None: no model named at all
        assert names(str(exc), asked) or shown in str(exc), f"{name}={value!r}: {exc}"
        event("refused")
        return
    event("ran")
    assert isinstance(loaded, ModelPair)
    if name == "early_exit":
        assert type(value) is int and loaded.early_exit is not None


# ---------------------------------------------------------------- the reproductions


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (
            {"temperature": NAN},
            InvalidParameterError,
            r"temperature must be 0 \(greedy\) or a number in \[0\.001, 100\]",
        ),
        ({"temperature": 1e-45}, InvalidParameterError, r"temperature must be 0 \(greedy\) or a number in"),
        ({"temperature": -1}, InvalidParameterError, r"temperature .*got -1\."),
        ({"temperature": INF}, InvalidParameterError, r"temperature .*got inf\."),
        ({"temperature": True}, InvalidParameterError, "temperature"),
        ({"top_k": True}, InvalidParameterError, r"top_k .*an integer >= 0, got True"),
        ({"top_k": 2.5}, InvalidParameterError, "top_k"),
        ({"top_p": NAN}, InvalidParameterError, r"top_p .*in \(0, 1\]"),
        ({"seed": 1.5}, InvalidParameterError, r"seed must be an integer in \[0, 2\*\*63 - 1\], got 1\.5"),
        ({"seed": 2.0}, InvalidParameterError, "seed"),
        ({"seed": True}, InvalidParameterError, "seed"),
        ({"seed": 2**63}, InvalidParameterError, "seed"),
        ({"seed": -1}, InvalidParameterError, "seed"),
        ({"max_new_tokens": 2.5}, InvalidParameterError, r"max_new_tokens must be an integer >= 1, got 2\.5"),
        ({"max_new_tokens": 2.0}, InvalidParameterError, "max_new_tokens"),
        ({"record_top_k": 10**6}, InvalidParameterError, r"record_top_k .*\[0, 256\]"),
        ({"chat": 1}, InvalidParameterError, "chat must be true or false"),
    ],
)
def test_bad_sampling_values_are_refused_with_their_range(pair, kwargs, error, match):
    with pytest.raises(error, match=match):
        specviz.decode(pair, "sd", [1, 2], **{"max_new_tokens": 2, **kwargs})
    with pytest.raises(error, match=match):  # stream refuses when called, before any step
        specviz.stream(pair, "sd", [1, 2], **{"max_new_tokens": 2, **kwargs})


@pytest.mark.parametrize(
    "algorithm, params, match",
    [
        ("eesd", {"alpha0": NAN}, r"eesd: parameter 'alpha0' must be a finite number in \[0\.001, 1000\], got nan"),
        ("eesd", {"beta0": NAN}, "beta0"),
        ("eesd", {"controller": "cali_ts", "theta_hat0": NAN}, "theta_hat0"),
        ("mcsd", {"k_config": "0" * 226 + "4"}, r"k_config' must be text of at most 100 characters, got 227"),
        ("specinfer", {"k_config": "4xtwo"}, "k_config"),
        ("sequoia", {"acceptance": "nan"}, "acceptance must be 'auto' or numbers >= 0 in ASCII digits"),
        ("sequoia", {"acceptance": "0.5,inf"}, "acceptance"),
        ("sequoia", {"acceptance": "-inf"}, "acceptance"),
        ("sequoia", {"acceptance": ",".join(["0.01"] * 65)}, "acceptance has 65 entries; at most 64"),
        ("sd", {"gamma": 4.0}, r"sd: parameter 'gamma' must be an integer in \[1, 32\], got 4\.0"),
        ("sd", {"gamma": True}, "gamma"),
        ("mcsd", {"replacement": 1}, "replacement' must be true or false"),
        ("biased_sd", {"residual": ["opt"]}, "residual' must be one of opt, target"),
        ("dsbd", {"width": 2, "min_width": 3}, r"min_width' must be in \[1, width = 2\], got 3"),
        ("sd", {"nonsense": 1}, "unknown parameter.*nonsense"),
    ],
)
def test_bad_algorithm_parameters_are_refused_by_name(pair, algorithm, params, match):
    with pytest.raises(InvalidParameterError, match=match):
        specviz.stream(pair, algorithm, [1, 2], max_new_tokens=2, **params)


@pytest.mark.parametrize(
    "prompt, match",
    [
        (None, "got None"),
        (123, "got 123"),
        (["a"], "holds 'a'"),
        ([1.0, 2.0], "holds 1.0"),
        ([True], "holds True"),
        (b"def f():", "decode bytes to text first"),
        ("   ", "empty"),
        ([], "empty"),
        ([1, 99], r"\[0, 7\], got 99"),
    ],
)
def test_bad_prompts_are_refused_not_read_as_ids(pair, prompt, match):
    with pytest.raises(PromptError, match=match):
        specviz.decode(pair, "sd", prompt, max_new_tokens=2, temperature=1.0)


@pytest.mark.parametrize("algorithm", [["sd"], None, 3, "SD", "nonexistent"])
def test_an_unknown_algorithm_is_refused_with_the_registered_names(pair, algorithm):
    with pytest.raises(UnknownAlgorithmError, match="registered: ar, sd"):
        specviz.decode(pair, algorithm, [1, 2], max_new_tokens=2, temperature=1.0)


def test_the_pair_argument_is_checked(pair):
    with pytest.raises(InvalidParameterError, match="pair must be a ModelPair"):
        specviz.decode(None, "sd", [1, 2], max_new_tokens=2, temperature=1.0)
    alone = ModelPair(pair.target, None, None, pair.vocab_size)
    with pytest.raises(InvalidParameterError, match="needs a draft"):
        specviz.stream(alone, "sd", [1, 2], max_new_tokens=2, temperature=1.0)
    with pytest.raises(InvalidParameterError, match="early-exit head"):
        specviz.stream(alone, "eesd", [1, 2], max_new_tokens=2, temperature=1.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"draft": 123}, "draft must be a model .* got 123"),
        ({"device": "tpu"}, "device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
        ({"device": None}, "device must be .* got None"),
        ({"dtype": ["float32"]}, "dtype must be one of auto, float32"),
        ({"trust_remote_code": "yes"}, "trust_remote_code must be true or false"),
        ({"target": 123}, "target must be a model"),
        ({"early_exit": True}, "early_exit must be"),
    ],
)
def test_bad_load_pair_arguments_are_refused_before_loading(checkpoint, kwargs, match):
    with pytest.raises(ModelLoadError, match=match):
        specviz.load_pair(**{"target": checkpoint, **kwargs})


def test_the_extremes_of_each_range_run(pair):
    trace = specviz.decode(pair, "sd", [1, 2], max_new_tokens=2, seed=MAX_SEED, temperature=1e-3, top_p=1e-9, top_k=1)
    assert trace.seed == MAX_SEED and trace.sampling == {"temperature": 1e-3, "top_k": 1, "top_p": 1e-9}
    assert specviz.decode(pair, "sd", [1, 2], max_new_tokens=2, temperature=100).sampling["temperature"] == 100.0
    long_vector = ",".join(["0.015"] * 64)  # 64 entries, 383 characters: within acceptance's own cap
    assert (
        specviz.decode(pair, "sequoia", [1, 2], max_new_tokens=2, acceptance=long_vector, temperature=1.0).params[
            "acceptance"
        ]
        == long_vector
    )


# ---------------------------------------------------------------- the CLI


def cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = cli_main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, match",
    [
        (
            ["compare", "--algos", "ar", "nonexistent"],
            "--algos must be the name of a registered algorithm, got 'nonexistent'",
        ),
        (["run", "--temperature", "nan"], "--temperature: expected a finite number .* got 'nan'"),
        (["run", "--temperature", "inf"], "--temperature: expected a finite number .* got 'inf'"),
        (["run", "--temperature", "-1"], "--temperature"),
        (["run", "--top-p", "0"], "--top-p"),
        (["run", "--seed", "-1"], "--seed must be an integer"),
        (["run", "--seed", "1.5"], "--seed: expected an integer, written in ASCII digits, got '1.5'"),
        (["run", "--max-new-tokens", "2.5"], "--max-new-tokens: expected an integer, written in ASCII digits"),
        (["run", "--max-new-tokens", "0"], "--max-new-tokens must be an integer >= 1"),
        (["run", "--algo", "nonexistent"], "--algo must be the name of a registered algorithm"),
        (["run", "--algo", "mcsd", "--k-config", "0" * 226 + "4"], "--k-config must be text of at most 100"),
        (["run", "--algo", "mcsd", "--replacement", "maybe"], "--replacement: expected true or false, got 'maybe'"),
        (["run", "--algo", "ar", "--gamma", "5"], "--gamma: not a parameter of ar"),
        (["run", "--algo", "sequoia", "--acceptance", "nan"], "--acceptance"),
        (["run", "--algo", "eesd", "--alpha0", "nan"], "--alpha0"),
        (["run", "--out", "/nonexistent-specviz-dir/t.json"], "--out .* does not exist"),
        (["run", "--device", "tpu"], "--device must be auto, cpu, cuda or cuda:N"),
    ],
)
def test_every_bad_cli_value_is_one_line_and_exit_code_2(checkpoint, capsys, argv, match):
    code, err = cli([*argv, "--prompt", "def f():", "--target", checkpoint], capsys)
    assert code == 2 and "Traceback" not in err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert re.search(match, err), err


def test_a_good_cli_run_writes_its_trace(checkpoint, capsys, tmp_path):
    out = tmp_path / "t.json"
    code, _ = cli(
        [
            "run",
            "--target",
            checkpoint,
            "--prompt",
            "def f():",
            "--max-new-tokens",
            "2",
            "--temperature",
            "0",
            "--algo",
            "ar",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert code == 0 and specviz.RunTrace.from_json(out.read_text()).params == {}


@pytest.mark.parametrize(
    "argv, match",
    [
        (
            ["bench", "--algos", "ar", "nonexistent"],
            "--algos must be the name of a registered algorithm, got 'nonexistent'",
        ),
        (["bench", "--repeat", "0"], r"--repeat/--repeats: expected an integer >= 1, got '0'"),
        (["bench", "--max-new-tokens", "nan"], "--max-new-tokens: expected an integer >= 1"),
        (["bench", "--beam-width", "9"], r"--beam-width: expected an integer in \[1, 8\]"),
        (["theory", "--figures", "x", "--runs", "-5"], "--runs: expected an integer >= 1"),
        (["theory", "--figures", "x", "--seed", str(2**32)], r"--seed: expected an integer in \[0, 4294967295\]"),
    ],
)
def test_bench_and_theory_refuse_bad_numbers_in_one_line(checkpoint, capsys, argv, match):
    code, err = cli([*argv, "--target", checkpoint] if argv[0] == "bench" else argv, capsys)
    assert code == 2 and err.count("\n") == 1 and re.search(match, err), err


# ---------------------------------------------------------------- issue 35, points 11-16: read as something else
# Every text parameter has one grammar, written down where it is parsed (``core.trees.parse_k_config``,
# ``validation.decimal_list``, ``validation.whole_text``); the fuzz below mutates valid values the ways a
# text is misread (underscores, signs, spaces, case, non-ASCII digits, empty fields, under- and overflow)
# and holds every one that runs to an independent statement of its grammar.

NON_ASCII_DIGITS = ["\u0660", "\u06f0", "\u0966", "\uff10", "\u09e6", "\U0001d7ce"]  # zeros of six scripts


def other_digits(text: str, zero: str) -> str:
    """``text`` with its ASCII digits written in the script whose zero is ``zero``."""
    return "".join(chr(ord(zero) + int(c)) if c in "0123456789" else c for c in text)


@st.composite
def misread(draw, valid: list[str], sep: str):
    """A valid value of a text parameter, mutated (or not) the ways a text gets read as something else."""
    text = draw(st.sampled_from(valid))
    i = draw(st.integers(0, len(text)))
    how = draw(
        st.sampled_from(
            [
                "as is",
                "underscore",
                "sign",
                "space",
                "case",
                "digits",
                "empty field",
                "underflow",
                "overflow",
                "leading zero",
                "surround",
                "other separator",
            ]
        )
    )
    if how == "underscore":
        text = text[:i] + "_" + text[i:]
    elif how == "sign":
        text = draw(st.sampled_from("+-")) + text
    elif how == "space":
        text = text[:i] + draw(st.sampled_from([" ", "\t", "\u00a0", "\n"])) + text[i:]
    elif how == "case":
        text = text.upper()
    elif how == "digits":
        text = other_digits(text, draw(st.sampled_from(NON_ASCII_DIGITS)))
    elif how == "empty field":
        text = draw(st.sampled_from([sep + text, text + sep, text.replace(sep, sep + sep, 1) or sep, ""]))
    elif how == "underflow":
        text = draw(st.sampled_from(["1e-400", "0." + "0" * 330 + "1", "4e-999"]))
    elif how == "overflow":
        text = draw(st.sampled_from(["1e400", "9" * 40, "2" + sep + "9" * 20, "1e99999"]))
    elif how == "leading zero":
        text = "0" + text
    elif how == "surround":
        text = draw(st.sampled_from(["({})", " {} ", "{}\n", "'{}'"])).format(text)
    elif how == "other separator":
        text = text.replace(sep, draw(st.sampled_from(["X", "×", "*", ";", ",", " ", "x"])))
    event(how)
    return text


K_CONFIG = re.compile(r"[1-9][0-9]*(x[1-9][0-9]*)*")  # docs/algorithms.md, mcsd
DECIMAL = re.compile(r"([0-9]*\.)?[0-9]+(e[+-]?[0-9]+)?")  # docs/algorithms.md, sequoia
TEXT_PARAMS = [(algo, p) for algo, p in PARAMS if p.kind == "str"]


def test_the_text_parameters_are_the_ones_with_a_grammar():
    assert {(a, p.name) for a, p in TEXT_PARAMS} == {
        ("mcsd", "k_config"),
        ("specinfer", "k_config"),
        ("sequoia", "acceptance"),
    }


@settings(FUZZ, max_examples=250)
@given(st.sampled_from(TEXT_PARAMS), st.data())
def test_every_text_parameter_runs_only_in_its_grammar(pair, param, data):
    algo, p = param
    if p.name == "k_config":
        value = data.draw(misread(["4x2x2", "2x1x1", "3", "2x2", "1x1x1x1"], "x"))
    else:
        value = data.draw(misread(["auto", "0.5,0.2", "0.6", ".5,1e-3", "0.25,0.25,0.25"], ","))
    params = {**BASE.get(algo, {}), p.name: value, "max_new_tokens": 1}
    if value == "auto":
        params["calibration_steps"] = 8
    try:
        trace = specviz.decode(pair, algo, [1, 2], **params)
    except SpecvizError as exc:
        assert exc.param == p.name and names(str(exc), p.name), f"{algo}.{p.name}={value!r}: {exc}"
        return
    assert trace.params[p.name] == value
    if p.name == "k_config":
        assert K_CONFIG.fullmatch(value), f"k_config {value!r} ran"
    else:
        entries = value.split(",")
        assert value == "auto" or all(
            DECIMAL.fullmatch(e) and (float(e) > 0 or not e.strip("0.e+-")) and math.isfinite(float(e)) for e in entries
        ), f"acceptance {value!r} ran"


@pytest.mark.parametrize(
    "value",
    [
        "4_0x2",
        "\u0664x2",
        "\uff14x2",
        "+4x2",
        "4 x 2",
        "4X2",
        "4×2",
        "4*2",
        "4,2",
        " 4x2",
        "4x2\n",
        "04x2",
        "4x",
        "x4",
        "4xx2",
        "",
    ],
)
@pytest.mark.parametrize("algorithm", ["mcsd", "specinfer"])
def test_a_tree_shape_outside_the_grammar_is_refused(pair, algorithm, value):
    """Point 12: ``"4_0x2"`` ran as 40 x 2 (120 nodes a step), other scripts' digits, signs, spaces and
    ``X`` were read as digits and separators."""
    with pytest.raises(InvalidParameterError, match="k_config") as info:
        specviz.decode(pair, algorithm, [1, 2], max_new_tokens=1, k_config=value, temperature=1.0)
    assert info.value.param == "k_config"


@pytest.mark.parametrize(
    "value, match",
    [
        ("\uff10.\uff15", "entry 1 is '０.５'"),
        ("0.5,,0.2", "entry 2 is ''"),
        ("1e-400", "underflows to 0"),
        ("1e400", "overflows to infinity"),
        ("0.5, 0.2", "entry 2"),
        ("AUTO", "entry 1"),
        (" auto", "entry 1"),
        ("+0.5", "entry 1"),
        ("0.5;0.2", "entry 1"),
        ("1_0", "entry 1"),
        ("\u0660.5", "entry 1"),
        ("0.5,", "entry 2"),
    ],
)
def test_an_acceptance_vector_outside_the_grammar_is_refused(pair, value, match):
    """Point 13: ``"０.５"``, ``"0.5,,0.2"`` and ``"1e-400"`` (read as 0) ran."""
    with pytest.raises(InvalidParameterError, match=re.escape(match)) as info:
        specviz.decode(pair, "sequoia", [1, 2], max_new_tokens=1, acceptance=value, temperature=1.0)
    assert info.value.param == "acceptance" and str(info.value).startswith("acceptance")


def test_the_grammars_own_values_run(pair):
    for algorithm in ("mcsd", "specinfer"):
        assert (
            specviz.decode(pair, algorithm, [1, 2], max_new_tokens=1, k_config="2x1x1", temperature=1.0).params[
                "k_config"
            ]
            == "2x1x1"
        )
    for vec in ("0.5,0.2", ".5,1e-3", "0.5e-1,0", "5e-324"):
        assert (
            specviz.decode(pair, "sequoia", [1, 2], max_new_tokens=1, acceptance=vec, temperature=1.0).params[
                "acceptance"
            ]
            == vec
        )


@pytest.mark.parametrize("use_stream", [False, True])
def test_a_lone_surrogate_in_the_prompt_is_refused_by_name(text_pair, use_stream):
    """Point 11: the tokenizer's raw TypeError came out of ``decode`` and ``stream``."""
    for prompt in ("\ud800abc", "abc\udfff", "ok \udc80"):
        with pytest.raises(
            PromptError, match="prompt must be text a tokenizer can read; it holds a lone surrogate"
        ) as info:
            run = (specviz.stream if use_stream else specviz.decode)(text_pair, "sd", prompt, max_new_tokens=2)
            list(run)
        assert info.value.param == "prompt"
    assert (
        specviz.decode(text_pair, "sd", "ok \U0001f600", max_new_tokens=1, temperature=1.0).prompt_text
        == "ok \U0001f600"
    )


def test_a_tuple_prompt_is_refused_not_read_as_a_list(pair):
    """Point 14: a tuple of ids ran; the prompt is text or a list of token ids."""
    with pytest.raises(PromptError, match=r"got a tuple \(1, 2\): pass list\(prompt\)") as info:
        specviz.decode(pair, "sd", (1, 2), max_new_tokens=2, temperature=1.0)
    assert info.value.param == "prompt"


@pytest.mark.parametrize(
    "algorithm, params, ignored",
    [
        ("sd", {"gamma": 7, "controller": "beta_ts"}, "gamma"),
        ("sd", {"alpha0": 2.0}, "alpha0"),
        ("sd", {"controller": "fixed", "num_assistant_tokens": 9}, "num_assistant_tokens"),
        ("eesd", {"controller": "beta_ts", "sigma_s": 0.5}, "sigma_s"),
    ],
)
def test_a_setting_that_would_be_ignored_is_refused_by_name(pair, algorithm, params, ignored):
    """Point 14: ``gamma=7`` with ``controller="beta_ts"`` ran and drafted Beta-TS's lengths, not 7."""
    with pytest.raises(InvalidParameterError, match=rf"parameter '{ignored}' has no effect with controller=") as info:
        specviz.decode(pair, algorithm, [1, 2], max_new_tokens=1, **params)
    assert info.value.param == ignored
    # its default, given, changes nothing: the run is the one asked for
    default = {p.name: p.default for p in ALGORITHMS[algorithm].params}[ignored]
    trace = specviz.decode(pair, algorithm, [1, 2], max_new_tokens=1, **{**params, ignored: default})
    assert trace.params[ignored] == default


def test_reading_a_trace_checks_it_and_recomputes_its_metrics_as_replay_does(pair, tmp_path):
    """Point 15: ``RunTrace.from_json`` kept a file's "NaN" tau and negative token count (replay did not)."""
    from specviz.ui.trace_files import load_trace_file

    trace = specviz.decode(pair, "sd", [1, 2], max_new_tokens=4, temperature=1.0)
    assert specviz.RunTrace.from_json(trace.to_json()).to_dict() == trace.to_dict()  # a run's own file: as it was
    data = json.loads(trace.to_json())
    data["metrics"] = {**data["metrics"], "tau": "NaN", "new_tokens": -5, "wall_time_s": -1.0, "junk": [1]}
    path = tmp_path / "lying.json"
    path.write_text(json.dumps(data))
    for read in (
        specviz.RunTrace.from_json(path.read_text()),
        specviz.RunTrace.from_dict(json.loads(path.read_text())),
        load_trace_file(str(path), 10**7),
    ):
        assert read.metrics["new_tokens"] == len(trace.output_ids) == 4 and read.metrics["tau"] == trace.metrics["tau"]
        assert "junk" not in read.metrics and read.metrics["wall_time_s"] >= 0
    data = json.loads(trace.to_json())
    data["steps"][0]["forest"][0]["q"] = 7.0  # a value the schema's types allow and no run writes
    with pytest.raises(specviz.TraceFormatError, match=r"steps\[0\]\.forest\[0\]\.q must be a probability"):
        specviz.RunTrace.from_json(json.dumps(data))
    with pytest.raises(specviz.TraceFormatError, match=r"steps\[0\]\.forest\[0\]\.q"):
        specviz.RunTrace.from_dict(data)


def load_pair_cases(root, checkpoint: str) -> list[tuple[dict, str]]:
    """Point 16's thirteen cases: (load_pair's arguments, the parameter the refusal must name)."""
    (root / "a-file").write_text("x")
    (root / "empty").mkdir(exist_ok=True)
    return [
        ({"target": str(root / "missing")}, "target"),
        ({"target": str(root / "a-file")}, "target"),
        ({"target": str(root / "empty")}, "target"),
        ({"target": "package:"}, "target"),
        ({"target": "package:no-such-dist/x.gguf"}, "target"),
        ({"target": "package:specviz/none.gguf"}, "target"),
        ({"target": "no-such-owner/no-such-model"}, "target"),
        ({"target": "a" * 5000}, "target"),
        ({"target": checkpoint, "early_exit": -1}, "early_exit"),
        ({"target": checkpoint, "early_exit": 10**9}, "early_exit"),
        ({"target": checkpoint, "early_exit": str(root / "missing")}, "early_exit"),
        ({"target": checkpoint, "draft": str(root / "missing")}, "draft"),
        ({"preset": "no-such-preset"}, "preset"),
    ]


def test_load_pair_refusals_name_their_parameter(checkpoint, tmp_path, monkeypatch):
    """Point 16: these named the path but not the parameter (``No model directory at '/x'``)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for kwargs, param in load_pair_cases(tmp_path, checkpoint):
        with pytest.raises(SpecvizError) as info:
            specviz.load_pair(device="cpu", **kwargs)
        exc = info.value
        assert exc.param == param and str(exc).startswith(param), f"{kwargs!r}: {exc} (about {exc.param!r})"


@pytest.mark.parametrize("raw", ["3", "100"])
def test_a_whole_number_option_reads_ascii_digits(raw):
    from specviz.validation import whole

    assert whole(1, 100)(raw) == int(raw)


@pytest.mark.parametrize("raw", ["1_0", "+3", " 3", "3 ", "\u0663", "\uff13", "3.0", "1e1", "", "-", "0x3", "1" * 41])
def test_a_whole_number_option_refuses_every_other_reading(raw):
    import argparse

    from specviz.validation import whole, whole_text

    assert whole_text(raw) is None
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer"):
        whole(1, 10**50)(raw)
