"""How long the figures take: ``python -m specviz.bench.figure_timing [--target DIR --draft DIR]``.

Decodes with a real pair (the one given, else the bundled pair if present, else a small
random-initialised Llama pair), then times, per call (median of 20 after a warm-up): the tree figure
of a 64-node step (``mcsd`` with k_config 4x3x4: 64 drafted nodes), its JSON serialisation (what
Gradio sends), the coloured text, and the comparison figures of four 200-step runs (what a scrub
rebuilds). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Callable

from specviz import viz
from specviz.bench.timing import median_time, threads_arg
from specviz.errors import ModelLoadError
from specviz.presets import bundled_preset, check_available
from specviz.validation import Parser


def _random_pair(vocab: int = 512):
    from specviz.models.loading import ModelPair
    from specviz.models.random_llama import llama_shape, random_llama

    common = dict(heads=4, kv_heads=2, vocab=vocab, positions=1024, init_range=0.1)
    target = random_llama(llama_shape(hidden=64, intermediate=128, layers=2, **common), 0)
    draft = random_llama(llama_shape(hidden=32, intermediate=64, layers=1, **common), 1)
    return ModelPair(target, draft, None, vocab, target_name="random-llama-64", draft_name="random-llama-32")


def _timing_pair(target: str | None, draft: str | None):
    """The pair given, else the bundled pair if its files are here, else ``_random_pair()``."""
    from specviz.models.loading import load_pair

    if target:
        return load_pair(target, draft)
    bundled = bundled_preset()
    try:
        check_available(bundled)
    except ModelLoadError:
        return _random_pair()
    return load_pair(bundled.target, bundled.draft)


def timeit(fn: Callable[[], object], repeats: int = 20) -> float:
    """Median milliseconds per call of ``fn``."""
    return 1000 * median_time(fn, repeats)[0]


def main(argv: list[str] | None = None) -> None:
    ap = Parser(
        prog="python -m specviz.bench.figure_timing",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--target")
    ap.add_argument("--draft")
    ap.add_argument("--threads", type=threads_arg, default=1)
    args = ap.parse_args(argv)
    import torch

    from specviz.algorithms import ALGORITHMS
    from specviz.decoding import decode

    torch.set_num_threads(args.threads)
    pair = _timing_pair(args.target, args.draft)
    prompt: str | list[int] = "def main(argv=None):\n" if pair.tokenizer is not None else [1, 2, 3]

    tree_trace = decode(pair, "mcsd", prompt=prompt, max_new_tokens=16, temperature=1.0, seed=0, k_config="4x3x4")
    step = max(tree_trace.steps, key=lambda s: len(s.forest))
    step_ms = statistics.median(s.timings.get("total_ms", 0.0) for s in tree_trace.steps)
    runs = []
    for algo, params in (("ar", {}), ("sd", {"gamma": 4}), ("mcsd", {"k_config": "2x2x1"}), ("specinfer", {})):
        if algo in ALGORITHMS:
            t = decode(pair, algo, prompt=prompt, max_new_tokens=400, temperature=1.0, seed=0, **params)
            t.steps = t.steps[:200]
            runs.append((algo, t))
    long = max((t for _, t in runs), key=lambda t: len(t.steps))
    k = len(long.steps) // 2

    rows = [
        (f"tree figure, {len(step.forest)}-node step", timeit(lambda: viz.tree_figure(step))),
        ("tree figure + to_json (sent to the browser)", timeit(lambda: viz.tree_figure(step).to_json())),
        (f"coloured text, {len(long.steps)}-step run", timeit(lambda: viz.tokens_html(long, k))),
        (
            f"tokens-per-step + cumulative, {len(runs)} x ≤200 steps",
            timeit(lambda: (viz.tokens_per_step_figure(runs, k), viz.cumulative_figure(runs, k))),
        ),
        (
            "histogram + time breakdown",
            timeit(lambda: (viz.acceptance_histogram_figure(runs), viz.time_breakdown_figure(runs))),
        ),
        ("comparison table", timeit(lambda: viz.comparison_table_html(runs))),
    ]
    print(
        f"pair: {pair.target_name} / {pair.draft_name} on {pair.device}; median decoding step of that "
        f"64-node mcsd run: {step_ms:.1f} ms\n"
    )
    print("| figure | median ms |\n|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} |")


if __name__ == "__main__":
    main()
