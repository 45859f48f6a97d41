"""``python -m specviz bench``: every registered algorithm (each with its default parameters) against
Hugging Face ``generate`` plain, assisted and with prompt lookup, on the same pair, prompts and greedy
settings, in one process.

Per prompt category (``bench.prompts``) and method: one warm-up pass over the prompts, then
``--repeat`` timed passes, methods interleaved within each pass so a loaded machine's drift hits all
of them alike; wall time is the median pass with its min and max. Speed is reported as ratios
against ``ar`` measured in the same process, never as absolute limits. Also measured: one-token
call times, the bare matmul floor, t(n) for the cost model (``bench.costs``) and the trace recording
overhead (``bench.overhead``). Writes ``bench.json``, ``bench.md`` and ``bench.html`` (figures) to
``--out``.

Beam algorithms ("Dynamic-Width Speculative Beam Decoding", arXiv:2409.16560): ``beam`` runs with
``--beam-width`` beams; ``dsbd`` runs twice, with the dynamic width rule (``dsbd``: W_S =
``--beam-width``, W_min = 1) and with the width fixed at ``--beam-width`` (``dsbd_fixed``, 2x as many
drafts per layer), whose greedy output must equal ``beam``'s. Every row also reports output quality as
the target's mean log-probability per token of its output (``target_logp``) and whether its greedy
text equals ``beam``'s (``greedy_equal_beam``).
"""

from __future__ import annotations

import argparse
import os
import statistics
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import torch

from specviz.algorithms import ALGORITHMS, get_algorithm
from specviz.bench import costs, timing
from specviz.bench.goals import goals
from specviz.bench.overhead import trace_overhead
from specviz.bench.peers import peer_functions
from specviz.bench.prompts import select
from specviz.bench.report import to_markdown, write_report
from specviz.decoding import decode
from specviz.errors import SpecvizError
from specviz.models.chat import encode_prompt
from specviz.pair_options import chat_on, load_pair_from_args


@dataclass
class Outcome:
    """One method on one prompt: the new ids, forward calls, and the trace for specviz methods."""

    output_ids: list[int]
    target_calls: int
    draft_calls: int
    trace: Any = None


def target_logp(pair, prompt_ids: list[int], output_ids: list[int]) -> tuple[float, int]:
    """The target's total log-probability of ``output_ids`` after ``prompt_ids`` (temperature 1) and
    the number of tokens: the output quality measure of beam decoding."""
    if not output_ids:
        return 0.0, 0
    ids = torch.tensor([prompt_ids + output_ids], device=pair.device)
    with torch.inference_mode():
        logp = torch.log_softmax(pair.target(ids).logits[0, :, : pair.vocab_size].double(), -1)
    rows = torch.arange(len(prompt_ids) - 1, len(prompt_ids) + len(output_ids) - 1, device=pair.device)
    return float(logp[rows, torch.tensor(output_ids, device=pair.device)].sum()), len(output_ids)


SdRows = tuple[tuple[str, dict[str, Any]], ...]


def sd_rows(gammas: tuple[int, ...] = (), controllers: tuple[str, ...] = ()) -> SdRows:
    """Extra ``sd`` rows ``(name, params)``: at each draft length (``sd_g<k>``) and under each draft-length
    controller (``sd_<controller>``, its other settings at their defaults)."""
    return tuple((f"sd_g{g}", {"gamma": g}) for g in gammas) + tuple(
        (f"sd_{c}", {"controller": c}) for c in controllers
    )


