"""The command line of a staged recipe (``train chat``, ``train feature``): one flag per field of its
dataclass (``--stages`` comma-separated, tuple fields of ints comma-separated), parsed into the recipe,
run, and a bad setting reported in one line."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any, Callable

from specviz.errors import SpecvizError

KINDS = {"int": int, "float": float, "int | None": int, "str | None": str}


def recipe_parser(recipe: type, stages: tuple[str, ...], prog: str, doc: str | None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stages", help=f"comma-separated subset of {','.join(stages)} (default: all)")
    for f in dataclasses.fields(recipe):
        if f.name in ("stages", "extra"):
            continue
        listed = str(f.type).startswith("tuple")
        help_ = f"default: {','.join(map(str, f.default)) if listed else f.default}" + (", comma-separated" if listed
                                                                                        else "")
        p.add_argument("--" + f.name.replace("_", "-"), type=str if listed else KINDS.get(str(f.type), str),
                       default=None, help=help_)
    return p


def recipe_main(recipe: type, stages: tuple[str, ...], run: Callable[..., Any], prog: str, doc: str | None,
                argv: list[str] | None) -> int:
    """Parse ``argv`` into ``recipe`` and ``run`` it; 2 with one line on a bad setting."""
    args = recipe_parser(recipe, stages, prog, doc).parse_args(argv)
    listed = {f.name for f in dataclasses.fields(recipe) if str(f.type).startswith("tuple")} - {"stages"}
    values = {k: v for k, v in vars(args).items() if v is not None and k != "stages"}
    try:
        for name in listed & set(values):
            text = values[name]
            try:
                values[name] = tuple(int(s) for s in text.split(",") if s.strip())
            except ValueError:
                raise ValueError(f"--{name.replace('_', '-')} {text!r}: comma-separated integers, e.g. 2,15,27") from None
        if args.stages:
            values["stages"] = tuple(s.strip() for s in args.stages.split(",") if s.strip())
        run(recipe(**values), log=lambda s: print(s, flush=True))
    except (ValueError, FileNotFoundError, SpecvizError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
