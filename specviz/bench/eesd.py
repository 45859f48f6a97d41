"""``python -m specviz.bench.eesd``: EESD's draft-length controllers on one pair (EESD, Liu et al.
2024, arXiv 2406.03853, Fig. 3 and Table 5: Thompson sampling against fixed draft lengths).

Runs ``eesd`` with ``beta_ts``, ``cali_ts`` and ``fixed`` K = 3, 5, 10, and ``sd`` with its static
``gamma`` and with ``beta_ts``, plus ``ar`` for the wall-time baseline, on the same prompts, greedy
and sampled. Sampled runs average over ``--seeds`` seeds per prompt. Reports per configuration tau
(committed tokens per target call), target and draft calls, mean drafted and accepted tokens per
round, wall seconds and the speed-up against ``ar`` measured in the same process. Writes
``eesd.json`` and ``eesd.md`` to ``--out``. Configurations run round-robin (see ``benchmark``).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any

from specviz.bench.prompts import select
from specviz.validation import Parser, temperature_text, whole

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


def _decode(
    pair, algo: str, params: dict[str, Any], prompt: str, temperature: float, seed: int, max_new_tokens: int
) -> tuple[float, Any]:
    from specviz.decoding import decode

    start = time.perf_counter()
    trace = decode(
        pair, algo, prompt, seed=seed, max_new_tokens=max_new_tokens, temperature=temperature, record_top_k=0, **params
    )
    return time.perf_counter() - start, trace


def benchmark(
    pair,
    prompts: list[str],
    temperatures: list[float],
    seeds: int,
    max_new_tokens: int,
    repeats: int = 3,
    configs=CONFIGS,
) -> list[dict[str, Any]]:
    """One row per (temperature, configuration), totals over prompts x seeds. Configurations are run
    round-robin (every configuration once per pass, ``repeats`` passes, median wall time per run), so a
    load that changes during the benchmark hits them all alike. One short warm-up run each first."""
    for _, algo, params in configs:
        _decode(pair, algo, params, prompts[0], 0.0, 0, 8)
    rows = []
    for temperature in temperatures:
        runs = [(prompt, seed) for prompt in prompts for seed in range(seeds if temperature > 0 else 1)]
        walls: dict[tuple[str, int], list[float]] = {}
        traces: dict[tuple[str, int], Any] = {}
        for _ in range(repeats):
            for r, (prompt, seed) in enumerate(runs):
                for label, algo, params in configs:
                    wall, traces[label, r] = _decode(pair, algo, params, prompt, temperature, seed, max_new_tokens)
                    walls.setdefault((label, r), []).append(wall)
        base = None
        for label, algo, _ in configs:
            ts = [traces[label, r] for r in range(len(runs))]
            steps = [s for t in ts for s in t.steps]
            row = {
                "config": label,
                "temperature": temperature,
                "new_tokens": sum(t.metrics["new_tokens"] for t in ts),
                "target_calls": sum(s.target_calls for s in steps),
                "draft_calls": sum(s.draft_calls for s in steps),
                "wall_s": sum(statistics.median(walls[label, r]) for r in range(len(runs))),
                "mean_drafted": sum(max(len(s.forest) - 1, 0) for s in steps) / len(steps),
                "mean_accepted": sum(sum(c.kind == "draft" for c in s.committed) for s in steps) / len(steps),
                "outputs": [t.output_ids for t in ts],
            }
            row["tau"] = row["new_tokens"] / row["target_calls"]
            row["tokens_per_s"] = row["new_tokens"] / row["wall_s"]
            base = base or (row if algo == "ar" else None)
            row["speedup_vs_ar"] = row["tokens_per_s"] / base["tokens_per_s"] if base else None
            row["same_text_as_ar"] = row["outputs"] == base["outputs"] if base and temperature == 0 else None
            rows.append(row)
            print(
                f"T={temperature} {label:<16} tau {row['tau']:.2f} target calls {row['target_calls']} "
                f"wall {row['wall_s']:.2f}s",
                flush=True,
            )
    return rows


def to_markdown(rows: list[dict[str, Any]], header: str) -> str:
    lines = [
        header,
        "",
        "| T | configuration | tau | target calls | draft calls | drafted / round | "
        "accepted / round | wall s | speed-up vs ar | greedy = ar |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        same = "-" if r["same_text_as_ar"] is None else ("yes" if r["same_text_as_ar"] else "NO")
        lines.append(
            f"| {r['temperature']:g} | {r['config']} | {r['tau']:.2f} | {r['target_calls']} | {r['draft_calls']} | "
            f"{r['mean_drafted']:.2f} | {r['mean_accepted']:.2f} | {r['wall_s']:.2f} | "
            f"{r['speedup_vs_ar']:.2f} | {same} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from specviz.pair_options import add_pair_args, load_pair_from_args
    from specviz.presets import bundled_preset

    p = Parser(prog="python -m specviz.bench.eesd", description=__doc__.splitlines()[0])
    add_pair_args(p)
    p.add_argument("--max-new-tokens", type=whole(1), default=128)
    p.add_argument("--seeds", type=whole(1), default=3, help="seeds per prompt for sampled runs")
    p.add_argument(
        "--repeats", type=whole(1), default=3, help="round-robin passes; the median wall time of each run counts"
    )
    p.add_argument("--temperatures", type=temperature_text, nargs="+", default=[0.0, 0.8])
    p.add_argument("--prompt", action="append", help="a prompt (repeatable); default: the bench's code prompts")
    p.add_argument("--out", default="bench-out")
    args = p.parse_args(argv)
    if not (args.target or args.preset):
        args.preset = bundled_preset().name
    pair = load_pair_from_args(args)
    if pair.early_exit is None:
        raise SystemExit("eesd needs an early-exit head: give --early-exit DIR (the bundled preset has one)")
    prompts = args.prompt or select(["code"])["code"]
    rows = benchmark(pair, prompts, args.temperatures, args.seeds, args.max_new_tokens, args.repeats)
    desc = pair.describe()
    header = (
        f"## EESD controllers: {desc['target']} (exit after layer {desc['early_exit']['exit_layer']}) and "
        f"{desc['draft']} on {desc['device']}, {args.max_new_tokens} new tokens x {len(prompts)} prompts, "
        f"{args.seeds} seeds per prompt when sampled, median of {args.repeats} round-robin passes"
    )
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
