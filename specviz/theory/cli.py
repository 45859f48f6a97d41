"""Arguments of ``python -m specviz theory``; the work is imported only when the command runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from specviz.validation import whole


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--figures", required=True, metavar="OUT", help="directory for the figures and results table")
    p.add_argument("--runs", type=whole(1), default=5000, help="Monte Carlo runs per algorithm (paper: 5000)")
    p.add_argument(
        "--seed", type=whole(0, 2**32 - 1), default=10, help="seed of the toy chains (numpy RandomState; paper: 10)"
    )
    p.add_argument("--mc-seed", type=whole(0), default=0, help="seed of the Monte Carlo draws")
    p.add_argument(
        "--horizons",
        type=whole(1),
        nargs="+",
        default=[50, 100],
        help="horizons T: the first for Fig. 2, the others for Fig. 5 (paper: 50 100)",
    )
    p.add_argument("--draws", type=whole(1), default=200_000, help="single-token samples per point in Fig. 4")
    p.add_argument("--no-png", action="store_true", help="skip PNGs even when kaleido is installed")


def main(args: argparse.Namespace) -> int:
    from specviz.theory.report import run

    out = Path(args.figures)
    files = run(
        out,
        runs=args.runs,
        seed=args.seed,
        mc_seed=args.mc_seed,
        horizons=tuple(args.horizons),
        draws=args.draws,
        png=False if args.no_png else None,
    )
    print((out / "results.md").read_text(encoding="utf-8"))
    print(f"{len(files)} files written to {out}")
    return 0
