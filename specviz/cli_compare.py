"""``python -m specviz compare``: several algorithms on the same prompt and seed, timed as the app's Measure
and ``bench`` time them, with the verdict in words."""

from __future__ import annotations

import argparse
from typing import Callable

from specviz.cli_checks import check_decode_args
from specviz.cli_options import add_decode_args, add_threads_arg, algo_params, decode_kwargs, timed
from specviz.cli_output import write_tokens
from specviz.cli_params import ALGORITHM_NAMES
from specviz.pair_options import add_pair_args
from specviz.trace import RunTrace
from specviz.validation import whole


def add_arguments(cmp_: argparse.ArgumentParser) -> None:
    """``compare``'s options: the pair, the decoding options, ``--algos``, ``--repeats`` and ``--tokens-csv``."""
    add_pair_args(cmp_)
    add_decode_args(cmp_)
    cmp_.add_argument(
        "--algos",
        nargs="+",
        default=["ar", "sd"],
        help="any of %s (default: %%(default)s)" % ", ".join(ALGORITHM_NAMES),
    )
    cmp_.add_argument(
        "--repeats",
        type=whole(1, 100),
        default=3,
        help="timed runs of each algorithm, after one warm-up run of each; tok/s and speedup are "
        "reported as median (min-max). 1: a single cold run, no warm-up",
    )
    cmp_.add_argument(
        "--tokens-csv",
        metavar="PATH",
        help="write every generated token with how it was produced "
        "(kind, drafter, p, q, acceptance probability, draw) as CSV here: the last timed round, "
        "one run per --algos entry",
    )
    add_threads_arg(cmp_)


def main(args: argparse.Namespace, load_pair: Callable) -> int:
    """Time ``args.algos`` on the pair ``load_pair(args)`` loads (after the options are checked), print the
    table, how it was timed and the verdict; write the tokens; warn of a lossless run that is not ``ar``'s."""
    from specviz.decoding import decode

    check_decode_args(args, args.algos)
    pair = load_pair(args)

    def once(algo: str):
        return lambda: decode(pair, algo, args.prompt, **decode_kwargs(args, pair), **algo_params(args, algo))

    # one untimed round first when timing (the first calls pay for allocation and lazy setup), then
    # --repeats rounds, the algorithms interleaved so that drift hits all alike
    timings, conditions = timed(
        args, pair, {i: once(a) for i, a in enumerate(args.algos)}, args.repeats, 1 if args.repeats > 1 else 0
    )
    traces = [timings[i].result for i in range(len(args.algos))]
    base_at = next((i for i, a in enumerate(args.algos) if a == "ar"), None)
    base = None if base_at is None else traces[base_at]
    rates, ups, rows = _compare_rows(traces, timings, base_at, args.repeats > 1)
    _print_table(("algorithm", "tokens", "calls", "tau", "accept", "tok/s", "speedup"), rows)
    if args.repeats > 1:
        print(
            f"tok/s and speedup: median (min-max) over {args.repeats} timed runs of each algorithm, after one "
            "warm-up run of each; runs interleaved (bench.timing, as the app's Measure and bench), speedup: the "
            "ratio of the median rates, its range round by round against ar's run of the same round."
        )
    else:
        print(
            "tok/s and speedup come from one cold run each (--repeats 1, no warm-up): the first run also pays "
            "for warming up, so they say little about speed; see --repeats, or python -m specviz bench."
        )
    print(f"timed on {conditions.sentence()}")
    if all(r is not None for r in rates):
        print("verdict: " + compare_verdict(pair, args.algos, traces, rates, ups, args.threads or conditions.threads))
    if args.tokens_csv:
        write_tokens(traces, args.tokens_csv)
        print(f"tokens of the last timed round's runs written to {args.tokens_csv} (column run: the order of --algos)")
    _compare_outputs(pair, traces, base, args.temperature)
    return 0


def _spread(up, fmt: str, unit: str = "", ranged: bool = True) -> str:
    """``median (lo-hi)`` of a ``timing.Spread``; the median alone unless ``ranged``."""
    mid = format(up.median, fmt) + unit
    return f"{mid} ({format(up.lo, fmt)}-{format(up.hi, fmt)})" if ranged else mid


def compare_verdict(pair, algos: list[str], traces: list[RunTrace], rates: list, ups: list, threads: int | None) -> str:
    """The verdict (``bench.verdict``) on ``compare``'s rows, with the cost model's predictions of each
    run (``bench.costs.predictions``, timed under ``threads``)."""
    from specviz.bench import costs
    from specviz.bench.verdict import VerdictRow, verdict

    try:
        found, why = costs.predictions(pair, {i: [t] for i, t in enumerate(traces)}, threads=threads), ""
    except Exception as exc:  # noqa: BLE001 - the measured verdict stands without the model's
        found, why = {}, f" The cost model could not be timed here ({type(exc).__name__}: {exc})."
    rows = []
    for i, (algo, t, rate, up) in enumerate(zip(algos, traces, rates, ups)):
        p = found.get(i)
        rows.append(
            VerdictRow(
                algo,
                algo,
                rate.median,
                *((up.median, up.lo, up.hi) if up else (None, None, None)),
                *((p.here, p.gpu, p.tau, p.gpu_draft_cost, p.target_ms, p.draft_ms) if p else ()),
            )
        )
    return verdict(rows) + why


def _compare_rows(traces: list[RunTrace], timings, base_at: int | None, ranged: bool) -> tuple[list, list, list]:
    """``compare``'s rates, speed-ups against ``ar`` (the run at ``base_at``, if any) and table rows."""
    from specviz.bench import timing

    base = None if base_at is None else traces[base_at]
    rates, ups, rows = [], [], []
    for i, t in enumerate(traces):
        m = t.metrics
        rate = "-" if m["acceptance_rate"] is None else f"{m['acceptance_rate']:.1%}"
        tokens = len(t.output_ids)
        per_s = timing.rate(timings[i], tokens)
        up = None if base_at is None else timing.speedup(timings[i], timings[base_at], tokens, len(base.output_ids))
        rates.append(per_s)
        ups.append(up)
        rows.append(
            (
                t.algorithm,
                str(m["new_tokens"]),
                str(m["target_calls"]),
                f"{m['tau']:.2f}",
                rate,
                _spread(per_s, ".1f", ranged=ranged) if per_s else "-",
                _spread(up, ".2f", "x", ranged) if up else "-",
            )
        )
    return rates, ups, rows


def _print_table(heads: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """``heads`` and ``rows`` in aligned columns, the first left-aligned."""
    widths = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(heads)]
    for row in (heads, *rows):
        print(" ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))))


def _compare_outputs(pair, traces: list[RunTrace], base: RunTrace | None, temperature: float) -> None:
    """Greedy: a warning for a lossless run whose output is not ``ar``'s; with ``beam`` among the runs,
    each run's target log-probability per token (and, greedy, whether it is beam's text)."""
    beam = next((t for t in traces if t.algorithm == "beam"), None)
    if base is not None and temperature == 0:
        for t in traces:
            if t.algorithm not in ("beam", "dsbd") and t.output_ids != base.output_ids:
                print(f"warning: {t.algorithm} differs from ar greedy output")
    if beam is not None:
        from specviz.bench.run import target_logp

        for t in traces:
            total, n = target_logp(pair, t.prompt_ids, t.output_ids)
            same = "" if temperature != 0 else f"  same text as beam: {t.output_ids == beam.output_ids}"
            print(f"{t.algorithm:<12} target log p / token {total / max(n, 1):.3f}{same}")
