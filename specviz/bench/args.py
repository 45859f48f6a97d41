"""``python -m specviz bench``'s options, built without torch or the models (``--help`` answers at
once); ``bench.run`` does the work."""

from __future__ import annotations

import argparse

from specviz import defaults
from specviz.bench import timing
from specviz.pair_options import add_pair_args
from specviz.validation import whole


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``bench``'s options: the pair (``pair_options``), what runs (``_rows``), how it is timed and where the
    report goes (``_timing``)."""
    add_pair_args(p)  # default pair: the first preset (smollm2-135m-offline); --device, --dtype, --chat
    _rows(p)
    _timing(p)


def _rows(p: argparse.ArgumentParser) -> None:
    """What runs: the algorithms, prompts, tokens, and the extra rows (``sd`` at other draft lengths and
    controllers, each algorithm with other drafters)."""
    p.add_argument("--algos", nargs="+", default=None, help="specviz algorithms (default: every registered one)")
    p.add_argument("--categories", nargs="+", default=None, help="prompt categories (default: all)")
    p.add_argument("--prompts-per-category", type=whole(1), default=None, help="(default: all; --quick: 2)")
    p.add_argument(
        "--gamma", type=whole(1, 64), default=4, help="draft tokens per step of Hugging Face assisted generation"
    )
    p.add_argument(
        "--max-new-tokens",
        type=whole(1),
        default=defaults.MAX_NEW_TOKENS,
        help="tokens per prompt (--quick: at most 32)",
    )
    p.add_argument(
        "--beam-width",
        type=whole(1, 8),
        default=4,
        help="beams of `beam` and of the fixed-width `dsbd` row (whose width is twice this, at most 16)",
    )
    p.add_argument(
        "--sd-gammas",
        type=whole(1, 32),
        nargs="*",
        default=(),
        help="extra `sd` rows at these draft lengths (`sd_g2`, ...), beside `sd` at its default",
    )
    p.add_argument(
        "--sd-controllers",
        nargs="*",
        default=(),
        metavar="CONTROLLER",
        help="extra `sd` rows under these draft-length controllers (`sd_heuristic`, ...): "
        "beta_ts, cali_ts, fixed, heuristic, confidence, adaptive",
    )
    p.add_argument(
        "--drafters",
        nargs="*",
        default=(),
        choices=("model", "feature", "model_cut"),
        help="also time each algorithm that takes a drafter with each of these (rows ALGO@DRAFTER)",
    )


def _timing(p: argparse.ArgumentParser) -> None:
    """How it is timed (passes, peers, ``--quick``, a random pair, the cost model's sizes, threads) and the
    report's directory."""
    p.add_argument(
        "--repeat", "--repeats", dest="repeat", type=whole(1), default=3, help="timed passes after a warm-up"
    )
    p.add_argument("--no-hf", action="store_true", help="skip the Hugging Face peers")
    p.add_argument(
        "--quick",
        action="store_true",
        help="about a minute on the bundled pair: 2 prompts per category, 32 tokens, 1 timed pass, "
        "t(n) at powers of two",
    )
    p.add_argument(
        "--random-pair",
        choices=("llama-1b", "tiny"),
        default=None,
        help="time randomly initialised models of real shapes instead of a real pair (t(n), overhead, "
        "cost model; tau between random models means nothing)",
    )
    p.add_argument(
        "--sizes",
        type=whole(1, 128),
        nargs="+",
        default=None,
        metavar="N",
        help="the call sizes n whose t(n) the cost model measures (default: every n in 1..128; "
        "between two sizes it interpolates)",
    )
    p.add_argument(
        "--threads",
        type=timing.threads_arg,
        default=None,
        help=f"torch intra-op threads, 1 to {timing.cpu_count()} (default: torch's own choice); set for "
        "the run and restored after it, reported with the device, dtype and load (bench.json, bench.md)",
    )
    p.add_argument("--out", default="bench-out", help="directory for bench.json and bench.md")
