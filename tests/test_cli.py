"""The CLI's refusals (issue #23, Inputs): each bad value is one line on stderr naming the flag a user
typed (``--temperature``, not the Python parameter ``temperature``), exit code 2, no traceback, and
none of them loads a model or decodes first. ``compare`` warms up and reports median (min-max) over
``--repeats`` runs, or says its figures are one cold run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import specviz
from specviz.algorithms import ALGORITHMS
from specviz.cli import main as cli_main
from specviz.errors import InvalidParameterError
from specviz.models.loading import ModelPair
from tests.tiny import tiny_model, tiny_tokenizer

PAIR = ["--preset", "bundled-stdlib-pair"]  # every refusal below comes before the pair would load


@pytest.fixture
def no_loading(monkeypatch):
    """Loading a pair fails the test: the refusals must come before it."""

    def load(*args, **kwargs):
        raise AssertionError("a pair was loaded before the bad option was refused")

    monkeypatch.setattr("specviz.models.loading.load_pair", load)


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = cli_main(argv)
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def refused_in_one_line(code: int, err: str) -> str:
    assert code == 2 and "Traceback" not in err, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    "argv, flag, match",
    [
        (
            ["compare", "--algos", "ar", "nonexistent"],
            "--algos",
            r"--algos must be the name of a registered algorithm, "
            r"got 'nonexistent'; registered: ar, sd",
        ),
        (["run", "--algo", "nonexistent"], "--algo", "--algo must be the name of a registered algorithm"),
        (
            ["run", "--temperature", "nan"],
            "--temperature",
            r"argument --temperature: expected a finite number in ASCII "
            r"digits, like 0\.7, got 'nan'",
        ),
        (["run", "--temperature", "inf"], "--temperature", r"--temperature: expected a finite number.*got 'inf'"),
        (["run", "--temperature=-inf"], "--temperature", r"--temperature: expected a finite number.*got '-inf'"),
        (["run", "--temperature", "1e999"], "--temperature", r"--temperature: expected a finite number.*got '1e999'"),
        (
            ["run", "--temperature", "200"],
            "--temperature",
            r"--temperature must be 0 \(greedy\) or a number in "
            r"\[0\.001, 100\], got 200\.0\.",
        ),
        (["compare", "--temperature", "nan"], "--temperature", "--temperature: expected a finite number"),
        (["run", "--top-p", "nan"], "--top-p", r"--top-p: expected a finite number"),
        (["run", "--top-p", "1.5"], "--top-p", r"--top-p \(1 disables it\) must be a number in \(0, 1\], got 1\.5"),
        (["run", "--top-k", "-1"], "--top-k", r"--top-k \(0 disables it\) must be an integer >= 0, got -1"),
        (["run", "--max-new-tokens", "0"], "--max-new-tokens", "--max-new-tokens must be an integer >= 1, got 0"),
        (["run", "--seed", str(2**63)], "--seed", r"--seed must be an integer in \[0, 2\*\*63 - 1\]"),
        (["run", "--gamma", "0"], "--gamma", r"sd: parameter --gamma must be an integer in \[1, 32\], got 0"),
        (["run", "--algo", "mcsd", "--k-config", "4xtwo"], "--k-config", "--k-config '4xtwo' is not a tree shape"),
        (
            ["run", "--algo", "dsbd", "--width", "2", "--min-width", "3"],
            "--min-width",
            r"dsbd: parameter --min-width must be in \[1, width = 2\], got 3",
        ),
        (["run", "--algo", "sequoia", "--acceptance", "nan"], "--acceptance", "--acceptance must be 'auto' or numbers"),
        (["run", "--out", "/nonexistent-specviz-dir/t.json"], "--out", "--out .* does not exist or is not writable"),
        (
            ["run", "--target", "x"],
            "--target",
            "--preset bundled-stdlib-pair names its own target and draft, so "
            "--target x would be ignored: give --preset, or --target/--draft, not both",
        ),
        (["run", "--draft", "x"], "--draft", "not both"),
        (["run", "--device", "tpu"], "--device", "--device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
        (["bench", "--device", "tpu"], "--device", "--device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
        (["run", "--dtype", "int8"], "--dtype", "--dtype must be one of auto, float32"),
        (["compare", "--repeats", "0"], "--repeats", r"--repeats: expected an integer in \[1, 100\], got '0'"),
        # the pair's context, read from its config files before any model loads (the bundled pair: 1024)
        (
            ["run", "--max-new-tokens", "5000"],
            "--max-new-tokens",
            r"--max-new-tokens 5000: the models' context is 1024 "
            r"tokens .* at most 1023 new tokens fit",
        ),
        (["run", "--max-new-tokens", "1024"], "--max-new-tokens", "at most 1023 new tokens fit"),
        (["compare", "--max-new-tokens", "5000"], "--max-new-tokens", "the models' context is 1024 tokens"),
        (["bench", "--max-new-tokens", "5000"], "--max-new-tokens", "the models' context is 1024 tokens"),
        (["run", "--early-exit", "/nonexistent-specviz-head"], "--early-exit", "not a head directory"),
        (["bench", "--categories", "code", "nope"], "--categories", r"unknown prompt categories 'nope'; known: code"),
        (["bench", "--algos", "nope"], "--algos", "--algos must be the name of a registered algorithm"),
    ],
)
def test_each_bad_option_is_one_line_naming_its_flag(no_loading, capsys, argv, flag, match):
    prompt = [] if argv[0] == "bench" else ["--prompt", "def f():"]
    code, out, err = cli([*argv, *prompt, *PAIR], capsys)
    err = refused_in_one_line(code, err)
    assert flag in err and re.search(match, err), err
    assert not out  # nothing decoded, nothing printed
    python_name = flag[2:].replace("-", "_")
    assert not re.search(rf"(?<![\w-])'?{python_name}'?(?![\w-]) must", err), err


def bad_value(p) -> str | None:
    """A value of the right type for ``p``'s flag that its range refuses."""
    if p.kind in ("int", "float") and p.max is not None:
        return str(p.max + 1)
    if p.kind in ("int", "float") and p.min is not None:
        return str(p.min - 1)
    if p.kind == "float":
        return "nan"
    if p.kind == "choice":
        return "no-such-choice"
    if p.kind == "str":
        return "x" * (p.max_len + 1)
    return None


