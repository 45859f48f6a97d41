"""The decoding options ``run`` and ``compare`` share (``python -m specviz``): the sampling settings, a flag
per algorithm parameter, ``--threads``, and what the options make of a call to ``decode`` and its timing."""

from __future__ import annotations

import argparse
from typing import Any

from specviz.pair_options import chat_on
from specviz.validation import real, true_or_false, whole


def add_decode_args(p: argparse.ArgumentParser) -> None:
    """The decoding options (their defaults: ``specviz.defaults``, as ``decode``'s and the app's) and one
    flag per algorithm parameter, from ``cli_params`` (plain data: no algorithm, no torch imported)."""
    from specviz import defaults
    from specviz.cli_params import PARAMS, default_text

    p.add_argument("--prompt", required=True)
    p.add_argument("--max-new-tokens", type=whole(), default=defaults.MAX_NEW_TOKENS, help="(default: %(default)s)")
    p.add_argument(
        "--temperature", type=real(), default=defaults.TEMPERATURE, help="0 means greedy (default: %(default)s)"
    )
    p.add_argument("--top-p", type=real(), default=defaults.TOP_P, help="1 disables it (default: %(default)s)")
    p.add_argument("--top-k", type=whole(), default=defaults.TOP_K, help="0 disables it (default: %(default)s)")
    p.add_argument("--seed", type=whole(), default=defaults.SEED, help="(default: %(default)s)")
    for name, kind, help_ in PARAMS:
        flag = "--" + name.replace("_", "-")
        default = default_text(name)  # each algorithm's own default (None here: the algorithm's is used)
        if kind == "bool":
            p.add_argument(flag, type=true_or_false, default=None, help=f"{help_} (true/false) {default}")
        else:
            conv = {"int": whole(), "float": real()}.get(kind, str)
            p.add_argument(flag, type=conv, default=None, help=f"{help_} {default}")


def algo_params(args: argparse.Namespace, algo: str) -> dict[str, Any]:
    from specviz.algorithms import get_algorithm

    names = {prm.name for prm in get_algorithm(algo).params}
    return {k: v for k, v in vars(args).items() if k in names and v is not None}


def decode_kwargs(args: argparse.Namespace, pair) -> dict[str, Any]:
    return dict(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        seed=args.seed,
        chat=chat_on(args, pair),
    )


def add_threads_arg(p: argparse.ArgumentParser) -> None:
    from specviz.bench.timing import cpu_count, threads_arg

    p.add_argument(
        "--threads",
        type=threads_arg,
        default=None,
        help=f"torch intra-op threads, 1 to {cpu_count()} (default: torch's own choice, usually one per "
        "core; the app gives each run cores // concurrent runs); the result states the number",
    )


def timed(args: argparse.Namespace, pair, calls: dict[int, Any], repeats: int, warmup: int):
    """``calls`` timed by the routine Measure and bench share (``bench.timing.rounds``) under
    ``--threads``: their ``Timing``s and the ``Conditions``."""
    from specviz.bench import timing

    timings, conditions, _ = timing.time_calls(
        calls, repeats, warmup=warmup, threads=args.threads, device=str(pair.device), dtype=str(pair.dtype)
    )
    return timings, conditions
