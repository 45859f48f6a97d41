"""The public API's error contract (issue 21, point 5): a bad value of ``decode``, ``stream``,
``load_pair``, any registered algorithm parameter or the CLI is refused by a ``SpecvizError`` whose
message names the parameter; a good one runs and is kept as given (nothing rounded, clamped or
read as something else). Hypothesis draws hostile values (NaN, infinities, huge and tiny floats,
bools, negative numbers, None, strings, long strings, lists, bytes); the reproductions of the issue
are checked one by one. Every model is a tiny random one and every run asks for at most 2 tokens."""
from __future__ import annotations

import math
import re

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st
from tiny import save_checkpoint, tiny_model, tiny_pair, tiny_tokenizer

import specviz
from specviz.algorithms import ALGORITHMS, Param
from specviz.cli import main as cli_main
from specviz.errors import InvalidParameterError, ModelLoadError, PromptError, SpecvizError, UnknownAlgorithmError
from specviz.models.loading import ModelPair, attach_early_exit
from specviz.validation import MAX_SEED

FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NAN, INF = float("nan"), float("inf")
SPECIAL = [NAN, INF, -INF, 1e308, -1e308, 1e-45, 5e-324, -0.0, 0.0, 0.5, 1.5, 2.0, -1, 0, 1, 2, 4, 2**63 - 1, 2**63,
           -2**63, 10**30, True, False, None, "", " ", "nan", "inf", "4", "1.5", "auto", "4x2", "0.5,0.2", "x" * 300,
           "0" * 226 + "4", b"def f():", bytearray(b"\x01"), [], [1, 2], ["a"], (3,), {}, {"a": 1}, {1}, object()]
HOSTILE = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True),
                    st.integers(-10**20, 10**20), st.text(max_size=40), st.booleans(),
                    st.lists(st.integers(-3, 20), max_size=3), st.binary(max_size=6))
BASE = {"sequoia": {"acceptance": "0.6,0.2"}}  # a given vector: no calibration unless a fuzzed value asks for it


@pytest.fixture(scope="module")
def pair() -> ModelPair:
    """A draft and an early-exit head on one tiny target (no tokenizer): every algorithm runs on it."""
    return attach_early_exit(tiny_pair("llama", vocab=8, draft="noisy", layers=2), 1)


@pytest.fixture(scope="module")
def text_pair() -> ModelPair:
    """A tiny pair with a tokenizer and a chat template, for text prompts."""
    tok = tiny_tokenizer()
    tok.chat_template = ("{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
                         "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}")
    return ModelPair(tiny_model("llama", vocab=len(tok), hidden=16), tiny_model("llama", vocab=len(tok), seed=1, hidden=8),
                     tok, len(tok))


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


EDGES = {"max_new_tokens": [1, 2, 0, 3.0], "temperature": [0, 0.0, 1e-3, 0.5, 1, 100, 9.99e-4, 100.001],
         "top_p": [1e-9, 0.5, 1, 0, 1.0000001], "top_k": [0, 1, 8, 9, -1, 10**30], "seed": [0, 7, MAX_SEED, MAX_SEED + 1],
         "record_top_k": [0, 1, 256, 257], "chat": [False, True, 0]}
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
@given(st.one_of(HOSTILE, st.lists(st.one_of(st.integers(-2, 400), st.floats(), st.booleans(), st.none()),
                                   max_size=3)), st.booleans())
def test_every_prompt_is_read_as_given_or_refused_by_name(text_pair, prompt, chat):
    try:
        trace = specviz.decode(text_pair, "sd", prompt, max_new_tokens=2, chat=chat)
    except SpecvizError as exc:
        assert isinstance(exc, PromptError) and names(str(exc), "prompt"), f"{prompt!r}: {exc}"
        event("refused")
        return
    event("ran")
    # text, or token ids as a list or tuple of ints (never bools, floats or bytes)
    assert isinstance(prompt, str) or type(prompt) in (list, tuple) and all(type(i) is int for i in prompt)
    if not isinstance(prompt, str):
        assert trace.prompt_ids == list(prompt)


@settings(FUZZ, max_examples=25)
@given(HOSTILE)
def test_every_algorithm_name_is_a_registered_one_or_refused(pair, algorithm):
    try:
        specviz.decode(pair, algorithm, [1, 2], max_new_tokens=2)
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


LOAD_EDGES = {"target": [" ", "/", "."], "draft": [None, " "], "device": ["cpu", "auto", "cuda:0", "CPU", "cuda:x"],
              "dtype": ["auto", "float32", "bfloat16", "int8", "FLOAT32"], "trust_remote_code": [False, True, 0],
              "early_exit": [1, 0, 2, -1, ".", "/"], "preset": ["", "no-such-preset"]}


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


