"""The developer scripts' options read the CLI's one grammar (issue 35): ``specviz.bench.eesd``, ``live``,
``replay``, ``replay_first_view``, ``figure_timing``, ``tree_draw``, ``gpu_check`` and ``specviz.ui.loadcheck`` refuse
what Python's ``int``/``float`` would read as something else (underscores, signs, spaces, other
scripts' digits, empty entries, case, out of range) in the CLI's one line (``error: PROG: argument
--flag: expected ..., got '...' (see PROG --help)``), exit code 2, no traceback. Nothing runs: a value
that parses stops the script at once (``Parsed``), so a refusal that is missing fails the test, it does
not start a benchmark."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re

import pytest

from specviz import validation
from tests.test_cli import other_readings


class Parsed(Exception):
    """Raised in place of running the script once its options have parsed."""


@pytest.fixture
def stop_after_parsing(monkeypatch):
    def parse_args(self, args=None, namespace=None):
        raise Parsed(argparse.ArgumentParser.parse_args(self, args, namespace))

    monkeypatch.setattr(validation.Parser, "parse_args", parse_args)


# module -> {flag: (a value it takes, bad values beyond other_readings(value))}
SCRIPTS = {
    "specviz.bench.eesd": {
        "--max-new-tokens": ("7", ["0", "-7"]),
        "--seeds": ("3", ["0"]),
        "--repeats": ("3", ["0"]),
        "--temperatures": ("0.7", ["0.0005", "101", "nan", "inf", "-1"]),
    },
    "specviz.bench.live": {
        "--max-new": ("7", ["0"]),
        "--widths": ("1600", ["1600,", ",400", "1600, 400", "1600;400", "100", "1600,٤00"]),
        "--columns": ("4", ["5", "4,,6", "4 ", "٤", "four", "0x4"]),
        "--pace": ("paced", ["Paced", "paced,", "paced, unpaced", "fast"]),
        "--pairs": ("code", ["Code", "default,", "smollm2"]),
    },
    "specviz.bench.live_updates": {
        "--max-new": ("7", ["0"]),
        "--columns": ("4", ["5", "four"]),
        "--pace": ("0.3", ["-1", "nan", "inf"]),
        "--pair": ("code", ["Code", "smollm2"]),
    },
    "specviz.bench.replay": {"--steps": ("7", ["0"]), "--scrubs": ("7", ["0"])},
    "specviz.bench.replay_first_view": {"--steps": ("7", ["0"]), "--rounds": ("3", ["0"])},
    "specviz.bench.figure_timing": {"--threads": ("1", ["0", "1.0"])},
    "specviz.bench.tree_draw": {
        "--max-new": ("7", ["0"]),
        "--rounds": ("3", ["0"]),
        "--width": ("1600", ["100"]),
        "--pair": ("code", ["Code", "smollm2"]),
    },
    "specviz.bench.gpu_check": {
        "--budget": ("7", ["0", "-1", "nan", "inf", "1e999"]),
        "--threads": ("1", ["0"]),
        "--device": ("cpu", ["CPU", "cuda:", "cuda:٣", "cuda:1_0", "cuda:+1", "cuda: 1", "gpu", "auto"]),
    },
    "specviz.ui.loadcheck": {
        "--clients": ("7", ["0"]),
        "--duration": ("7", ["0", "-1", "nan", "inf"]),
        "--max-new-tokens": ("7", ["0"]),
        "--temperature": ("0.7", ["0.0005", "101", "nan"]),
        "--algorithms": ("sd", ["ar,,sd", "ar, sd", "AR", "ar,nonexistent", "ar,"]),
    },
}
CASES = [(module, flag) for module, flags in SCRIPTS.items() for flag in flags]
NOT_NUMBERS = (
    "--device",
    "--pace",
    "--pairs",
    "--pair",
    "--algorithms",
)  # their texts are names: other_readings do not apply


@pytest.mark.parametrize(("module", "flag"), CASES, ids=[f"{m.rsplit('.', 1)[1]} {f}" for m, f in CASES])
def test_a_scripts_option_refuses_what_the_grammar_does_not_write(stop_after_parsing, capsys, module, flag):
    main = importlib.import_module(module).main
    valid, extra = SCRIPTS[module][flag]
    with pytest.raises(Parsed):  # the valid value parses: the refusals below are the grammar's, not a typo's
        main([f"{flag}={valid}"])
    bad = extra + ([] if flag in NOT_NUMBERS else other_readings(valid))
    if flag == "--widths":
        bad += [raw + ",400" for raw in other_readings(valid)]
    for raw in bad:
        with pytest.raises(SystemExit) as info:
            main([f"{flag}={raw}"])
        out, err = capsys.readouterr()
        assert info.value.code == 2 and not out and "Traceback" not in err, (raw, err)
        assert err.startswith("error: python -m specviz.") or err.startswith("error: scripts/gpu_check.sh: "), err
        assert err.count("\n") == 1 and err.endswith(" --help)\n"), (raw, err)
        assert f": argument {flag}: " in err and ("expected " in err) and "got " in err, (raw, err)


def test_a_list_option_names_the_entry_it_refuses(stop_after_parsing, capsys):
    """``--widths 1600,٤00``: the second entry, named with the grammar's reason."""
    from specviz.bench import live

    with pytest.raises(SystemExit):
        live.main(["--widths", "1600,٤00"])
    err = capsys.readouterr().err
    assert "argument --widths: entry 2 of the list (commas, no spaces): expected an integer in [200, 10000], " in err
    assert "written in ASCII digits, got '٤00'" in err
    with pytest.raises(Parsed) as info:
        live.main(["--widths", "1600,400", "--columns", "4,6", "--pace", "paced", "--pairs", "code"])
    args = info.value.args[0]
    assert live.cases_from(args) == [
        ("code", 4, True, 1600),
        ("code", 6, True, 1600),
        ("code", 4, True, 400),
        ("code", 6, True, 400),
    ]


