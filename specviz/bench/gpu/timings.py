"""The GPU check's timing sections (``bench-code-pair``, ``bench-1b``): t(n) of target and draft, the
one-token calls, the cost model's predicted speed-ups and, on a real pair, timed runs against predicted."""

from __future__ import annotations

from typing import Any

from specviz.bench.gpu.pairs import code_pair
from specviz.bench.gpu.plan import ALGOS
from specviz.bench.gpu.section import Section, table


def _sizes(quick: bool) -> tuple[int, ...]:
    return (1, 2, 4, 8, 16, 32, 64) if quick else tuple(range(1, 65))


def pair_timings(s: Section, pair, quick: bool, prefix: int = 48) -> dict[str, Any]:
    """t(n) of target and draft, the one-token calls and the switch cost, written to ``s``."""
    from specviz.bench import costs

    on_gpu = pair.device.type == "cuda"
    repeats, rounds = (2, 5) if quick else ((10, 50) if on_gpu else (5, 20))
    sizes = _sizes(quick)
    t_t = costs.forward_times(pair.target, sizes, prefix, repeats, pair.vocab_size)
    t_d = costs.forward_times(pair.draft, sizes, prefix, repeats, pair.vocab_size)
    s.out(
        f"t(n): milliseconds of one forward of n new tokens (a chain) after {prefix} cached tokens, "
        f"median of {repeats} round-robin rounds:",
        "",
    )
    for k in range(0, len(sizes), 16):
        chunk = sizes[k : k + 16]
        s.out(
            *table(
                ["n", *map(str, chunk)],
                [["target", *(f"{t_t[n]:.2f}" for n in chunk)], ["draft", *(f"{t_d[n]:.2f}" for n in chunk)]],
                "---|" + "|".join("---:" for _ in chunk),
            ),
            "",
        )
    calls = costs.one_token_calls(pair, prefix, rounds)
    switch = costs.switch_ms(pair, prefix, rounds)
    ceiling = costs.ceiling(t_t, t_d, switch=switch)
    top = max(sizes)
    s.out(
        f"- one-token calls (median of {rounds}): target {calls['target_call']:.3f} ms (stock transformers forward "
        f"{calls['stock_target_call']:.3f} ms), draft {calls['draft_call']:.3f} ms "
        f"({calls['draft_call'] / calls['target_call']:.2f} of a target call), the target's bare matmuls "
        f"{calls['bare_matmul']:.3f} ms",
        f"- verifying {top} tokens costs t({top}) / t(1) = {t_t[top] / t_t[1]:.2f} one-token target calls",
        f"- alternating the models: +{switch['draft_after_target']:.3f} ms / +{switch['target_after_draft']:.3f} ms",
        f"- the cost model's ceiling for chain sd (a draft always right): {ceiling['speedup']:.2f}x at gamma "
        f"{ceiling['gamma']}",
        "",
    )
    alphas, gammas = (0.6, 0.7, 0.8, 0.9), (1, 2, 3, 4, 6, 8)
    rows = []
    for a in alphas:
        cells = [f"{costs.chain_speedup(t_t, t_d, g, (1 - a ** (g + 1)) / (1 - a), switch):.2f}" for g in gammas]
        rows.append([f"{a:.1f}", *cells])
    s.out(
        "The cost model's predicted speed-up of chain sd over ar (Leviathan et al. 2023, Sec. 3.3, priced by the "
        "t(n) above) for a per-token acceptance rate alpha (tau = (1 - alpha^(gamma+1)) / (1 - alpha)):",
        "",
        *table(["alpha \\ gamma", *map(str, gammas)], rows, "---|" + "|".join("---:" for _ in gammas)),
        "",
    )
    s.facts.update(t_target_ms=t_t, t_draft_ms=t_d, one_token_ms=calls, switch_ms=switch, sd_ceiling=ceiling)
    return {"t_target": t_t, "t_draft": t_d, "switch": switch}