def drafter_rows(algos: list[str], drafters: tuple[str, ...]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(row name, algorithm, params)`` of each algorithm that takes a ``drafter`` in each of ``drafters``
    (``sd@model``, ``sd@feature``, ...), beside the rows at its defaults."""
    return [
        (f"{a}@{d}", a, {"drafter": d})
        for a in algos
        for d in drafters
        if any(p.name == "drafter" for p in ALGORITHMS[a].params)
    ]


def algorithm_variants(
    algos: list[str], beam_width: int, extra_sd: SdRows = (), drafters: tuple[str, ...] = ()
) -> list[tuple[str, str, dict[str, Any]]]:
    """``(row name, algorithm, params)``: each algorithm with its defaults; ``beam`` with
    ``beam_width`` beams and ``dsbd`` both dynamic and with the width fixed at ``beam_width``; ``sd``
    also in each of ``extra_sd``'s rows (``sd_rows``)."""
    out = []
    for algo in algos:
        if algo == "sd":
            out += [(name, "sd", dict(params)) for name, params in extra_sd]
        if algo == "beam":
            out.append((algo, algo, {"width": beam_width}))
        elif algo == "dsbd":
            out.append((algo, algo, {"width": beam_width, "min_width": 1}))
            out.append(("dsbd_fixed", algo, {"width": 2 * beam_width, "min_width": beam_width, "dynamic": False}))
        else:
            out.append((algo, algo, {}))
    return out + drafter_rows(algos, drafters)


def _specviz_method(pair, algo: str, max_new_tokens: int, params: dict[str, Any]) -> Callable[[Any], Outcome]:
    def run(prompt: Any) -> Outcome:
        trace = decode(pair, algo, prompt, max_new_tokens=max_new_tokens, temperature=0, **params)
        m = trace.metrics
        return Outcome(trace.output_ids, m["target_calls"], m["draft_calls"], trace)

    return run


def _peer_method(fn, pair, max_new_tokens: int) -> Callable[[Any], Outcome]:
    def run(prompt: Any) -> Outcome:
        res = fn(pair.encode(prompt) if isinstance(prompt, str) else list(prompt), max_new_tokens)
        return Outcome(res.output_ids, res.target_calls, res.draft_calls)

    return run


def methods_for(
    pair,
    algos: list[str],
    max_new_tokens: int,
    gamma: int,
    with_peers: bool,
    beam_width: int = 4,
    extra_sd: SdRows = (),
    drafters: tuple[str, ...] = (),
):
    """``{name: (kind, lossless, fn)}`` for the specviz algorithms and the peers."""
    out: dict[str, tuple[str, bool, Callable[[Any], Outcome]]] = {}
    for name, algo, params in algorithm_variants(algos, beam_width, extra_sd, drafters):
        out[name] = ("specviz", ALGORITHMS[algo].lossless, _specviz_method(pair, algo, max_new_tokens, params))
    if with_peers:
        for name, fn in peer_functions(pair, gamma).items():
            out[name] = ("peer", True, _peer_method(fn, pair, max_new_tokens))
    return out


def benchmark(
    pair,
    prompts: dict[str, list[Any]],
    algos: list[str],
    max_new_tokens: int,
    repeat: int,
    gamma: int = 4,
    with_peers: bool = True,
    t_target: dict[int, float] | None = None,
    t_drafts: dict[str, dict[int, float] | None] | None = None,
    beam_width: int = 4,
    switch: dict[str, float] | None = None,
    extra_sd: SdRows = (),
    drafters: tuple[str, ...] = (),
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Rows (one per method and category) and the methods skipped with why (e.g. an algorithm that
    needs an early-exit head the pair lacks). ``t_target`` and ``t_drafts`` (t(n) per kind of drafter,
    ``AlgorithmSpec.drafter``: ``costs.forward_times``, ``costs.early_exit_times``) give each specviz
    row its ``predicted_speedup`` and ``efficiency``, with ``switch`` (``costs.switch_ms``) for
    the separate draft model."""
    methods = methods_for(pair, algos, max_new_tokens, gamma, with_peers, beam_width, extra_sd, drafters)
    skipped: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for category, plist in prompts.items():
        live = {name: m for name, m in methods.items() if name not in skipped}
        # the shared routine (bench.timing): a warm-up pass (and Sequoia's one-off calibration) that
        # drops a method the pair cannot run, then the timed passes, methods interleaved within each
        timings, _, failed = timing.time_calls(
            {name: partial(_pass, fn, plist) for name, (_, _, fn) in live.items()},
            max(1, repeat),
            device=str(pair.device),
            dtype=str(pair.dtype),
            skip=(SpecvizError,),
        )
        skipped.update({name: str(exc) for name, exc in failed.items()})
        live = {name: m for name, m in live.items() if name in timings}
        rows.extend(_rows(pair, plist, category, live, timings, t_target, t_drafts or {}, switch))
    return rows, skipped


def _pass(fn: Callable[[Any], Outcome], prompts: list[Any]) -> list[Outcome]:
    """One method over a category's prompts: one pass, timed whole."""
    return [fn(p) for p in prompts]


def _rows(pair, prompts, category, live, timings, t_target, t_drafts, switch) -> list[dict[str, Any]]:
    results = {name: t.result for name, t in timings.items()}
    base, beam = results.get("ar"), results.get("beam")
    prompt_ids = [pair.encode(p) if isinstance(p, str) else list(p) for p in prompts]
    out = []
    for name, (kind, lossless, _) in live.items():
        res, times = results[name], timings[name].seconds
        new = sum(len(r.output_ids) for r in res)
        calls = sum(r.target_calls for r in res)
        wall = statistics.median(times)
        traces = [r.trace for r in res if r.trace is not None]
        drafter = costs.drafter_key(traces[0]) if traces else None
        drafted = sum(s.n_drafted for t in traces for s in t.steps)
        accepted = sum(s.n_accepted for t in traces for s in t.steps)
        row = {
            "method": name,
            "category": category,
            "kind": kind,
            "lossless": lossless,
            "new_tokens": new,
            "target_calls": calls,
            "draft_calls": sum(r.draft_calls for r in res),
            "tau": new / calls if calls else None,
            "acceptance_rate": accepted / drafted if traces and drafted else None,
            "wall_s": wall,
            "wall_s_min": min(times),
            "wall_s_max": max(times),
            "tokens_per_s": new / wall if wall else 0.0,
            "tokens_per_s_min": new / max(times) if max(times) else 0.0,
            "tokens_per_s_max": new / min(times) if min(times) else 0.0,
            "greedy_equal": [r.output_ids for r in res] == [r.output_ids for r in base] if base else None,
            "greedy_equal_beam": [r.output_ids for r in res] == [r.output_ids for r in beam] if beam else None,
            "target_logp": _mean_logp(pair, prompt_ids, res),
            "predicted_speedup": (
                costs.predicted_speedup(traces, t_target, t_drafts.get(drafter), switch if drafter == "draft" else None)
                if traces and t_target
                else None
            ),
        }
        out.append(row)
    ar = next((r for r in out if r["method"] == "ar"), None)
    for row in out:
        up = timing.speedup(timings[row["method"]], timings["ar"], row["new_tokens"], ar["new_tokens"]) if ar else None
        row["speedup_vs_ar"] = 1.0 if row is ar else (up.median if up else None)  # the ratio of the median rates
        row["speedup_vs_ar_min"] = 1.0 if row is ar else (up.lo if up else None)  # pass by pass, against ar's
        row["speedup_vs_ar_max"] = 1.0 if row is ar else (up.hi if up else None)  # pass of the same round
        pred = row["predicted_speedup"]
        row["efficiency"] = row["speedup_vs_ar"] / pred if pred and row["speedup_vs_ar"] is not None else None
    return out


def _mean_logp(pair, prompt_ids: list[list[int]], res: list[Outcome]) -> float | None:
    """The target's mean log-probability per generated token over a category's outputs."""
    parts = [target_logp(pair, ids, r.output_ids) for ids, r in zip(prompt_ids, res)]
    tokens = sum(n for _, n in parts)
    return sum(t for t, _ in parts) / tokens if tokens else None


def measure_calls(pair, sizes: tuple[int, ...], repeat: int, rounds: int = 200, prefix: int = 32) -> dict[str, Any]:
    """One-token call times (lean and stock forward, timed round-robin with the bare matmul floor) and
    t(n) of target, draft and, where the pair has one, the early-exit drafter, after ``prefix`` cached
    tokens (the runs' mean context, so attention and the cache's growth cost what they cost there)."""
    reps = max(20 if len(sizes) <= 16 else 8, repeat)
    t_target = costs.forward_times(pair.target, sizes, prefix, repeats=reps, vocab_size=pair.vocab_size)
    t_draft = (
        costs.forward_times(pair.draft, sizes, prefix, repeats=reps, vocab_size=pair.vocab_size)
        if pair.draft is not None
        else None
    )
    t_exit = costs.early_exit_times(pair, sizes, prefix, repeats=reps) if pair.early_exit is not None else None
    t_feature = costs.feature_times(pair, sizes, prefix, repeats=reps) if pair.feature is not None else None
    switch = costs.switch_ms(pair, prefix, rounds=rounds // 2) if pair.draft is not None else None
    ms = costs.one_token_calls(pair, rounds=rounds)
    out = {
        f"{name}_ms": ms.get(name)
        for name in ("target_call", "draft_call", "bare_matmul", "stock_target_call", "stock_draft_call")
    }
    out.update(
        t_target_ms=t_target,
        t_draft_ms=t_draft,
        t_early_exit_ms=t_exit,
        t_feature_ms=t_feature,
        switch_ms=switch,
        t_prefix=prefix,
        threads=torch.get_num_threads(),
    )
    out["feature_call_over_target"] = t_feature[1] / t_target[1] if t_feature else None
    out["target_call_over_bare"] = out["target_call_ms"] / out["bare_matmul_ms"]
    out["sd_ceiling"] = costs.ceiling(t_target, t_draft, switch=switch) if t_draft else None
    out["draft_call_over_target"] = out["draft_call_ms"] / out["target_call_ms"] if t_draft else None
    return out


def run_all(
    pair,
    prompts: dict[str, list[Any]],
    algos: list[str] | None = None,
    max_new_tokens: int = 64,
    repeat: int = 3,
    gamma: int = 4,
    with_peers: bool = True,
    sizes: tuple[int, ...] = costs.FULL_SIZES,
    beam_width: int = 4,
    extra_sd: SdRows = (),
    chat: bool = False,
    drafters: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The whole report as plain data (what ``bench.json`` holds); ``chat`` records that the prompts
    are chat-formatted questions."""
    algos = algos or list(ALGORITHMS)
    load_before = timing.load_average()
    lengths = [len(pair.encode(p) if isinstance(p, str) else p) for plist in prompts.values() for p in plist]
    calls = measure_calls(pair, sizes, repeat, prefix=round(statistics.mean(lengths)) + max_new_tokens // 2)
    rows, skipped = benchmark(
        pair,
        prompts,
        algos,
        max_new_tokens,
        repeat,
        gamma,
        with_peers,
        calls["t_target_ms"],
        {"draft": calls["t_draft_ms"], "early_exit": calls["t_early_exit_ms"], "feature": calls["t_feature_ms"]},
        beam_width,
        calls["switch_ms"],
        tuple(extra_sd),
        tuple(drafters),
    )
    probe = "sd" if "sd" in algos and pair.draft is not None else "ar"
    first = next(iter(prompts.values()))
    over = trace_overhead(pair, probe, first, max_new_tokens, rounds=max(9, repeat))
    report = {
        "pair": pair.describe(),
        "settings": {
            "max_new_tokens": max_new_tokens,
            "repeat": repeat,
            "chat": chat,
            "hf_assisted_gamma": gamma,  # --gamma: HF assisted generation's draft length (sd's is in each row)
            "greedy": True,
            "categories": {c: len(p) for c, p in prompts.items()},
        },
        **calls,
        "trace_overhead": over["trace_overhead"],
        "trace_overhead_algorithm": probe,
        "trace_overhead_detail": over,
        "rows": rows,
        "skipped": skipped,
        "conditions": _conditions(pair, load_before),
    }
    report["goals"] = goals(report)
    return report


def _conditions(pair, load_before: Any) -> dict[str, Any]:
    """The run's timing conditions (threads, device, dtype, CPUs, load average before and now)."""
    return timing.Conditions(
        torch.get_num_threads(),
        str(pair.device),
        str(pair.dtype).removeprefix("torch."),
        timing.cpu_count(),
        load_before,
        timing.load_average(),
    ).as_dict()


def check_args(args: argparse.Namespace) -> None:
    """bench's own options, refused before any model loads or any pass runs: an unknown algorithm,
    controller or prompt category, and an ``--out`` that cannot take the report (``cli.check_out_dir``'s
    rule: the deepest existing part of it is a writable directory)."""
    from specviz.bench.prompts import CHAT_PROMPTS, PROMPTS

    for algo in args.algos or ():
        get_algorithm(algo)  # an unknown name is refused before any model loads
    for controller in args.sd_controllers or ():
        get_algorithm("sd").resolve({"controller": controller})  # so is an unknown controller
    if not args.random_pair:  # random prompts have no categories
        table = {None: {**PROMPTS, **CHAT_PROMPTS}, True: CHAT_PROMPTS, False: PROMPTS}[args.chat]
        unknown = [c for c in args.categories or () if c not in table]
        if unknown:
            raise SpecvizError(
                f"--categories: unknown prompt categories {', '.join(map(repr, unknown))}; known: {', '.join(table)}."
            )
    out = args.out
    if not isinstance(out, str) or not out.strip():
        raise SpecvizError(f"--out must name a directory to write bench.json, bench.md and bench.html to, got {out!r}.")
    path = os.path.abspath(out)
    if os.path.exists(path) and not os.path.isdir(path):
        raise SpecvizError(
            f"--out {out}: a file is there; it must name a directory for bench.json, bench.md and bench.html."
        )
    existing = path
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise SpecvizError(f"--out {out}: the directory {existing} does not exist or is not writable.")


def main(args: argparse.Namespace) -> int:
    check_args(args)
    per_cat, new_tokens, repeat, sizes = args.prompts_per_category, args.max_new_tokens, args.repeat, costs.FULL_SIZES
    if args.quick:
        per_cat, new_tokens, repeat, sizes = per_cat or 2, min(new_tokens, 32), 1, costs.QUICK_SIZES
    if args.sizes:
        sizes = tuple(sorted(set(args.sizes)))
    chat = False
    if args.random_pair:
        from specviz.bench.random_pair import random_pair, random_prompts

        pair = random_pair(args.random_pair, args.device, args.dtype)
        prompts = random_prompts(pair, count=per_cat or 4)
    else:
        pair = load_pair_from_args(args)
        chat = chat_on(args, pair)
        prompts = select(args.categories, per_cat, chat)
        if chat:  # token ids of the chat-formatted questions, the same for specviz and the peers
            prompts = {c: [encode_prompt(pair, p, chat=True)[0] for p in plist] for c, plist in prompts.items()}
    with timing.torch_threads(args.threads):  # the whole run, restored after it
        report = run_all(
            pair,
            prompts,
            args.algos,
            new_tokens,
            repeat,
            args.gamma,
            not args.no_hf,
            sizes,
            args.beam_width,
            sd_rows(tuple(args.sd_gammas or ()), tuple(args.sd_controllers or ())),
            chat,
            tuple(args.drafters or ()),
        )
    try:
        write_report(report, args.out)
    except OSError as exc:  # checked before the run (check_args), so the disk or the directory changed since
        where = exc.filename or args.out
        raise SpecvizError(f"--out {args.out}: could not write {where} ({exc.strerror or exc}).") from exc
    print(to_markdown(report))
    print(f"written: {args.out}/bench.json, bench.md, bench.html")
    return 0
