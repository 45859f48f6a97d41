"""``python -m specviz train early-exit``'s command line: its options from the plain recipe settings
(``recipes.TrainConfig``), parsed before ``early_exit``'s training code (and torch) is imported, so
``--help`` and a refused option answer at once."""

from __future__ import annotations

import argparse
import sys

from specviz.validation import Parser, real, whole

from .recipes import TrainConfig


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="python -m specviz train early-exit",
        description="Train an EESD early-exit head on a frozen target (self-distillation).",
    )
    defaults = TrainConfig()
    p.add_argument("--target", required=True, help="target model directory (save_pretrained layout)")
    p.add_argument(
        "--exit-layer",
        type=whole(1),
        help="N: the head reads the output of the first N layers (default: 7.5%% of the layers, at least 1)",
    )
    p.add_argument("--out", help="output directory (default: next to the target)")
    p.add_argument("--text", help="train on this UTF-8 text file instead of the Python standard library")
    p.add_argument("--steps", type=whole(1), help="optimiser steps (default: the bundled recipe's ee_steps)")
    p.add_argument("--lr", type=real(), help="peak learning rate (default: the bundled recipe's ee_lr)")
    p.add_argument(
        "--calibration-steps",
        type=whole(0),
        default=defaults.calibration_steps,
        help="then train Cali-TS's calibration head for this many steps (0: skip; default "
        f"{defaults.calibration_steps})",
    )
    p.add_argument(
        "--calibration-sequences",
        type=whole(1),
        default=defaults.calibration_sequences,
        help=f"greedy target continuations it learns from (default {defaults.calibration_sequences})",
    )
    p.add_argument("--no-progress", action="store_true", help="log lines instead of a progress bar")
    for name in (
        "seed",
        "device",
        "threads",
        "seq_len",
        "batch_size",
        "max_files",
        "heldout_percent",
        "generated_fraction",
        "gen_sequences",
        "gen_prompt_len",
        "gen_new_tokens",
        "gen_greedy_fraction",
        "gen_temperature",
        "eval_windows",
        "log_every",
        "cache_dir",
    ):
        value = getattr(defaults, name)
        typ = {int: whole(), float: real()}.get(type(value), str)
        if name == "max_files":
            typ = whole(1)
        p.add_argument("--" + name.replace("_", "-"), type=typ, default=value, help=f"default: {value}")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .early_exit import run  # torch from here on

    try:
        run(args)
    except (ValueError, FileNotFoundError, TypeError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