def bench_rows(s: Section, pair, prompts: dict[str, list[Any]], quick: bool, timed: dict[str, Any]) -> None:
    """ar / sd / sequoia / dyntree timed on ``prompts`` (greedy, no peers), measured against predicted."""
    from specviz.bench.run import benchmark

    new_tokens, repeat = (16, 1) if quick else (32, 2)
    rows, skipped = benchmark(
        pair,
        prompts,
        ["ar", *ALGOS],
        new_tokens,
        repeat,
        with_peers=False,
        t_target=timed["t_target"],
        t_drafts={"draft": timed["t_draft"]},
        switch=timed["switch"],
    )

    def f(v, spec):
        return "-" if v is None else format(v, spec)

    s.out(
        f"Timed runs: greedy, {new_tokens} new tokens per prompt, median of {repeat} pass(es) after a warm-up, "
        f"{', '.join(f'{len(p)} {c}' for c, p in prompts.items())} prompt(s):",
        "",
        *table(
            ["category", "method", "tau", "tokens/s", "speedup vs ar", "predicted", "greedy = ar"],
            [
                [
                    r["category"],
                    r["method"],
                    f(r["tau"], ".2f"),
                    f(r["tokens_per_s"], ".1f"),
                    f(r["speedup_vs_ar"], ".2f"),
                    f(r["predicted_speedup"], ".2f"),
                    "-" if r["greedy_equal"] is None else ("yes" if r["greedy_equal"] else "NO"),
                ]
                for r in rows
            ],
            "---|---|---:|---:|---:|---:|:---:",
        ),
        "",
    )
    for name, why in skipped.items():
        s.out(f"- skipped {name}: {why}")
    s.facts["rows"] = [
        {k: r[k] for k in ("category", "method", "tau", "speedup_vs_ar", "predicted_speedup", "greedy_equal")}
        for r in rows
    ]


def bench_dtype(args) -> str:
    return args.bench_dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")


def section_bench_code(s: Section, args) -> None:
    from specviz.bench.prompts import select

    dtype = bench_dtype(args)
    pair, label, real = code_pair(args.device, dtype, greedy=False)
    s.out(f"{label}, on {args.device} in {dtype}.", "")
    timed = pair_timings(s, pair, args.quick)
    if not real:
        s.out("- no timed runs: tau between random models means nothing")
    elif s.left() < (10 if args.quick else 20):
        s.out("- timed runs not made: the section's budget is spent")
    else:
        bench_rows(s, pair, select(["code"], 1) if args.quick else select(None, 2), args.quick, timed)
    s.note = (
        f"{'real' if real else 'random, code-pair-shaped'}; {dtype}; "
        + f"ceiling {s.facts['sd_ceiling']['speedup']:.2f}x at gamma {s.facts['sd_ceiling']['gamma']}"
    )


def section_bench_1b(s: Section, args) -> None:
    from specviz.bench.random_pair import RANDOM_PAIRS, random_pair

    dtype = bench_dtype(args)
    name = "tiny" if args.quick else "llama-1b"
    pair = random_pair(name, args.device, dtype)
    target_cfg, draft_cfg = RANDOM_PAIRS[name]
    s.out(
        f"random pair `{name}` (bench.random_pair: a Llama target of {target_cfg['num_hidden_layers']} layers x "
        f"{target_cfg['hidden_size']} and a draft of {draft_cfg['num_hidden_layers']} x {draft_cfg['hidden_size']}, "
        f"vocabulary {target_cfg['vocab_size']}) on {args.device} in {dtype}"
        + ("; --quick: the tiny shapes, not the 1B ones" if args.quick else ""),
        "",
    )
    pair_timings(s, pair, args.quick)
    s.note = (
        f"{name}; {dtype}; ceiling {s.facts['sd_ceiling']['speedup']:.2f}x at gamma {s.facts['sd_ceiling']['gamma']}"
    )