@pytest.mark.parametrize("kwargs, error, match", [
    ({"temperature": NAN}, InvalidParameterError, r"temperature must be 0 \(greedy\) or a number in \[0\.001, 100\]"),
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
])
def test_bad_sampling_values_are_refused_with_their_range(pair, kwargs, error, match):
    with pytest.raises(error, match=match):
        specviz.decode(pair, "sd", [1, 2], **{"max_new_tokens": 2, **kwargs})
    with pytest.raises(error, match=match):  # stream refuses when called, before any step
        specviz.stream(pair, "sd", [1, 2], **{"max_new_tokens": 2, **kwargs})


@pytest.mark.parametrize("algorithm, params, match", [
    ("eesd", {"alpha0": NAN}, r"eesd: parameter 'alpha0' must be a finite number in \[0\.001, 1000\], got nan"),
    ("eesd", {"beta0": NAN}, "beta0"),
    ("eesd", {"controller": "cali_ts", "theta_hat0": NAN}, "theta_hat0"),
    ("mcsd", {"k_config": "0" * 226 + "4"}, r"k_config' must be text of at most 100 characters, got 227"),
    ("specinfer", {"k_config": "4xtwo"}, "k_config"),
    ("sequoia", {"acceptance": "nan"}, "acceptance .*not NaN or infinity"),
    ("sequoia", {"acceptance": "0.5,inf"}, "acceptance"),
    ("sequoia", {"acceptance": "-inf"}, "acceptance"),
    ("sequoia", {"acceptance": ",".join(["0.01"] * 65)}, "acceptance has 65 entries; at most 64"),
    ("sd", {"gamma": 4.0}, r"sd: parameter 'gamma' must be an integer in \[1, 32\], got 4\.0"),
    ("sd", {"gamma": True}, "gamma"),
    ("mcsd", {"replacement": 1}, "replacement' must be true or false"),
    ("biased_sd", {"residual": ["opt"]}, "residual' must be one of opt, target"),
    ("dsbd", {"width": 2, "min_width": 3}, r"min_width' must be in \[1, width = 2\], got 3"),
    ("sd", {"nonsense": 1}, "unknown parameter.*nonsense"),
])
def test_bad_algorithm_parameters_are_refused_by_name(pair, algorithm, params, match):
    with pytest.raises(InvalidParameterError, match=match):
        specviz.stream(pair, algorithm, [1, 2], max_new_tokens=2, **params)


@pytest.mark.parametrize("prompt, match", [
    (None, "got None"), (123, "got 123"), (["a"], "holds 'a'"), ([1.0, 2.0], "holds 1.0"), ([True], "holds True"),
    (b"def f():", "decode bytes to text first"), ("   ", "empty"), ([], "empty"), ([1, 99], r"\[0, 7\], got 99"),
])
def test_bad_prompts_are_refused_not_read_as_ids(pair, prompt, match):
    with pytest.raises(PromptError, match=match):
        specviz.decode(pair, "sd", prompt, max_new_tokens=2)


@pytest.mark.parametrize("algorithm", [["sd"], None, 3, "SD", "nonexistent"])
def test_an_unknown_algorithm_is_refused_with_the_registered_names(pair, algorithm):
    with pytest.raises(UnknownAlgorithmError, match="registered: ar, sd"):
        specviz.decode(pair, algorithm, [1, 2], max_new_tokens=2)


def test_the_pair_argument_is_checked(pair):
    with pytest.raises(InvalidParameterError, match="pair must be a ModelPair"):
        specviz.decode(None, "sd", [1, 2], max_new_tokens=2)
    alone = ModelPair(pair.target, None, None, pair.vocab_size)
    with pytest.raises(InvalidParameterError, match="needs a draft"):
        specviz.stream(alone, "sd", [1, 2], max_new_tokens=2)
    with pytest.raises(InvalidParameterError, match="early-exit head"):
        specviz.stream(alone, "eesd", [1, 2], max_new_tokens=2)