# ---------------------------------------------------------------- every --help states the defaults (point 6)

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def app_main(argv):
    """``python app.py``'s parser (the file at the repository's root, not a module of the package)."""
    spec = importlib.util.spec_from_file_location("specviz_app_py", ROOT / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse_args(argv)


def cli_main(argv):
    from specviz.cli import main

    return main(argv)


HELPS = {
    **{
        " ".join(c): (cli_main, c)
        for c in (
            ["run"],
            ["compare"],
            ["bench"],
            ["theory"],
            ["papers"],
            ["train"],
            ["train", "chat"],
            ["train", "feature"],
            ["train", "early-exit"],
        )
    },
    "app.py": (app_main, []),
    **{m.rsplit(".", 1)[1]: (lambda argv, m=m: importlib.import_module(m).main(argv), []) for m in SCRIPTS},
}


@pytest.mark.parametrize("command", HELPS)
def test_every_help_states_each_options_default(monkeypatch, capsys, command):
    """Each option with a default (not None, not off, not empty) says it in ``--help``: the parsers all
    come from ``validation.Parser``, whose help ends an option's text with ``(default: ...)`` unless the
    text already says its default. Fails before: ``bench --help`` gave ``--max-new-tokens`` and
    ``--device`` no default, the scripts none at all."""
    seen = []
    original = argparse.ArgumentParser.format_help

    def format_help(self):
        seen.append(self)
        return original(self)

    monkeypatch.setattr(argparse.ArgumentParser, "format_help", format_help)
    main, argv = HELPS[command]
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    parser = seen[-1]
    assert isinstance(parser, validation.Parser), type(parser)
    entries = [" ".join(e.split()) for e in re.split(r"\n  (?=-)", text)[1:]]
    for action in parser._actions:
        if not action.option_strings or action.default in (None, False, (), []) or action.help == argparse.SUPPRESS:
            continue
        if action.default is argparse.SUPPRESS:
            continue
        entry = next(e for e in entries if e.startswith(action.option_strings[0]))
        assert "default" in entry, (command, entry)
