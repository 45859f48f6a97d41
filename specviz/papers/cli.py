"""Arguments of ``python -m specviz papers``; the work is imported only when the command runs."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from specviz.errors import SpecvizError
from specviz.validation import whole

SECTION_NAMES = ("theory", "sequoia", "mcsd", "eesd", "dsbd")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        default="papers-out",
        metavar="DIR",
        help="directory for papers.md (and papers.json unless --json says where) (default: %(default)s)",
    )
    p.add_argument(
        "--json",
        metavar="PATH",
        help="write the JSON report here instead (the repository ships it as "
        "assets/papers/papers.json, which the app's Papers view reads)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a CI-sized run: the code pair only, two prompts, one seed, 8 tokens a run, few Monte Carlo runs",
    )
    p.add_argument(
        "--threads",
        type=whole(1, os.cpu_count() or 1),
        default=1,
        help="torch intra-op threads (default: %(default)s, which on a machine shared with other work is "
        "many times faster than one thread per core; the report states it)",
    )
    p.add_argument(
        "--sections", nargs="+", choices=SECTION_NAMES, default=list(SECTION_NAMES), help="papers to run (default: all)"
    )


def main(args: argparse.Namespace) -> int:
    """Run the report (``specviz.cli.cmd_papers`` has checked ``--out``)."""
    import torch

    from specviz.papers.report import budget_for, check, collect, write

    if args.json is not None:  # refused now, before the work, if it cannot be written
        folder = os.path.dirname(os.path.abspath(args.json))
        if not args.json.strip() or os.path.isdir(args.json) or not os.access(folder, os.W_OK):
            raise SpecvizError(f"--json {args.json}: must name a file in a writable directory.")
    torch.set_num_threads(args.threads)
    command = (
        "python -m specviz papers " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if sys.argv[1:2] == ["papers"]
        else "python -m specviz papers" + (" --quick" if args.quick else "")
    )
    report = collect(budget_for(args.quick), tuple(s for s in SECTION_NAMES if s in args.sections))
    problems = check(report)
    try:
        files = write(report, Path(args.out), command, Path(args.json) if args.json else None)
    except OSError as exc:
        raise SpecvizError(f"--out {args.out}: could not write the report ({exc.strerror or exc}).") from exc
    for f in files:
        print(f"wrote {f}")
    if problems:
        print("the report has problems:\n" + "\n".join(problems), file=sys.stderr)
        return 1
    return 0