@pytest.mark.parametrize("kwargs, match", [
    ({"draft": 123}, "draft must be a model .* got 123"),
    ({"device": "tpu"}, "device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
    ({"device": None}, "device must be .* got None"),
    ({"dtype": ["float32"]}, "dtype must be one of auto, float32"),
    ({"trust_remote_code": "yes"}, "trust_remote_code must be true or false"),
    ({"target": 123}, "target must be a model"),
    ({"early_exit": True}, "early_exit must be"),
])
def test_bad_load_pair_arguments_are_refused_before_loading(checkpoint, kwargs, match):
    with pytest.raises(ModelLoadError, match=match):
        specviz.load_pair(**{"target": checkpoint, **kwargs})


def test_the_extremes_of_each_range_run(pair):
    trace = specviz.decode(pair, "sd", [1, 2], max_new_tokens=2, seed=MAX_SEED, temperature=1e-3, top_p=1e-9, top_k=1)
    assert trace.seed == MAX_SEED and trace.sampling == {"temperature": 1e-3, "top_k": 1, "top_p": 1e-9}
    assert specviz.decode(pair, "sd", [1, 2], max_new_tokens=2, temperature=100).sampling["temperature"] == 100.0
    long_vector = ",".join(["0.015"] * 64)  # 64 entries, 383 characters: within acceptance's own cap
    assert specviz.decode(pair, "sequoia", [1, 2], max_new_tokens=2, acceptance=long_vector).params["acceptance"] \
        == long_vector


# ---------------------------------------------------------------- the CLI


def cli(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = cli_main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    return code, capsys.readouterr().err


@pytest.mark.parametrize("argv, match", [
    (["compare", "--algos", "ar", "nonexistent"], "--algos must be the name of a registered algorithm, got 'nonexistent'"),
    (["run", "--temperature", "nan"], "--temperature must be 0 .* got nan"),
    (["run", "--temperature", "inf"], "--temperature must be 0 .* got inf"),
    (["run", "--temperature", "-1"], "--temperature"),
    (["run", "--top-p", "0"], "--top-p"),
    (["run", "--seed", "-1"], "--seed must be an integer"),
    (["run", "--seed", "1.5"], "--seed: invalid int value: '1.5'"),
    (["run", "--max-new-tokens", "2.5"], "--max-new-tokens: invalid int value"),
    (["run", "--max-new-tokens", "0"], "--max-new-tokens must be an integer >= 1"),
    (["run", "--algo", "nonexistent"], "--algo must be the name of a registered algorithm"),
    (["run", "--algo", "mcsd", "--k-config", "0" * 226 + "4"], "--k-config must be text of at most 100"),
    (["run", "--algo", "mcsd", "--replacement", "maybe"], "--replacement: expected true or false, got 'maybe'"),
    (["run", "--algo", "ar", "--gamma", "5"], "--gamma: not a parameter of ar"),
    (["run", "--algo", "sequoia", "--acceptance", "nan"], "--acceptance"),
    (["run", "--algo", "eesd", "--alpha0", "nan"], "--alpha0"),
    (["run", "--out", "/nonexistent-specviz-dir/t.json"], "--out .* does not exist"),
    (["run", "--device", "tpu"], "--device must be auto, cpu, cuda or cuda:N"),
])
def test_every_bad_cli_value_is_one_line_and_exit_code_2(checkpoint, capsys, argv, match):
    code, err = cli([*argv, "--prompt", "def f():", "--target", checkpoint], capsys)
    assert code == 2 and "Traceback" not in err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert re.search(match, err), err


def test_a_good_cli_run_writes_its_trace(checkpoint, capsys, tmp_path):
    out = tmp_path / "t.json"
    code, _ = cli(["run", "--target", checkpoint, "--prompt", "def f():", "--max-new-tokens", "2", "--temperature",
                   "0", "--algo", "ar", "--out", str(out)], capsys)
    assert code == 0 and specviz.RunTrace.from_json(out.read_text()).params == {}


@pytest.mark.parametrize("argv, match", [
    (["bench", "--algos", "ar", "nonexistent"], "--algos must be the name of a registered algorithm, got 'nonexistent'"),
    (["bench", "--repeat", "0"], r"--repeat/--repeats: expected an integer >= 1, got '0'"),
    (["bench", "--max-new-tokens", "nan"], "--max-new-tokens: expected an integer >= 1"),
    (["bench", "--beam-width", "9"], r"--beam-width: expected an integer in \[1, 8\]"),
    (["theory", "--figures", "x", "--runs", "-5"], "--runs: expected an integer >= 1"),
    (["theory", "--figures", "x", "--seed", str(2**32)], r"--seed: expected an integer in \[0, 4294967295\]"),
])
def test_bench_and_theory_refuse_bad_numbers_in_one_line(checkpoint, capsys, argv, match):
    code, err = cli([*argv, "--target", checkpoint] if argv[0] == "bench" else argv, capsys)
    assert code == 2 and err.count("\n") == 1 and re.search(match, err), err
