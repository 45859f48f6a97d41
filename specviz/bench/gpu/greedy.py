"""The greedy sections of the GPU check: ``sd``, ``sequoia`` and ``dyntree`` against ``ar``, token for
token, and where a run first leaves ``ar``'s output."""

from __future__ import annotations

from typing import Any

from specviz.bench.gpu.pairs import NOISY, NOISY_QUICK, code_pair, random_pair
from specviz.bench.gpu.plan import ALGOS, QUICK_PARAMS
from specviz.bench.gpu.section import Section, table


def _divergence(pair, prompt_ids: list[int], ref: list[int], out: list[int]) -> dict[str, Any] | None:
    """Where ``out`` first leaves ``ref`` (``ar``'s output): the position, both tokens, and the
    target's top-2 logit gap at that position after ``ar``'s prefix (a gap near 0 is a near tie,
    which rounding can flip)."""
    import torch

    i = next((k for k, (a, b) in enumerate(zip(ref, out)) if a != b), None)
    if i is None:
        if len(ref) == len(out):
            return None
        i = min(len(ref), len(out))
    gap = None
    with torch.inference_mode():
        ids = torch.tensor([prompt_ids + ref[:i]], device=pair.device)
        logits = pair.target(ids).logits[0, -1, : pair.vocab_size].float()
        top = torch.topk(logits, 2).values
        gap = float(top[0] - top[1])
    return {
        "position": i,
        "ar": ref[i] if i < len(ref) else None,
        "other": out[i] if i < len(out) else None,
        "gap": gap,
    }


def greedy_rows(
    s: Section, pair, label: str, prompts: list[Any], new_tokens: int, chat: bool = False, quick: bool = False
) -> tuple[list[list[Any]], int, int, list[dict[str, Any]]]:
    """Greedy ``ar`` and each of ``ALGOS`` on ``prompts``: table rows, runs, equal runs, divergences."""
    from specviz.decoding import decode
    from specviz.models.chat import encode_prompt

    rows, runs, equal, diverged = [], 0, 0, []
    for k, prompt in enumerate(prompts):
        if s.left() < 3:
            s.out(f"- stopped at the section's budget: {label}, prompt {k + 1} and after not run")
            break
        prompt_ids = encode_prompt(pair, prompt, chat)[0]
        ar = decode(pair, "ar", prompt_ids, max_new_tokens=new_tokens, temperature=0, record_top_k=0)
        for algo in ALGOS:
            params = QUICK_PARAMS.get(algo, {}) if quick else {}
            trace = decode(pair, algo, prompt_ids, max_new_tokens=new_tokens, temperature=0, record_top_k=0, **params)
            runs += 1
            d = _divergence(pair, prompt_ids, ar.output_ids, trace.output_ids)
            if d is None:
                equal += 1
                where = "-"
            else:
                d.update(pair=label, prompt=k + 1, algorithm=algo)
                diverged.append(d)
                where = f"position {d['position']}: ar {d['ar']}, {algo} {d['other']}; top-2 logit gap {d['gap']:.3g}"
            rows.append(
                [
                    label,
                    k + 1,
                    algo,
                    len(ar.output_ids),
                    f"{trace.metrics['tau']:.2f}",
                    "yes" if d is None else "**no**",
                    where,
                ]
            )
    return rows, runs, equal, diverged


def section_greedy(s: Section, args, dtype: str) -> None:
    import torch

    from specviz.bench.prompts import PROMPTS

    new_tokens = 16 if args.quick else 48
    s.out(
        f"Greedy (temperature 0) `{'`, `'.join(ALGOS)}` against `ar` on {args.device} in {dtype}, "
        f"{new_tokens} new tokens per prompt, each algorithm at its default parameters"
        + (f" (--quick: {QUICK_PARAMS})" if args.quick else "")
        + ".",
        "",
    )
    rows, runs, equal, diverged = [], 0, 0, []
    noisy_cfg = NOISY_QUICK if args.quick else NOISY
    pair = random_pair("llama", noisy_cfg, None, args.device, dtype)
    gen = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(0, pair.vocab_size, (n,), generator=gen).tolist() for n in ((8,) if args.quick else (8, 24))
    ]
    r = greedy_rows(s, pair, "random llama (noisy-copy draft)", prompts, new_tokens, quick=args.quick)
    rows += r[0]
    runs, equal, diverged = runs + r[1], equal + r[2], diverged + r[3]
    del pair
    if s.left() > 5:
        pair, label, real = code_pair(args.device, dtype, greedy=True)
        prompts = (
            ([PROMPTS["code"][0]] if args.quick else [PROMPTS["code"][0], PROMPTS["prose"][0]])
            if real
            else [torch.randint(0, pair.vocab_size, (12,), generator=gen).tolist()]
        )
        r = greedy_rows(
            s, pair, "code pair" if real else "code-pair-shaped (random)", prompts, new_tokens, quick=args.quick
        )
        s.out(f"- code pair: {label}")
        rows += r[0]
        runs, equal, diverged = runs + r[1], equal + r[2], diverged + r[3]
    else:
        s.out("- stopped at the section's budget: the code pair not run")
    _greedy_report(s, dtype, rows, runs, equal, diverged)


def _greedy_report(s: Section, dtype: str, rows, runs: int, equal: int, diverged) -> None:
    s.out(
        "",
        *table(
            ["pair", "prompt", "algorithm", "tokens", "tau", "= ar", "first divergence"],
            rows,
            "---|---:|---|---:|---:|:---:|---",
        ),
    )
    s.facts.update(runs=runs, equal=equal, divergences=diverged)
    all_equal = runs > 0 and equal == runs
    s.out("", f"greedy equal to ar in {dtype}: {'true' if all_equal else 'false'} ({equal} of {runs} runs)")
    if all_equal:
        s.status, s.note = "pass", f"all {runs} runs equal to ar"
    elif runs == 0:
        s.status, s.note = "error", "no run finished"
    elif dtype == "float32":
        s.status = "fail"
        s.note = (
            f"{runs - equal} of {runs} runs diverged from ar (first at positions "
            f"{', '.join(str(d['position']) for d in diverged)})"
        )
    else:  # bfloat16: a divergence is recorded, neither failed nor hidden
        s.status = "recorded"
        s.note = (
            f"{runs - equal} of {runs} runs diverged from ar, first at positions "
            f"{', '.join(str(d['position']) for d in diverged)} (top-2 logit gaps there: "
            f"{', '.join(format(d['gap'], '.3g') for d in diverged)})"
        )
