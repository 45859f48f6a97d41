"""``python -m specviz.bench.eesd``: EESD's draft-length controllers on one pair (EESD, Liu et al.
2024, arXiv 2406.03853, Fig. 3 and Table 5: Thompson sampling against fixed draft lengths).

Runs ``eesd`` with ``beta_ts``, ``cali_ts`` and ``fixed`` K = 3, 5, 10, and ``sd`` with its static
``gamma`` and with ``beta_ts``, plus ``ar`` for the wall-time baseline, on the same prompts, greedy
and sampled. Sampled runs average over ``--seeds`` seeds per prompt. Reports per configuration tau
(committed tokens per target call), target and draft calls, mean drafted and accepted tokens per
round, wall seconds and the speed-up against ``ar`` measured in the same process. Writes
``eesd.json`` and ``eesd.md`` to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from specviz.bench.run import DEFAULT_PROMPTS

CONFIGS: list[tuple[str, str, dict[str, Any]]] = [
    ("ar", "ar", {}),
    ("eesd beta_ts", "eesd", {"controller": "beta_ts"}),
    ("eesd cali_ts", "eesd", {"controller": "cali_ts"}),
    ("eesd fixed K=3", "eesd", {"controller": "fixed", "fixed_length": 3}),
    ("eesd fixed K=5", "eesd", {"controller": "fixed", "fixed_length": 5}),
    ("eesd fixed K=10", "eesd", {"controller": "fixed", "fixed_length": 10}),
    ("sd gamma=4", "sd", {"gamma": 4}),
    ("sd beta_ts", "sd", {"controller": "beta_ts"}),
]


def run_config(pair, algo: str, params: dict[str, Any], prompts: list[str], temperature: float, seeds: int,
               max_new_tokens: int) -> dict[str, Any]:
    """Totals of one configuration over prompts x seeds (one short warm-up run first, not counted)."""
    import specviz

    kw = dict(max_new_tokens=max_new_tokens, temperature=temperature, record_top_k=0)
    specviz.decode(pair, algo, prompts[0], seed=0, **{**kw, "max_new_tokens": 8}, **params)
    row = {"new_tokens": 0, "target_calls": 0, "draft_calls": 0, "wall_s": 0.0, "rounds": 0, "drafted": 0,
           "accepted": 0, "outputs": []}
    for prompt in prompts:
        for seed in range(seeds if temperature > 0 else 1):
            start = time.perf_counter()
            trace = specviz.decode(pair, algo, prompt, seed=seed, **kw, **params)
            row["wall_s"] += time.perf_counter() - start
            row["new_tokens"] += trace.metrics["new_tokens"]
            row["target_calls"] += sum(s.target_calls for s in trace.steps)
            row["draft_calls"] += sum(s.draft_calls for s in trace.steps)
            for s in trace.steps:
                row["rounds"] += 1
                row["drafted"] += max(len(s.forest) - 1, 0)  # the forest ends with the produced extra token
                row["accepted"] += sum(1 for c in s.committed if c.kind == "draft")
            row["outputs"].append(trace.output_ids)
    row["tau"] = row["new_tokens"] / row["target_calls"]
    row["mean_drafted"] = row["drafted"] / row["rounds"]
    row["mean_accepted"] = row["accepted"] / row["rounds"]
    row["tokens_per_s"] = row["new_tokens"] / row["wall_s"]
    return row


def benchmark(pair, prompts: list[str], temperatures: list[float], seeds: int, max_new_tokens: int,
              configs=CONFIGS) -> list[dict[str, Any]]:
    rows = []
    for temperature in temperatures:
        base = None
        for label, algo, params in configs:
            row = {"config": label, "temperature": temperature,
                   **run_config(pair, algo, params, prompts, temperature, seeds, max_new_tokens)}
            base = base or (row if algo == "ar" else None)
            row["speedup_vs_ar"] = row["tokens_per_s"] / base["tokens_per_s"] if base else None
            row["same_text_as_ar"] = row["outputs"] == base["outputs"] if base and temperature == 0 else None
            rows.append(row)
            print(f"T={temperature} {label:<16} tau {row['tau']:.2f} target calls {row['target_calls']} "
                  f"wall {row['wall_s']:.2f}s", flush=True)
    return rows


def to_markdown(rows: list[dict[str, Any]], header: str) -> str:
    lines = [header, "", "| T | configuration | tau | target calls | draft calls | drafted / round | "
             "accepted / round | wall s | speed-up vs ar | greedy = ar |", "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|"]
    for r in rows:
        same = "-" if r["same_text_as_ar"] is None else ("yes" if r["same_text_as_ar"] else "NO")
        lines.append(f"| {r['temperature']:g} | {r['config']} | {r['tau']:.2f} | {r['target_calls']} | {r['draft_calls']} | "
                     f"{r['mean_drafted']:.2f} | {r['mean_accepted']:.2f} | {r['wall_s']:.2f} | "
                     f"{r['speedup_vs_ar']:.2f} | {same} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from specviz.cli import add_pair_args, load_pair_from_args
    from specviz.presets import bundled_preset

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_pair_args(p)
    p.add_argument("--early-exit-dir", default=None, help="early-exit head directory (default: the preset's)")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--seeds", type=int, default=3, help="seeds per prompt for sampled runs")
    p.add_argument("--temperatures", type=float, nargs="+", default=[0.0, 0.8])
    p.add_argument("--prompt", action="append", help="a prompt (repeatable); default: the bench's code prompts")
    p.add_argument("--out", default="bench-out")
    args = p.parse_args(argv)
    if not (args.target or args.preset):
        args.preset = bundled_preset().name
    pair = load_pair_from_args(args)
    if pair.early_exit is None:
        from specviz.models.loading import attach_early_exit
        from specviz.presets import get_preset

        head = args.early_exit_dir or (get_preset(args.preset).early_exit if args.preset else None)
        if head is None:
            raise SystemExit("no early-exit head: give --early-exit-dir")
        attach_early_exit(pair, head)
    prompts = args.prompt or DEFAULT_PROMPTS
    rows = benchmark(pair, prompts, args.temperatures, args.seeds, args.max_new_tokens)
    desc = pair.describe()
    header = (f"## EESD controllers: {desc['target']} (exit after layer {desc['early_exit']['exit_layer']}) and "
              f"{desc['draft']} on {desc['device']}, {args.max_new_tokens} new tokens x {len(prompts)} prompts, "
              f"{args.seeds} seeds per prompt when sampled")
    md = to_markdown(rows, header)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "eesd.json"), "w") as fh:
        json.dump({"pair": desc, "settings": vars(args), "rows": rows}, fh, indent=2, default=str)
    with open(os.path.join(args.out, "eesd.md"), "w") as fh:
        fh.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
