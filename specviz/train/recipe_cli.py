"""The command line of a staged recipe (``train chat``, ``train feature``): one flag per field of its
dataclass (``--stages`` comma-separated, tuple fields of ints comma-separated), parsed into the recipe,
run, and a bad setting reported in one line. The parser and ``--help`` read only plain data (the
dataclasses in ``recipes``, the recipe module's docstring from its source): no torch until a run."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib
import importlib.util
import sys

from specviz.errors import SpecvizError
from specviz.validation import Parser, real, whole

from .chat_prompts import QUESTION_SETS
from .recipes import CHAT_STAGES, FEATURE_STAGES, ChatRecipe, FeatureRecipe

KINDS = {"int": whole(), "float": real(), "int | None": whole(), "str | None": str}
CHOICES = {"questions": QUESTION_SETS}  # a field's allowed values: a typo refused before the target loads

# name -> (settings, stages, the module that runs it, its run function)
RECIPES: dict[str, tuple[type, tuple[str, ...], str, str]] = {
    "chat": (ChatRecipe, CHAT_STAGES, "specviz.train.chat_pair", "run_chat"),
    "feature": (FeatureRecipe, FEATURE_STAGES, "specviz.train.feature_pair", "run_feature"),
}


def module_doc(module: str) -> str | None:
    """``module``'s docstring, read from its source without importing it (nor torch with it)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        return None
    with open(spec.origin, encoding="utf-8") as fh:
        return ast.get_docstring(ast.parse(fh.read()))


def recipe_parser(name: str) -> argparse.ArgumentParser:
    """The parser of ``python -m specviz train NAME``, built from the recipe's dataclass."""
    recipe, stages, module, _ = RECIPES[name]
    p = Parser(
        prog=f"python -m specviz train {name}",
        description=module_doc(module),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--stages", help=f"comma-separated subset of {','.join(stages)} (default: all)")
    for f in dataclasses.fields(recipe):
        if f.name in ("stages", "extra"):
            continue
        listed = str(f.type).startswith("tuple")
        help_ = f"default: {','.join(map(str, f.default)) if listed else f.default}" + (
            ", comma-separated" if listed else ""
        )
        p.add_argument(
            "--" + f.name.replace("_", "-"),
            type=str if listed else KINDS.get(str(f.type), str),
            default=None,
            choices=CHOICES.get(f.name),
            help=help_,
        )
    return p


def _listed(key: str, text: str, floats: bool) -> tuple:
    """A tuple field's comma-separated text: integers (``2,15,27``) or, for a float field, numbers (``1.0,0.7``)."""
    kind, example = (real(), "1.0,0.7") if floats else (whole(), "2,15,27")
    try:
        return tuple(kind(s) for s in text.split(","))
    except argparse.ArgumentTypeError:
        raise ValueError(f"--{key.replace('_', '-')} {text!r}: comma-separated numbers, e.g. {example}") from None


def recipe_main(name: str, argv: list[str] | None) -> int:
    """Parse ``argv`` into recipe ``name``'s settings and run it; 2 with one line on a bad setting."""
    recipe, _, module, run_name = RECIPES[name]
    args = recipe_parser(name).parse_args(argv)
    listed = {f.name: str(f.type) for f in dataclasses.fields(recipe) if str(f.type).startswith("tuple")}
    values = {k: v for k, v in vars(args).items() if v is not None and k != "stages"}
    try:
        for key in set(listed) & set(values):  # values has no "stages": it is read below
            values[key] = _listed(key, values[key], floats="float" in listed[key])
        if args.stages:
            values["stages"] = tuple(s.strip() for s in args.stages.split(",") if s.strip())
        run = getattr(importlib.import_module(module), run_name)  # torch from here on
        run(recipe(**values), log=lambda s: print(s, flush=True))
    except (ValueError, FileNotFoundError, SpecvizError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