PARAMS = [(algo, p) for algo, spec in ALGORITHMS.items() for p in spec.params if bad_value(p) is not None]


@pytest.mark.parametrize("algo, p", PARAMS, ids=[f"{a}.{p.name}" for a, p in PARAMS])
def test_every_algorithm_parameter_is_refused_by_its_flag(no_loading, capsys, algo, p):
    """The mapping is general: each registered parameter, refused by its own range, is named as the
    flag ``--name-with-dashes``, never as ``'name_with_underscores'``."""
    flag = "--" + p.name.replace("_", "-")
    code, _, err = cli(["run", "--algo", algo, flag, bad_value(p), "--prompt", "a", *PAIR], capsys)
    err = refused_in_one_line(code, err)
    assert flag in err and f"'{p.name}'" not in err, err
    if "_" in p.name:
        assert p.name not in err, err


def test_every_refusal_of_the_api_names_its_parameter_for_a_front_end():
    """``SpecvizError.param``/``subject``: what the CLI renames, set by the checks themselves."""
    with pytest.raises(InvalidParameterError) as info:
        specviz.decode(None, "sd", [1], top_p=float("nan"), temperature=1.0)
    assert info.value.param == "top_p" and info.value.subject == "top_p (1 disables it)"
    with pytest.raises(InvalidParameterError) as info:
        specviz.decode(None, "mcsd", [1], k_config="4xtwo", temperature=1.0)
    assert info.value.param == "k_config" and str(info.value).startswith(info.value.subject)
    with pytest.raises(specviz.UnknownAlgorithmError) as info:
        specviz.decode(None, "nope", [1], temperature=1.0)
    assert info.value.param == "algorithm"


def test_the_out_file_is_checked_before_loading(no_loading, capsys, tmp_path):
    code, _, err = cli(["run", "--out", str(tmp_path), "--prompt", "a", *PAIR], capsys)
    assert "--out must name a file" in refused_in_one_line(code, err)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        import os

        if os.access(locked, os.W_OK):  # root writes anywhere: a missing directory instead
            locked = tmp_path / "missing"
        code, _, err = cli(["run", "--out", str(locked / "t.json"), "--prompt", "a", *PAIR], capsys)
        assert "does not exist or is not writable" in refused_in_one_line(code, err)
    finally:
        (tmp_path / "locked").chmod(0o700)


def test_an_empty_prompt_is_refused_before_loading(no_loading, capsys):
    code, _, err = cli(["run", "--prompt", "  ", *PAIR], capsys)
    assert "--prompt is empty" in refused_in_one_line(code, err)


