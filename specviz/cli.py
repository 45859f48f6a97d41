"""``python -m specviz run|compare|algorithms|bench|train|theory``: the decoding core from a terminal.

Only the command given is built: its module and the model stack (torch, transformers, the algorithms)
are imported when a command needs them, so ``python -m specviz --help`` and a mistyped command answer
at once (issue #22 point 6)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Iterable

from specviz import cli_compare, cli_run
from specviz.cli_checks import check_decode_args, check_out_dir, check_pair_limits  # noqa: F401  (re-exported)
from specviz.cli_output import render_text, summary_line, write_text, write_tokens, write_trace  # noqa: F401
from specviz.errors import SpecvizError
from specviz.pair_options import load_pair_from_args  # the pair loader run and compare are given (tests replace it)
from specviz.validation import Parser


def cmd_run(args: argparse.Namespace) -> int:
    """``run`` (``specviz.cli_run``), its pair loaded by this module's ``load_pair_from_args``."""
    return cli_run.main(args, load_pair_from_args)


def cmd_compare(args: argparse.Namespace) -> int:
    """``compare`` (``specviz.cli_compare``), its pair loaded by this module's ``load_pair_from_args``."""
    return cli_compare.main(args, load_pair_from_args)


def cmd_algorithms(_: argparse.Namespace) -> int:
    from specviz.algorithms import ALGORITHMS

    for spec in ALGORITHMS.values():
        params = ", ".join(f"{p.name}={p.default!r}" for p in spec.params) or "-"
        tag = "lossless" if spec.lossless else "lossy"
        print(f"{spec.name:<10} {tag:<8} {spec.description}\n{'':<19}params: {params}\n{'':<19}paper: {spec.paper}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from specviz.bench.run import check_args
    from specviz.bench.run import main as bench_main

    check_args(args)  # bench's own options (--out, --categories, --algos, --sd-controllers)
    if not args.random_pair:  # a random pair is built, not loaded: no pair options to check
        check_pair_limits(args, min(args.max_new_tokens, 32) if args.quick else args.max_new_tokens)
    return bench_main(args)


def cmd_theory(args: argparse.Namespace) -> int:
    from specviz.theory.cli import main as theory_main

    check_out_dir(args.figures, "--figures", "the figures")
    try:
        return theory_main(args)
    except OSError as exc:  # the checks above passed but writing did not (a full disk, a special filesystem)
        where = exc.filename or args.figures
        raise SpecvizError(f"--figures {args.figures}: could not write {where} ({exc.strerror or exc}).") from exc


def _build_run(run: argparse.ArgumentParser) -> None:
    cli_run.add_arguments(run)
    run.set_defaults(fn=cmd_run, flags=option_names(run, algorithm="--algo"))


def _build_compare(cmp_: argparse.ArgumentParser) -> None:
    cli_compare.add_arguments(cmp_)
    cmp_.set_defaults(fn=cmd_compare, flags=option_names(cmp_, algorithm="--algos"))


def _build_algorithms(p: argparse.ArgumentParser) -> None:
    p.set_defaults(fn=cmd_algorithms)


def _build_bench(bench: argparse.ArgumentParser) -> None:
    from specviz.bench.args import add_arguments

    add_arguments(bench)
    bench.set_defaults(fn=cmd_bench, flags=option_names(bench, algorithm="--algos"))


def _build_theory(theory: argparse.ArgumentParser) -> None:
    from specviz.theory.cli import add_arguments as theory_arguments

    theory_arguments(theory)
    theory.set_defaults(fn=cmd_theory, flags=option_names(theory))


def cmd_papers(args: argparse.Namespace) -> int:
    from specviz.papers.cli import main as papers_main

    check_out_dir(args.out, "--out", "the report")
    return papers_main(args)


def _build_papers(p: argparse.ArgumentParser) -> None:
    from specviz.papers.cli import add_arguments as papers_arguments

    papers_arguments(p)
    p.set_defaults(fn=cmd_papers, flags=option_names(p))


# name -> (help, what builds its options); ``train`` is handed to specviz.train.cli whole (see ``main``)
COMMANDS = {
    "run": ("decode one prompt with one algorithm and print the marked text", _build_run),
    "compare": ("several algorithms on the same prompt and seed", _build_compare),
    "algorithms": ("list the registered algorithms", _build_algorithms),
    "bench": ("benchmark algorithms and Hugging Face assisted generation", _build_bench),
    "theory": ("rerun the theory paper's simulations and write its figures", _build_theory),
    "papers": ("each paper's headline claims rerun on the closest setting, as Markdown and JSON", _build_papers),
    "train": ("train the bundled pair (see python -m specviz train --help)", None),
}


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. ``commands``: the subcommands whose options are built (their modules
    imported); the others are only named, with their help. ``None``: all of them."""
    parser = Parser(prog="python -m specviz", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_, build) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, add_help=build is not None)
        if build is not None and (commands is None or name in commands):
            build(p)
    return parser


def option_names(parser: argparse.ArgumentParser, **aliases: str) -> dict[str, str]:
    """How this command names each parameter an error may be about: every option's Python name (its
    dest, ``top_p``) -> the flag a user types (``--top-p``), plus ``aliases`` for parameters the
    command names otherwise (``algorithm="--algos"``)."""
    names = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest not in (argparse.SUPPRESS, "help"):
            names.setdefault(action.dest, longs[0])
    return {**names, **aliases}


_QUOTED = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
_PY_NAME = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])")


def error_line(exc: SpecvizError, flags: dict[str, str]) -> str:
    """``exc``'s message on one line, each parameter named by its flag: the parameter a refusal is
    about (``SpecvizError.param``, in the words its message opens with: "top_p (1 disables it) must
    be" -> "--top-p (1 disables it) must be", "sd: parameter 'gamma'" -> "sd: parameter --gamma"),
    and any other option named by its Python name (``max_new_tokens``) outside quoted values."""
    text = " ".join(str(exc).split())
    param, subject = exc.param, " ".join((exc.subject or "").split())
    head = ""
    if param in flags and subject and text.startswith(subject):
        named = re.compile(rf"'{re.escape(param)}'|(?<![\w-]){re.escape(param)}(?![\w-])")
        head, text = named.sub(flags[param], subject, count=1), text[len(subject) :]
    parts = _QUOTED.split(text)  # odd entries: quoted values ('max_new_tokens' as a value stays as it is)
    for i in range(0, len(parts), 2):
        parts[i] = _PY_NAME.sub(lambda m: flags.get(m.group(), m.group()), parts[i])
    return head + "".join(parts)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["train"]:
        from specviz.train.cli import main as train_main

        return train_main(argv[1:])
    args = build_parser(argv[:1]).parse_args(argv)  # only the command given is built
    try:
        return args.fn(args)
    except SpecvizError as exc:
        print(f"error: {error_line(exc, getattr(args, 'flags', {}))}", file=sys.stderr)  # one line, flags' names
        return 2
    except KeyboardInterrupt:
        return 130
