"""``python -m specviz bench``: ``ar``, ``sd`` (and any other registered algorithm) against Hugging Face
``generate(..., assistant_model=draft)`` on the same pair, prompts and greedy settings, in one process.

Speed is reported as ratios against ``ar`` measured in the same process (median of ``--repeats``
runs after a warm-up), never as absolute limits. Writes ``bench.json`` and ``bench.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Any

import torch

from specviz.bench.timing import median_time
from specviz.cli import add_pair_args, load_pair_from_args
from specviz.presets import bundled_preset

DEFAULT_PROMPTS = [
    "def fibonacci(n):\n",
    "import os\nimport sys\n\n\ndef main():\n",
    "class Stack:\n    def __init__(self):\n",
    "    for i in range(len(items)):\n",
]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_pair_args(p)  # default pair: the bundled preset (assets/target and assets/draft)
    p.add_argument("--algos", nargs="+", default=None, help="specviz algorithms (default: all that need at most a draft)")
    p.add_argument("--gamma", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--prompt", action="append", help="a prompt (repeatable); default: built-in code prompts")
    p.add_argument("--no-hf", action="store_true", help="skip Hugging Face assisted generation")
    p.add_argument("--out", default="bench-out")


def hf_assisted(pair, prompt_ids: list[int], max_new_tokens: int, gamma: int) -> list[int]:
    """Greedy Hugging Face assisted generation with a constant ``gamma`` draft tokens per step."""
    ids = torch.tensor([prompt_ids], device=pair.device)
    out = pair.target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=pair.draft, do_sample=False,
                               max_new_tokens=max_new_tokens, num_assistant_tokens=gamma,
                               num_assistant_tokens_schedule="constant", pad_token_id=pair.tokenizer.eos_token_id)
    return out[0, len(prompt_ids):].tolist()


def benchmark(pair, prompts: list[str], algos: list[str], gamma: int, max_new_tokens: int, repeats: int,
              with_hf: bool = True) -> list[dict[str, Any]]:
    """One row per (method) with totals over all prompts; speedups relative to ``ar``."""
    import specviz

    rows: dict[str, dict[str, Any]] = {}
    outputs: dict[str, list[list[int]]] = {}
    for prompt in prompts:
        for algo in algos:
            params = {"gamma": gamma} if any(p.name == "gamma" for p in specviz.ALGORITHMS[algo].params) else {}
            wall, trace = median_time(lambda: specviz.decode(pair, algo, prompt, max_new_tokens=max_new_tokens,
                                                             temperature=0, **params), repeats)
            row = rows.setdefault(algo, {"method": algo, "new_tokens": 0, "target_calls": 0, "wall_s": 0.0})
            row["new_tokens"] += trace.metrics["new_tokens"]
            row["target_calls"] += trace.metrics["target_calls"]
            row["wall_s"] += wall
            outputs.setdefault(algo, []).append(trace.output_ids)
        if with_hf and pair.draft is not None:
            ids = pair.encode(prompt)
            wall, out = median_time(lambda: hf_assisted(pair, ids, max_new_tokens, gamma), repeats)
            row = rows.setdefault("hf_assisted", {"method": "hf_assisted", "new_tokens": 0, "target_calls": None,
                                                  "wall_s": 0.0})
            row["new_tokens"] += len(out)
            row["wall_s"] += wall
            outputs.setdefault("hf_assisted", []).append(out)
    base = rows.get("ar")
    for name, row in rows.items():
        row["tau"] = row["new_tokens"] / row["target_calls"] if row["target_calls"] else None
        row["tokens_per_s"] = row["new_tokens"] / row["wall_s"] if row["wall_s"] else 0.0
        row["speedup_vs_ar"] = row["tokens_per_s"] / base["tokens_per_s"] if base else None
        row["same_text_as_ar"] = outputs[name] == outputs["ar"] if base else None
    return list(rows.values())


def to_markdown(rows: list[dict[str, Any]], header: str) -> str:
    lines = [header, "", "| method | new tokens | target calls | tau | wall s | tokens/s | speedup vs ar | greedy text = ar |",
             "|---|---:|---:|---:|---:|---:|---:|:---:|"]
    for r in rows:
        fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
        lines.append(f"| {r['method']} | {r['new_tokens']} | {fmt(r['target_calls'], 'd')} | {fmt(r['tau'], '.2f')} | "
                     f"{r['wall_s']:.3f} | {r['tokens_per_s']:.1f} | {fmt(r['speedup_vs_ar'], '.2f')} | "
                     f"{'-' if r['same_text_as_ar'] is None else ('yes' if r['same_text_as_ar'] else 'NO')} |")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    import specviz

    if not (args.target or args.preset):
        args.preset = bundled_preset().name
    pair = load_pair_from_args(args)
    algos = args.algos or [a for a, s in specviz.ALGORITHMS.items()
                           if s.lossless and (a != "eesd" or pair.early_exit is not None)]
    rows = benchmark(pair, args.prompt or DEFAULT_PROMPTS, algos, args.gamma, args.max_new_tokens, args.repeats,
                     with_hf=not args.no_hf)
    desc = pair.describe()
    header = (f"## specviz bench: {desc['target']} <- {desc['draft']} on {desc['device']} ({desc['dtype']}), greedy, "
              f"gamma {args.gamma}, {args.max_new_tokens} new tokens x {len(args.prompt or DEFAULT_PROMPTS)} prompts, "
              f"median of {args.repeats}")
    md = to_markdown(rows, header)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench.json"), "w") as fh:
        json.dump({"pair": desc, "settings": {k: v for k, v in vars(args).items() if k != "fn"}, "rows": rows}, fh,
                  indent=2, default=str)
    with open(os.path.join(args.out, "bench.md"), "w") as fh:
        fh.write(md)
    print(md)
    return 0