def test_bench_checks_its_out_directory_before_loading(no_loading, capsys, tmp_path):
    """``bench --out`` is a directory made if missing: a file there, or a path under a file (or an
    unwritable directory), is refused at once instead of after the benchmark."""
    a_file = tmp_path / "report.txt"
    a_file.write_text("")
    code, _, err = cli(["bench", "--out", str(a_file), *PAIR], capsys)
    assert "--out" in refused_in_one_line(code, err) and "a file is there" in err
    code, _, err = cli(["bench", "--out", str(a_file / "out"), *PAIR], capsys)
    assert f"the directory {a_file} does not exist or is not writable" in refused_in_one_line(code, err)
    code, _, err = cli(["bench", "--out", " ", *PAIR], capsys)
    assert "--out must name a directory" in refused_in_one_line(code, err)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        import os

        if not os.access(locked, os.W_OK):  # root writes anywhere: the cases above stand for it
            code, _, err = cli(["bench", "--out", str(locked / "new" / "out"), *PAIR], capsys)
            assert "is not writable" in refused_in_one_line(code, err)
    finally:
        locked.chmod(0o700)


def test_theory_checks_its_figures_directory_first(capsys, tmp_path, monkeypatch):
    ran = []
    monkeypatch.setattr("specviz.theory.cli.main", lambda args: ran.append(args) or 0)
    a_file = tmp_path / "f"
    a_file.write_text("")
    code, _, err = cli(["theory", "--figures", str(a_file / "figs")], capsys)
    assert "--figures" in refused_in_one_line(code, err) and not ran

    def failing(args):
        raise OSError(28, "No space left on device", str(tmp_path / "figs" / "fig1.html"))

    monkeypatch.setattr("specviz.theory.cli.main", failing)
    code, _, err = cli(["theory", "--figures", str(tmp_path / "figs")], capsys)
    assert "No space left on device" in refused_in_one_line(code, err)


# ---------------------------------------------------------------- compare: warm-up and repeats


@pytest.fixture
def counted(monkeypatch):
    """A tiny text pair for ``compare``, and the decode calls it makes (algorithm names in order)."""
    tok = tiny_tokenizer()
    pair = ModelPair(tiny_model("llama", vocab=len(tok)), tiny_model("llama", vocab=len(tok), seed=1), tok, len(tok))
    monkeypatch.setattr("specviz.cli.load_pair_from_args", lambda args: pair)
    calls: list[str] = []
    from specviz.decoding import decode

    def counting(pair, algo, *args, **kwargs):
        calls.append(algo)
        return decode(pair, algo, *args, **kwargs)

    monkeypatch.setattr("specviz.decoding.decode", counting)
    return calls


def rows(out: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines() if line.split()[:1] in (["ar"], ["sd"])}


def test_compare_warms_up_and_reports_median_and_range(counted, capsys):
    code, out, err = cli(
        [
            "compare",
            "--algos",
            "ar",
            "sd",
            "--repeats",
            "3",
            "--prompt",
            "def f():",
            "--max-new-tokens",
            "4",
            "--temperature",
            "0",
        ],
        capsys,
    )
    assert code == 0, err
    assert counted == ["ar", "sd"] + ["ar", "sd"] * 3  # one warm-up of each, then 3 interleaved rounds
    assert "median (min-max) over 3 timed runs" in out and "after one warm-up run of each" in out
    found = rows(out)
    # tok/s and speedup each as "median (min-max)"; ar against itself is 1.00x in every round
    assert re.search(r"\d+\.\d \(\d+\.\d-\d+\.\d\)", found["sd"]), out
    assert re.search(r"\d+\.\d\dx \(\d+\.\d\d-\d+\.\d\d\)", found["sd"]), out
    assert "1.00x (1.00-1.00)" in found["ar"], out


def test_compare_says_when_its_figures_are_one_cold_run(counted, capsys):
    code, out, err = cli(
        ["compare", "--algos", "ar", "sd", "--repeats", "1", "--prompt", "def f():", "--max-new-tokens", "4"], capsys
    )
    assert code == 0, err
    assert counted == ["ar", "sd"]  # no warm-up
    assert "one cold run each (--repeats 1, no warm-up)" in out
    assert not re.search(r"\(\d+\.\d+-\d+\.\d+\)", out), out


# ---------------------------------------------------------------- issue 35, points 6 and 7

HELP_COMMANDS = (
    ["run"],
    ["compare"],
    ["algorithms"],
    ["theory"],
    ["bench"],
    ["train"],
    ["train", "chat"],
    ["train", "feature"],
    ["train", "early-exit"],
    [],
)


