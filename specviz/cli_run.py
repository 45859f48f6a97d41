"""``python -m specviz run``: decode one prompt with one algorithm and print the marked text."""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from specviz.cli_checks import check_decode_args
from specviz.cli_options import add_decode_args, add_threads_arg, algo_params, decode_kwargs, timed
from specviz.cli_output import render_text, summary_line, write_tokens, write_trace
from specviz.cli_params import ALGORITHM_NAMES
from specviz.pair_options import add_pair_args


def add_arguments(run: argparse.ArgumentParser) -> None:
    """``run``'s options: the pair, the decoding options, ``--algo`` and what to write."""
    add_pair_args(run)
    add_decode_args(run)
    run.add_argument("--algo", default="sd", help="one of %s (default: %%(default)s)" % ", ".join(ALGORITHM_NAMES))
    run.add_argument(
        "--out",
        help="write the trace JSON here; gzip-compressed when the name ends in .gz "
        "(x.json.gz: what the app's replay also reads, for long runs)",
    )
    run.add_argument(
        "--tokens-csv",
        metavar="PATH",
        help="write every generated token with how it was produced "
        "(kind, drafter, p, q, acceptance probability, draw) as CSV here",
    )
    run.add_argument(
        "--record-lens",
        action="store_true",
        help="record each step's logit lens in the trace (what every target layer predicts through the "
        "target's own head, from the verify call; the app's Layers view draws it on replay)",
    )
    run.add_argument("--no-color", action="store_true", help="plain markers instead of ANSI colours")
    run.add_argument("--color", action="store_true", help="force ANSI colours")
    add_threads_arg(run)


def main(args: argparse.Namespace, load_pair: Callable) -> int:
    """Decode ``args.prompt`` with ``args.algo`` on the pair ``load_pair(args)`` loads (after the options
    are checked) and print the marked text, the summary and the conditions; write the trace and tokens."""
    from specviz.decoding import decode

    check_decode_args(args, [args.algo])
    pair = load_pair(args)
    call = {
        0: lambda: decode(
            pair,
            args.algo,
            args.prompt,
            **decode_kwargs(args, pair),
            record_lens=args.record_lens,
            **algo_params(args, args.algo),
        )
    }
    timings, conditions = timed(args, pair, call, 1, 0)
    trace = timings[0].result
    print(render_text(trace, color=not args.no_color and sys.stdout.isatty() or args.color))
    print(summary_line(trace))
    print(f"ran on {conditions.sentence()}")
    if args.out:
        write_trace(trace, args.out)
        print(f"trace written to {args.out}")
    if args.tokens_csv:
        write_tokens([trace], args.tokens_csv)
        print(f"tokens written to {args.tokens_csv}")
    return 0
