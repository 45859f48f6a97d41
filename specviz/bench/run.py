"""``python -m specviz bench``: ``ar``, ``sd`` (and any other registered algorithm) against Hugging Face
``generate(..., assistant_model=draft)`` on the same pair, prompts and greedy settings, in one process.

Speed is reported as ratios against ``ar`` measured in the same process (median of ``--repeats``
runs after a warm-up), never as absolute limits. Writes ``bench.json`` and ``bench.md`` to ``--out``.

Beam algorithms ("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560): ``beam`` runs with
``--beam-width`` beams; ``dsbd`` runs twice, with the dynamic width rule (``dsbd``: W_S =
``--beam-width``, W_min = 1) and with the width fixed at ``--beam-width`` (``dsbd_fixed``, 2x as
many drafts per layer), whose greedy output must equal ``beam``'s. Every row also reports output
quality as the target's mean log-probability per token of its output (``target_logp``) and whether
its greedy text equals ``beam``'s.
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
    p.add_argument("--beam-width", type=int, default=4, help="beams of `beam` and of the fixed-width `dsbd` row")
    p.add_argument("--out", default="bench-out")


def hf_assisted(pair, prompt_ids: list[int], max_new_tokens: int, gamma: int) -> list[int]:
    """Greedy Hugging Face assisted generation with a constant ``gamma`` draft tokens per step."""
    ids = torch.tensor([prompt_ids], device=pair.device)
    out = pair.target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=pair.draft, do_sample=False,
                               max_new_tokens=max_new_tokens, num_assistant_tokens=gamma,
                               num_assistant_tokens_schedule="constant", pad_token_id=pair.tokenizer.eos_token_id)
    return out[0, len(prompt_ids):].tolist()


@torch.inference_mode()
def target_logp(pair, prompt_ids: list[int], output_ids: list[int]) -> tuple[float, int]:
    """Sum of the target's log-probabilities of ``output_ids`` after ``prompt_ids`` (one forward), and
    the number of tokens: the output quality measure of beam decoding."""
    if not output_ids:
        return 0.0, 0
    ids = torch.tensor([prompt_ids + output_ids], device=pair.device)
    logp = torch.log_softmax(pair.target(ids).logits[0, :, : pair.vocab_size].double(), -1)
    rows = torch.arange(len(prompt_ids) - 1, len(prompt_ids) + len(output_ids) - 1, device=pair.device)
    return float(logp[rows, torch.tensor(output_ids, device=pair.device)].sum()), len(output_ids)


def methods(algos: list[str], gamma: int, beam_width: int) -> list[tuple[str, str, dict[str, Any]]]:
    """(row label, algorithm, parameters) per benchmarked method (see module docstring)."""
    import specviz

    out = []
    for algo in algos:
        names = {p.name for p in specviz.ALGORITHMS[algo].params}
        params = {"gamma": gamma} if "gamma" in names else {}
        if algo == "beam":
            params["width"] = beam_width
        if algo == "dsbd":
            out.append((algo, algo, {**params, "width": beam_width, "min_width": 1}))
            out.append(("dsbd_fixed", algo, {**params, "width": 2 * beam_width, "min_width": beam_width,
                                             "dynamic": False}))
            continue
        out.append((algo, algo, params))
    return out


def benchmark(pair, prompts: list[str], algos: list[str], gamma: int, max_new_tokens: int, repeats: int,
              with_hf: bool = True, beam_width: int = 4) -> list[dict[str, Any]]:
    """One row per (method) with totals over all prompts; speedups relative to ``ar``."""
    import specviz

    rows: dict[str, dict[str, Any]] = {}
    outputs: dict[str, list[list[int]]] = {}
    for prompt in prompts:
        for label, algo, params in methods(algos, gamma, beam_width):
            wall, trace = median_time(lambda: specviz.decode(pair, algo, prompt, max_new_tokens=max_new_tokens,
                                                             temperature=0, **params), repeats)
            row = rows.setdefault(label, {"method": label, "new_tokens": 0, "target_calls": 0, "wall_s": 0.0,
                                          "logp_sum": 0.0, "logp_tokens": 0})
            row["new_tokens"] += trace.metrics["new_tokens"]
            row["target_calls"] += trace.metrics["target_calls"]
            row["wall_s"] += wall
            total, n = target_logp(pair, trace.prompt_ids, trace.output_ids)
            row["logp_sum"] += total
            row["logp_tokens"] += n
            outputs.setdefault(label, []).append(trace.output_ids)
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
        row["same_text_as_beam"] = outputs[name] == outputs["beam"] if "beam" in outputs else None
        tokens = row.pop("logp_tokens", 0)
        total = row.pop("logp_sum", 0.0)
        row["target_logp"] = total / tokens if tokens else None
    return list(rows.values())


def to_markdown(rows: list[dict[str, Any]], header: str) -> str:
    lines = [header, "", "| method | new tokens | target calls | tau | wall s | tokens/s | speedup vs ar | "
             "greedy text = ar | target log p / token | greedy text = beam |",
             "|---|---:|---:|---:|---:|---:|---:|:---:|---:|:---:|"]
    yes = lambda v: "-" if v is None else ("yes" if v else "NO")  # noqa: E731
    for r in rows:
        fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
        lines.append(f"| {r['method']} | {r['new_tokens']} | {fmt(r['target_calls'], 'd')} | {fmt(r['tau'], '.2f')} | "
                     f"{r['wall_s']:.3f} | {r['tokens_per_s']:.1f} | {fmt(r['speedup_vs_ar'], '.2f')} | "
                     f"{yes(r['same_text_as_ar'])} | {fmt(r.get('target_logp'), '.3f')} | "
                     f"{yes(r.get('same_text_as_beam'))} |")
    return "\n".join(lines) + "\n"


def main(args: argparse.Namespace) -> int:
    import specviz

    if not (args.target or args.preset):
        args.preset = bundled_preset().name
    pair = load_pair_from_args(args)
    algos = args.algos or [a for a, s in specviz.ALGORITHMS.items()
                           if (s.lossless or a in ("beam", "dsbd")) and (a != "eesd" or pair.early_exit is not None)]
    rows = benchmark(pair, args.prompt or DEFAULT_PROMPTS, algos, args.gamma, args.max_new_tokens, args.repeats,
                     with_hf=not args.no_hf, beam_width=args.beam_width)
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
