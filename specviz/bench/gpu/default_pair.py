"""The GPU check's ``default-pair`` section: the default pair's greedy equality and timings, when its
converted checkpoint is in the specviz cache."""

from __future__ import annotations

import os

from specviz.bench.gpu.greedy import greedy_rows
from specviz.bench.gpu.pairs import default_pair_source
from specviz.bench.gpu.plan import REPO_ROOT
from specviz.bench.gpu.section import Section, table
from specviz.bench.gpu.timings import bench_dtype, bench_rows, pair_timings


def section_default_pair(s: Section, args) -> None:
    """The default pair, when its converted checkpoint and its draft are here: greedy against ``ar``
    (float32; with bfloat16 unless ``--quick``), then its timings (not with ``--quick``)."""
    source, draft, why = default_pair_source()
    if source is None or draft is None:
        s.status = "skipped"
        s.note = why if source is None else "the default pair's draft (assets/smollm2/draft) is absent"
        s.out(f"- skipped: {s.note}")
        return
    s.out(f"- {why}; draft {os.path.relpath(draft, REPO_ROOT)}", "")
    dtypes = ("float32",) if args.quick else ("float32", "bfloat16")
    statuses = [status for dtype in dtypes if (status := _greedy(s, args, source, draft, dtype)) is not None]
    _timed(s, args, source, draft)
    s.status = "fail" if "fail" in statuses else ("recorded" if "recorded" in statuses or not statuses else "pass")
    g = [
        f"{d}: {s.facts[f'greedy_{d}']['equal']}/{s.facts[f'greedy_{d}']['runs']} equal"
        for d in ("float32", "bfloat16")
        if f"greedy_{d}" in s.facts
    ]
    s.note = "; ".join(g) or "greedy not run"


def _greedy(s: Section, args, source: str, draft: str, dtype: str) -> str | None:
    """The default pair in ``dtype``, greedy against ``ar`` on one or two chat questions, written to ``s``:
    ``pass``, ``fail`` (float32) or ``recorded`` (bfloat16); None when the section's budget is spent."""
    from specviz.bench.prompts import select
    from specviz.models.loading import load_pair

    if s.left() < 10:
        s.out(f"- greedy in {dtype} not run: the section's budget is spent")
        return None
    questions = [q for qs in select(None, 1, chat=True).values() for q in qs][: 1 if args.quick else 2]
    new_tokens = 8 if args.quick else 32
    pair = load_pair(source, draft, device=args.device, dtype=dtype)
    rows, runs, equal, diverged = greedy_rows(
        s, pair, f"default pair, {dtype}", questions, new_tokens, chat=True, quick=args.quick
    )
    s.out(
        f"Greedy against ar in {dtype}, {new_tokens} new tokens per chat question:",
        "",
        *table(
            ["pair", "question", "algorithm", "tokens", "tau", "= ar", "first divergence"],
            rows,
            "---|---:|---|---:|---:|:---:|---",
        ),
        "",
        f"greedy equal to ar in {dtype}: {'true' if runs and equal == runs else 'false'} ({equal} of {runs} runs)",
        "",
    )
    s.facts[f"greedy_{dtype}"] = {"runs": runs, "equal": equal, "divergences": diverged}
    return "pass" if runs and equal == runs else ("fail" if dtype == "float32" else "recorded")


def _timed(s: Section, args, source: str, draft: str) -> None:
    """The default pair's timings and timed runs on three chat questions, in the benchmark dtype, written
    to ``s``; not with ``--quick`` (a 135M target on a CPU: its timings take minutes) nor past the budget."""
    from specviz.bench.prompts import select
    from specviz.models.chat import encode_prompt
    from specviz.models.loading import load_pair

    dtype = bench_dtype(args)
    if args.quick:  # a 135M target on a CPU: its timings take minutes
        s.out("- --quick: bfloat16 and the timings not run on the default pair")
    elif s.left() > 30:
        pair = load_pair(source, draft, device=args.device, dtype=dtype)
        s.out(f"Timings in {dtype}:", "")
        timed = pair_timings(s, pair, args.quick, prefix=64)
        if s.left() > 20:
            chosen = select(["facts", "code", "arithmetic"], 1, chat=True)
            prompts = {c: [encode_prompt(pair, q, chat=True)[0] for q in qs] for c, qs in chosen.items()}
            bench_rows(s, pair, prompts, args.quick, timed)
        else:
            s.out("- timed runs not made: the section's budget is spent")
    else:
        s.out("- timings not made: the section's budget is spent")
