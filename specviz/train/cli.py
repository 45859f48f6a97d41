"""``python -m specviz.train`` (also ``python -m specviz train``): rebuild the bundled pair.

The defaults are the recipe of the shipped ``assets/``: run ``python -m specviz.train --out assets``
(about 70 minutes on a busy 2-core CPU with ``--threads 1``). ``--preset smoke`` is a
one-minute run with tiny models;
``--preset gpu`` is the larger recipe for a CUDA machine. ``--stages draft,early_exit,eval`` redoes
some stages and loads the others' results from ``--out``.

``python -m specviz train chat --out assets/smollm2`` is the recipe of the default pair's draft and
early-exit head for SmolLM2-135M-Instruct (``specviz/train/chat_pair.py``).

``python -m specviz train feature --out assets/smollm2/feature`` is the recipe of the default pair's
feature drafter (EAGLE-3 style, reduced draft vocabulary; ``specviz/train/feature_pair.py``).

``python -m specviz train early-exit --target DIR --exit-layer N [--text FILE] [--out DIR]`` trains an
EESD early-exit head for any causal LM directory (see ``specviz/train/early_exit.py``).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from specviz.validation import Parser, real, true_or_false, whole

from .recipe_cli import RECIPES, recipe_main
from .recipes import STAGES, TrainConfig

PRESETS: dict[str, dict] = {
    "cpu": {},  # the TrainConfig defaults: the shipped assets
    "smoke": dict(
        max_files=40,
        vocab_size=512,
        seq_len=64,
        batch_size=8,
        target_size="tiny-target",
        draft_size="tiny-draft",
        target_steps=30,
        draft_steps=20,
        ee_steps=20,
        gen_sequences=16,
        gen_prompt_len=16,
        gen_new_tokens=49,
        exit_layer=1,
        calibration_steps=20,
        calibration_sequences=8,
        eval_windows=4,
        eval_new_tokens=16,
        log_every=10,
        measure_decode=False,
    ),
    # not yet run: about 5 epochs of the corpus for the target
    "gpu": dict(
        target_size="target-gpu",
        batch_size=64,
        target_steps=2500,
        draft_steps=2000,
        ee_steps=1500,
        gen_sequences=8192,
        threads=8,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m specviz.train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--preset", choices=sorted(PRESETS), default="cpu", help="starting recipe (default: cpu)")
    p.add_argument("--out", help="output directory (default: assets)")
    p.add_argument("--stages", help=f"comma-separated subset of {','.join(STAGES)} (default: all)")
    for f in dataclasses.fields(TrainConfig):
        if f.name in ("out", "stages", "extra"):
            continue
        flag = "--" + f.name.replace("_", "-")
        typ = f.type if isinstance(f.type, type) else str(f.type)
        if typ in (bool, "bool"):
            p.add_argument(flag, type=true_or_false, help="true/false")
        elif typ in (int, "int", "int | None"):
            p.add_argument(flag, type=whole())
        elif typ in (float, "float"):
            p.add_argument(flag, type=real())
        else:
            p.add_argument(flag, type=str)
    return p


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    values = dict(PRESETS[args.preset])
    for f in dataclasses.fields(TrainConfig):
        v = getattr(args, f.name, None)
        if v is not None and f.name != "stages":
            values[f.name] = v
    if args.stages:
        values["stages"] = tuple(s.strip() for s in args.stages.split(",") if s.strip())
    return TrainConfig(**values)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] and argv[0] in RECIPES:  # train chat (the default pair's draft and head), train feature
        return recipe_main(argv[0], argv[1:])
    if argv[:1] == ["early-exit"]:  # one head for any target: python -m specviz train early-exit --target DIR ...
        from .early_exit_cli import main as early_exit_main

        return early_exit_main(argv[1:])
    args = build_parser().parse_args(argv)
    cfg = config_from_args(args)
    from .pipeline import run  # torch from here on

    try:
        run(cfg, log=lambda s: print(s, flush=True))
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