@pytest.mark.parametrize("command", HELP_COMMANDS, ids=lambda c: " ".join(c) or "top")
def test_a_commands_parser_and_help_import_no_model_library(command):
    """``python -m specviz COMMAND --help`` builds its parser and prints its help without importing
    torch, transformers or gradio (checked in a fresh interpreter through the CLI's own entry point,
    not timed: what it does not import it cannot wait for)."""
    import subprocess
    import sys

    code = (
        "import sys, contextlib, io\nfrom specviz.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        f"    main({command!r} + ['--help'])\n"
        "assert out.getvalue().startswith('usage: python -m specviz'), out.getvalue()[:200]\n"
        "heavy = [m for m in ('torch', 'transformers', 'gradio') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_cli_parameter_catalogue_is_the_registrys():
    """``cli_params_data`` (what the parser is built from) is the registry's names and parameters; after
    changing an algorithm's parameters: ``python -m specviz.cli_params > specviz/cli_params_data.py``."""
    from specviz.cli_params import ALGORITHM_NAMES, DEFAULTS, PARAMS, catalogue, param_defaults

    assert (ALGORITHM_NAMES, PARAMS) == catalogue(specviz.ALGORITHMS.values()), (
        "regenerate: python -m specviz.cli_params > specviz/cli_params_data.py"
    )
    assert DEFAULTS == param_defaults(specviz.ALGORITHMS.values()), (
        "regenerate: python -m specviz.cli_params > specviz/cli_params_data.py"
    )


def test_the_generated_catalogue_is_the_generators_text_within_the_line_length():
    """``python -m specviz.cli_params`` writes ``cli_params_data.py`` as ``ruff format`` leaves it, each line
    within the 120 of ``pyproject.toml`` (a long help text in implicitly joined pieces): regenerating it
    leaves ``tests/test_style.py`` passing, and the file in the tree is the generator's text."""
    import specviz.cli_params_data
    from specviz.cli_params import catalogue, colours, param_defaults, render

    specs = list(specviz.ALGORITHMS.values())
    text = render(*catalogue(specs), colours(specs), param_defaults(specs))
    assert max(len(line) for line in text.splitlines()) <= 120
    assert any(len(help_text) > 120 for _, _, help_text in specviz.cli_params.PARAMS)  # the split is exercised
    assert Path(specviz.cli_params_data.__file__).read_text() == text, (
        "regenerate: python -m specviz.cli_params > specviz/cli_params_data.py"
    )


def test_each_algorithm_flag_states_its_default_in_help(capsys):
    """Point 6: ``run --help`` showed no algorithm parameter's default (``--gamma GAMMA draft tokens per
    step``); each flag now states the registry's default, per algorithm where they differ."""
    from specviz.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser(["run"]).parse_args(["run", "--help"])
    raw = capsys.readouterr().out
    shown = " ".join(raw.split())
    for name in ("gamma", "depth"):  # one default once; defaults that differ, each with its algorithm
        given = {spec.name: prm.default for spec in ALGORITHMS.values() for prm in spec.params if prm.name == name}
        said = str(next(iter(given.values()))) if len(set(given.values())) == 1 else None
        assert "(default: " + (said or ", ".join(f"{a} {v}" for a, v in given.items())) + ")" in shown, name
    assert "(default: sd static, eesd beta_ts)" in shown and "(true/false) (default: false)" in shown
    options = {" ".join(o.split()).split(" ")[0]: " ".join(o.split()) for o in re.split(r"\n  (?=--)", raw)[1:]}
    for name, _, _ in specviz.cli_params.PARAMS:
        assert "(default: " in options["--" + name.replace("_", "-")], name


def test_one_set_of_defaults_for_decode_and_the_command_line(capsys):
    """``decode``'s defaults and ``run``/``compare``'s are ``specviz.defaults``' (greedy), and each
    ``--help`` states them."""
    import inspect

    from specviz import defaults
    from specviz.cli import build_parser
    from specviz.decoding import check_request

    want = {
        "max_new_tokens": defaults.MAX_NEW_TOKENS,
        "temperature": defaults.TEMPERATURE,
        "top_p": defaults.TOP_P,
        "top_k": defaults.TOP_K,
        "seed": defaults.SEED,
    }
    assert defaults.TEMPERATURE == 0.0
    signature = inspect.signature(check_request).parameters
    assert {k: signature[k].default for k in want} == want
    for command in ("run", "compare"):
        args = build_parser([command]).parse_args([command, "--prompt", "x"])
        assert {k: getattr(args, k) for k in want} == want
        with pytest.raises(SystemExit):
            build_parser([command]).parse_args([command, "--help"])
        shown = " ".join(capsys.readouterr().out.split())
        assert "0 means greedy (default: 0.0)" in shown and "--max-new-tokens MAX_NEW_TOKENS (default: 64)" in shown


# ---------------------------------------------------------------- issue 35, point 12's grammar on the command line


def other_readings(valid: str) -> list[str]:
    """Texts Python's ``int``/``float`` read as ``valid`` (or as some number) that the one grammar
    (``validation.whole_text``, ``validation.real``) refuses: underscores, signs, spaces around it,
    every other script's digits (all of Unicode's decimal digits, generated), empty, hex, case."""
    import unicodedata

    digit = valid[0]
    foreign = [c for c in map(chr, range(0x80, 0x110000)) if unicodedata.decimal(c, None) == int(digit)]
    assert len(foreign) > 50  # Arabic-Indic, Devanagari, full-width, mathematical, ...
    return [
        valid[0] + "_" + valid[0],
        "+" + valid,
        " " + valid,
        valid + " ",
        "\t" + valid,
        "",
        "0x1",
        "1E1",
        *(c + valid[1:] for c in foreign),
        valid + foreign[0],
    ]


# flag -> (argv that reaches its parser, a value it accepts)
INT_FLAGS = {
    "--seed": (["run"], "7"),
    "--top-k": (["run"], "7"),
    "--max-new-tokens": (["compare"], "7"),
    "--gamma": (["run"], "3"),
    "--repeats": (["compare"], "3"),
    "--repeat": (["bench"], "3"),
}
REAL_FLAGS = {"--temperature": (["run"], "0.7"), "--top-p": (["compare"], "0.9")}
TRAIN_FLAGS = {
    "--seed": ["train"],
    "--draft-steps": ["train", "chat"],
    "--steps": ["train", "feature"],
    "--lr": ["train", "feature"],
    "--exit-layer": ["train", "early-exit", "--target", "t"],
}


@pytest.mark.parametrize("flag", [*INT_FLAGS, *REAL_FLAGS])
def test_a_number_flag_takes_ascii_digits_only_and_names_itself_otherwise(no_loading, capsys, flag):
    """``--seed 1_0``, ``--top-k +5``, ``--seed ' 7 '``, ``--seed ٣`` were read by Python's ``int`` as
    10, 5, 7, 3: each is now refused in one line naming the flag, as the API refuses such text."""
    command, valid = {**INT_FLAGS, **REAL_FLAGS}[flag]
    prompt = [] if command == ["bench"] else ["--prompt", "x"]
    for raw in other_readings(valid):
        code, out, err = cli([*command, f"{flag}={raw}", *prompt, *PAIR], capsys)
        err = refused_in_one_line(code, err)
        assert re.search(rf"argument {flag}(/--[\w-]+)?: expected ", err) and "ASCII digits" in err, (raw, err)
        assert not out


@pytest.mark.parametrize("flag", TRAIN_FLAGS)
def test_the_training_commands_number_flags_take_ascii_digits_only(capsys, flag, monkeypatch):
    """``train``, ``train chat`` and ``train feature`` read their numbers with the same grammar; nothing
    is trained (a run fails the test)."""
    from specviz.train import cli as train_cli

    def train(*args, **kwargs):
        raise AssertionError("a bad number reached the recipe")

    monkeypatch.setattr("specviz.train.early_exit.run", train)  # before import_module is patched: it imports
    monkeypatch.setattr("specviz.train.cli.config_from_args", train)
    monkeypatch.setattr("importlib.import_module", train)
    argv = TRAIN_FLAGS[flag]
    valid = "0.002" if flag == "--lr" else "7"
    for raw in other_readings(valid):
        with pytest.raises(SystemExit) as info:
            train_cli.main([*argv[1:], f"{flag}={raw}"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and f"argument {flag}: expected " in err and "ASCII digits" in err, (raw, err)


def test_the_apps_port_takes_ascii_digits_only(capsys):
    """``python app.py --port``: the same grammar, refused naming the flag (``int`` read ``٨٠`` as 80)."""
    import runpy

    parse_args = runpy.run_path("app.py", run_name="not_main")["parse_args"]
    assert parse_args(["--port", "7861"]).port == 7861
    for raw in other_readings("78"):
        with pytest.raises(SystemExit) as info:
            parse_args([f"--port={raw}"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and "argument --port: expected an integer in [1, 65535]" in err, (raw, err)
