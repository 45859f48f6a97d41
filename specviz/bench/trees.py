"""Tree algorithms against chain ``sd`` at the same number of target calls.

``tree_vs_sd`` runs every (algorithm, params) configuration on every prompt and seed for exactly
``steps`` target calls (fewer only if the run ends at EOS or the context limit) and reports tau =
tokens / target calls, so methods are compared per verification call, the quantity a tree trades
draft and verify compute for. Wall time is reported too but is secondary on a CPU (a wide tree costs
a wider target call). Sequoia's one-off calibration is done in a warm-up run before timing.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from specviz.step_state import SequoiaState

DEFAULT_CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("sd", {"gamma": 4}),
    ("sd", {"gamma": 8}),
    ("mcsd", {"k_config": "4x2x2"}),
    ("mcsd", {"k_config": "4x2x2", "replacement": True}),
    ("specinfer", {"k_config": "4x1x1x1"}),
    ("specinfer", {"k_config": "4x1x1x1x1x1x1x1"}),
    ("sequoia", {"size": 16, "depth": 8}),
    ("sequoia", {"size": 32, "depth": 8}),
    ("dyntree", {"nodes": 16, "depth": 6, "topk": 4}),
    ("dyntree", {"nodes": 31, "depth": 7, "topk": 8}),  # sequoia size 32, depth 8 (both count the root)
]


def _label(algorithm: str, params: dict[str, Any]) -> str:
    inner = ", ".join(f"{k}={v}" for k, v in params.items())
    return f"{algorithm}({inner})" if inner else algorithm


def tree_vs_sd(
    pair,
    prompts: list,
    configs: list[tuple[str, dict[str, Any]]] | None = None,
    steps: int = 24,
    seeds: tuple[int, ...] = (0, 1, 2),
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
) -> list[dict[str, Any]]:
    """One row per configuration: tau at ``steps`` target calls (pooled over prompts x seeds), its
    spread over runs, nodes verified per call, draft calls per target call, wall time and
    ``tau_vs_sd`` (tau over that of the first ``sd`` configuration, when there is one)."""
    from specviz.decoding import decode

    configs = configs or DEFAULT_CONFIGS
    rows = []
    for algorithm, params in configs:
        sampling = dict(temperature=temperature, top_k=top_k, top_p=top_p)
        decode(pair, algorithm, prompts[0], max_new_tokens=2, seed=0, **sampling, **params)  # warm-up
        runs = [_run(pair, algorithm, prompt, seed, steps, sampling, params) for prompt in prompts for seed in seeds]
        rows.append(_row(algorithm, params, temperature, runs))
    sd_tau = next((r["tau"] for r in rows if r["algorithm"] == "sd"), None)
    for r in rows:
        r["tau_vs_sd"] = r["tau"] / sd_tau if sd_tau else None
    return rows


def _run(
    pair, algorithm: str, prompt, seed: int, steps: int, sampling: dict[str, Any], params: dict[str, Any]
) -> dict[str, Any]:
    """One run of ``algorithm`` (``sampling``, its ``params``) for at most ``steps`` target
    calls: tokens committed, calls made, draft calls, nodes verified, wall time, and Sequoia's tree
    (its size, depth, expected tokens and acceptance) from its first step, where it builds one."""
    from specviz.decoding import stream

    n_prompt = len(pair.encode(prompt)) if isinstance(prompt, str) else len(prompt)
    budget = min(steps * 64, pair.context_length - n_prompt)
    run = stream(pair, algorithm, prompt, max_new_tokens=budget, seed=seed, **sampling, **params)
    start = time.perf_counter()
    got = made = draft_calls = nodes = 0
    extra: dict[str, Any] = {}
    for step in run:
        got += len(step.committed)
        made += 1
        draft_calls += step.draft_calls
        nodes += step.n_drafted + 1  # + the last committed token, fed with the tree
        if isinstance(step.controller, SequoiaState) and not extra:
            run_info = step.controller.run
            extra = {
                "n": run_info.n,
                "d": run_info.d,
                "expected_tokens": run_info.expected_tokens,
                "acceptance": list(run_info.acceptance[:8]),
            }
        if made >= steps:
            break
    wall = time.perf_counter() - start
    return {"got": got, "made": made, "draft_calls": draft_calls, "nodes": nodes, "wall": wall, "extra": extra}


def _row(algorithm: str, params: dict[str, Any], temperature: float, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A configuration's row from its runs (``_run``), pooled: tau = tokens / target calls, its standard
    error over runs, and Sequoia's tree from the first run that built one."""
    tokens, calls = sum(r["got"] for r in runs), sum(r["made"] for r in runs)
    draft_calls, nodes = sum(r["draft_calls"] for r in runs), sum(r["nodes"] for r in runs)
    wall = 0.0
    for r in runs:
        wall += r["wall"]
    per_run = [r["got"] / r["made"] if r["made"] else 0.0 for r in runs]
    extra = next((r["extra"] for r in runs if r["extra"]), {})
    return {
        "method": _label(algorithm, params),
        "algorithm": algorithm,
        "params": params,
        "temperature": temperature,
        "target_calls": calls,
        "new_tokens": tokens,
        "tau": tokens / calls if calls else 0.0,
        "tau_stderr": statistics.stdev(per_run) / len(per_run) ** 0.5 if len(per_run) > 1 else 0.0,
        "nodes_per_call": nodes / calls if calls else 0.0,
        "draft_calls_per_call": draft_calls / calls if calls else 0.0,
        "wall_s": wall,
        "tokens_per_s": tokens / wall if wall > 0 else 0.0,
        **extra,
    }


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of ``tree_vs_sd`` rows."""
    head = "| method | T | target calls | tau | ± | tau / sd | nodes per call | draft calls per call | tokens/s |"
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        vs = f"{r['tau_vs_sd']:.2f}" if r["tau_vs_sd"] is not None else "—"
        lines.append(
            f"| {r['method']} | {r['temperature']:g} | {r['target_calls']} | {r['tau']:.2f} | "
            f"{r['tau_stderr']:.2f} | {vs} | {r['nodes_per_call']:.1f} | {r['draft_calls_per_call']:.1f} | "
            f"{r['tokens_per_s']:.1f} |"
        )
    return "\n".join(lines)
