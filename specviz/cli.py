"""``python -m specviz run|compare|algorithms|bench|train|theory``: the decoding core from a terminal.

Only the command given is built: its module and the model stack (torch, transformers, the algorithms)
are imported when a command needs them, so ``python -m specviz --help`` and a mistyped command answer
at once (issue #22 point 6)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any, Iterable

from specviz.cli_params import ALGORITHM_NAMES
from specviz.errors import SpecvizError
from specviz.pair_options import add_pair_args, chat_on, load_pair_from_args
from specviz.trace import RunTrace
from specviz.validation import Parser, real, true_or_false, whole, whole_text

COLORS = {"draft": "\033[32m", "resampled": "\033[33m", "bonus": "\033[36m", "rejected": "\033[31;9m"}
RESET = "\033[0m"
PLAIN = {"draft": "{}", "resampled": "[{}]", "bonus": "{{{}}}", "rejected": "~~{}~~"}


def render_text(trace: RunTrace, color: bool = True) -> str:
    """The generated text with every token marked by how it was produced; rejected drafts shown
    (struck through) where they were tried. Plain markers: ``[resampled]``, ``{bonus}``, ``~~rejected~~``."""

    def mark(text: str, kind: str) -> str:
        return f"{COLORS[kind]}{text}{RESET}" if color else PLAIN[kind].format(text)

    parts = [trace.prompt_text]
    for step in trace.steps:
        rejected = [n for n in step.forest if n.status == "rejected"]
        for tok in step.committed:
            if tok.kind == "resampled":
                parts.extend(mark(n.token_text, "rejected") for n in rejected)
            parts.append(mark(tok.text, tok.kind))
    return "".join(parts)


def summary_line(trace: RunTrace) -> str:
    m = trace.metrics
    rate = "n/a" if m.get("acceptance_rate") is None else f"{m['acceptance_rate']:.1%}"
    kind = (trace.drafter or {}).get("kind")
    by = {"feature": " (feature head)", "draft_model": " (draft model)"}.get(kind, "") if kind else ""
    return (
        f"{trace.algorithm}{by}: {m['new_tokens']} tokens, {m['target_calls']} target calls, "
        f"{m['draft_calls']} draft calls, tau {m['tau']:.2f}, acceptance rate {rate}, "
        f"{m['wall_time_s']:.2f} s, {m['tokens_per_s']:.1f} tokens/s ({trace.finish_reason})"
    )


def _add_decode_args(p: argparse.ArgumentParser) -> None:
    """The decoding options (their defaults: ``specviz.defaults``, as ``decode``'s and the app's) and one
    flag per algorithm parameter, from ``cli_params`` (plain data: no algorithm, no torch imported)."""
    from specviz import defaults
    from specviz.cli_params import PARAMS, default_text

    p.add_argument("--prompt", required=True)
    p.add_argument("--max-new-tokens", type=whole(), default=defaults.MAX_NEW_TOKENS, help="(default: %(default)s)")
    p.add_argument(
        "--temperature", type=real(), default=defaults.TEMPERATURE, help="0 means greedy (default: %(default)s)"
    )
    p.add_argument("--top-p", type=real(), default=defaults.TOP_P, help="1 disables it (default: %(default)s)")
    p.add_argument("--top-k", type=whole(), default=defaults.TOP_K, help="0 disables it (default: %(default)s)")
    p.add_argument("--seed", type=whole(), default=defaults.SEED, help="(default: %(default)s)")
    for name, kind, help_ in PARAMS:
        flag = "--" + name.replace("_", "-")
        default = default_text(name)  # each algorithm's own default (None here: the algorithm's is used)
        if kind == "bool":
            p.add_argument(flag, type=true_or_false, default=None, help=f"{help_} (true/false) {default}")
        else:
            conv = {"int": whole(), "float": real()}.get(kind, str)
            p.add_argument(flag, type=conv, default=None, help=f"{help_} {default}")


def _algo_params(args: argparse.Namespace, algo: str) -> dict[str, Any]:
    from specviz.algorithms import get_algorithm

    names = {prm.name for prm in get_algorithm(algo).params}
    return {k: v for k, v in vars(args).items() if k in names and v is not None}


def _decode_kwargs(args: argparse.Namespace, pair) -> dict[str, Any]:
    return dict(
        max_new_tokens=args.max_new_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        top_k=args.top_k,
        seed=args.seed,
        chat=chat_on(args, pair),
    )


def check_decode_args(args: argparse.Namespace, algorithms: list[str]) -> None:
    """Refuse bad decoding options before any model is loaded: the same checks as ``decode``
    (``decoding.check_request``) for each algorithm, and ``--out``'s directory."""
    from specviz.algorithms import ALGORITHMS, get_algorithm
    from specviz.decoding import check_request

    given = {
        prm.name for spec in ALGORITHMS.values() for prm in spec.params if getattr(args, prm.name, None) is not None
    }
    taken = {prm.name for algo in algorithms for prm in get_algorithm(algo).params}
    if given - taken:
        flags = ", ".join("--" + n.replace("_", "-") for n in sorted(given - taken))
        raise SpecvizError(f"{flags}: not a parameter of {', '.join(algorithms)} (see python -m specviz algorithms).")
    for algo in algorithms:
        check_request(
            algo,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
            top_p=args.top_p,
            top_k=args.top_k,
            seed=args.seed,
            **_algo_params(args, algo),
        )
    check_pair_limits(args, args.max_new_tokens)
    for dest, flag, what in (("out", "--out", "the trace"), ("tokens_csv", "--tokens-csv", "the tokens")):
        out = getattr(args, dest, None)
        if out is None:
            continue
        folder = os.path.dirname(os.path.abspath(out))
        if not out.strip() or os.path.isdir(out):
            raise SpecvizError(f"{flag} must name a file to write {what} to, got {out!r}.")
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            raise SpecvizError(f"{flag} {out}: the directory {folder} does not exist or is not writable.")


CONTEXT_KEYS = ("max_position_embeddings", "n_positions")  # what ``loading._context_length`` reads first


def _config_context(ref: str | None) -> int | None:
    """The context length a model's ``config.json`` states, read without loading the model: a local
    directory's, a hub model's already in the local Hugging Face cache (no network), or a packaged
    checkpoint's cached conversion; None where it cannot be read here (the load checks it then)."""
    if not isinstance(ref, str) or not ref.strip():
        return None
    import json

    try:
        if os.path.isdir(ref):
            path: str | None = os.path.join(ref, "config.json")
        elif ref.startswith("package:"):
            import hashlib

            from specviz.models import packaged

            gguf = packaged.PackagedFile.parse(ref).locate()  # as convert_packaged names its cache entry
            source = {"ref": ref, **packaged._source_key(gguf)}
            key = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()[:12]
            name = packaged.PackagedFile.parse(ref).name
            path = str(packaged.cache_root() / "converted" / f"{name}-{key}" / "config.json")
        else:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(ref, "config.json")
            path = found if isinstance(found, str) else None
        if not path or not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except Exception:  # noqa: BLE001 - anything unreadable is left to the load, which says what is wrong
        return None
    for key in CONTEXT_KEYS:
        value = config.get(key) if isinstance(config, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _pair_refs(args: argparse.Namespace) -> list[str]:
    """The target and draft the pair options name (``--target``/``--draft``, else the preset's)."""
    if getattr(args, "target", None):
        return [args.target, getattr(args, "draft", None)]
    try:
        from specviz.presets import default_preset, get_preset

        preset = get_preset(args.preset) if getattr(args, "preset", None) else default_preset()
        return [preset.target_ref(), preset.draft]
    except Exception:  # noqa: BLE001 - an unknown or missing preset is refused by the load, in its words
        return []


def check_pair_limits(args: argparse.Namespace, max_new_tokens: int | None) -> None:
    """What the pair options and ``max_new_tokens`` must satisfy, checked before any model loads: the
    options agree (``pair_options.check_pair_args``), ``--early-exit`` is a directory or a layer
    number, ``--prompt`` is not empty, and ``max_new_tokens`` plus at least one prompt token fit the
    context the models' configs state (read from the files, ``_config_context``)."""
    from specviz.pair_options import check_pair_args

    check_pair_args(args)
    early_exit = getattr(args, "early_exit", None)
    if isinstance(early_exit, str) and whole_text(early_exit) is None and not os.path.isdir(early_exit):
        raise SpecvizError(
            f"--early-exit {early_exit}: not a head directory (none is there) nor an exit layer number N."
        )
    prompt = getattr(args, "prompt", None)
    if isinstance(prompt, str) and not prompt.strip():
        raise SpecvizError("--prompt is empty: give some text to continue.")
    if max_new_tokens is None:
        return
    known = [(context, ref) for ref in _pair_refs(args) if (context := _config_context(ref)) is not None]
    if known:
        context, ref = min(known)
        if max_new_tokens >= context:
            raise SpecvizError(
                f"--max-new-tokens {max_new_tokens}: the models' context is {context} tokens ({ref}'s "
                f"config) and the prompt takes at least one, so at most {context - 1} new tokens fit."
            )


def check_out_dir(out: str, flag: str = "--out", what: str = "the report") -> None:
    """A directory option (``bench --out``, ``theory --figures``), checked before any work: it names a
    directory or none yet, and the deepest part of it that exists is a directory this user can write to
    (the rest is created)."""
    if not isinstance(out, str) or not out.strip():
        raise SpecvizError(f"{flag} must name a directory to write {what} to, got {out!r}.")
    path = os.path.abspath(out)
    if os.path.exists(path) and not os.path.isdir(path):
        raise SpecvizError(f"{flag} {out}: a file is there; it must name a directory to write {what} to.")
    existing = path
    while not os.path.exists(existing) and os.path.dirname(existing) != existing:
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing) or not os.access(existing, os.W_OK | os.X_OK):
        raise SpecvizError(f"{flag} {out}: the directory {existing} does not exist or is not writable.")


def write_text(text: str, out: str, flag: str = "--out", what: str = "the trace") -> None:
    """Write ``text`` to ``out`` as UTF-8, exactly (no newline translation); a failure names ``flag``."""
    try:
        with open(out, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as exc:
        raise SpecvizError(f"{flag} {out}: could not write {what} ({exc.strerror or exc}).") from exc


def write_trace(trace: RunTrace, out: str) -> None:
    """The trace's JSON to ``out``, gzip-compressed when the name ends in ``.gz`` (``specviz.trace_io``)."""
    from specviz import trace_io

    if not trace_io.is_gzip_name(out):
        write_text(trace.to_json(), out)
        return
    try:
        trace_io.save_trace(trace, out, compress=True)
    except OSError as exc:
        raise SpecvizError(f"--out {out}: could not write the trace ({exc.strerror or exc}).") from exc


def write_tokens(traces: list[RunTrace], out: str) -> None:
    """``export_tokens.tokens_csv`` of ``traces`` to ``out`` (``--tokens-csv``)."""
    from specviz.export_tokens import tokens_csv

    write_text(tokens_csv(*traces), out, "--tokens-csv", "the tokens")


def _timed(args: argparse.Namespace, pair, calls: dict[int, Any], repeats: int, warmup: int):
    """``calls`` timed by the routine Measure and bench share (``bench.timing.rounds``) under
    ``--threads``: their ``Timing``s and the ``Conditions``."""
    from specviz.bench import timing

    timings, conditions, _ = timing.time_calls(
        calls, repeats, warmup=warmup, threads=args.threads, device=str(pair.device), dtype=str(pair.dtype)
    )
    return timings, conditions


def cmd_run(args: argparse.Namespace) -> int:
    from specviz.decoding import decode

    check_decode_args(args, [args.algo])
    pair = load_pair_from_args(args)
    call = {
        0: lambda: decode(
            pair,
            args.algo,
            args.prompt,
            **_decode_kwargs(args, pair),
            record_lens=args.record_lens,
            **_algo_params(args, args.algo),
        )
    }
    timings, conditions = _timed(args, pair, call, 1, 0)
    trace = timings[0].result
    print(render_text(trace, color=not args.no_color and sys.stdout.isatty() or args.color))
    print(summary_line(trace))
    print(f"ran on {conditions.sentence()}")
    if args.out:
        write_trace(trace, args.out)
        print(f"trace written to {args.out}")
    if args.tokens_csv:
        write_tokens([trace], args.tokens_csv)
        print(f"tokens written to {args.tokens_csv}")
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


def cmd_compare(args: argparse.Namespace) -> int:
    from specviz.decoding import decode

    check_decode_args(args, args.algos)
    pair = load_pair_from_args(args)

    def once(algo: str):
        return lambda: decode(pair, algo, args.prompt, **_decode_kwargs(args, pair), **_algo_params(args, algo))

    # one untimed round first when timing (the first calls pay for allocation and lazy setup), then
    # --repeats rounds, the algorithms interleaved so that drift hits all alike
    timings, conditions = _timed(
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


def cmd_algorithms(_: argparse.Namespace) -> int:
    from specviz.algorithms import ALGORITHMS

    for spec in ALGORITHMS.values():
        params = ", ".join(f"{p.name}={p.default!r}" for p in spec.params) or "-"
        tag = "lossless" if spec.lossless else "lossy"
        print(f"{spec.name:<10} {tag:<8} {spec.description}\n{'':<19}params: {params}\n{'':<19}paper: {spec.paper}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from specviz.bench.run import check_args
    from specviz.bench.run import main as bench_main

    check_args(args)  # bench's own options (--out, --categories, --algos, --sd-controllers)
    if not args.random_pair:  # a random pair is built, not loaded: no pair options to check
        check_pair_limits(args, min(args.max_new_tokens, 32) if args.quick else args.max_new_tokens)
    return bench_main(args)


def cmd_theory(args: argparse.Namespace) -> int:
    from specviz.theory.cli import main as theory_main

    check_out_dir(args.figures, "--figures", "the figures")
    try:
        return theory_main(args)
    except OSError as exc:  # the checks above passed but writing did not (a full disk, a special filesystem)
        where = exc.filename or args.figures
        raise SpecvizError(f"--figures {args.figures}: could not write {where} ({exc.strerror or exc}).") from exc


def _add_threads_arg(p: argparse.ArgumentParser) -> None:
    from specviz.bench.timing import cpu_count, threads_arg

    p.add_argument(
        "--threads",
        type=threads_arg,
        default=None,
        help=f"torch intra-op threads, 1 to {cpu_count()} (default: torch's own choice, usually one per "
        "core; the app gives each run cores // concurrent runs); the result states the number",
    )


def _build_run(run: argparse.ArgumentParser) -> None:
    add_pair_args(run)
    _add_decode_args(run)
    run.add_argument("--algo", default="sd", help="one of %s (default: %%(default)s)" % ", ".join(ALGORITHM_NAMES))
    run.add_argument(
        "--out",
        help="write the trace JSON here; gzip-compressed when the name ends in .gz "
        "(x.json.gz: what the app's replay also reads, for long runs)",
    )
    run.add_argument(
        "--tokens-csv",
        metavar="PATH",
        help="write every generated token with how it was produced "
        "(kind, drafter, p, q, acceptance probability, draw) as CSV here",
    )
    run.add_argument(
        "--record-lens",
        action="store_true",
        help="record each step's logit lens in the trace (what every target layer predicts through the "
        "target's own head, from the verify call; the app's Layers view draws it on replay)",
    )
    run.add_argument("--no-color", action="store_true", help="plain markers instead of ANSI colours")
    run.add_argument("--color", action="store_true", help="force ANSI colours")
    _add_threads_arg(run)
    run.set_defaults(fn=cmd_run, flags=option_names(run, algorithm="--algo"))


def _build_compare(cmp_: argparse.ArgumentParser) -> None:
    add_pair_args(cmp_)
    _add_decode_args(cmp_)
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
    _add_threads_arg(cmp_)
    cmp_.set_defaults(fn=cmd_compare, flags=option_names(cmp_, algorithm="--algos"))


def _build_algorithms(p: argparse.ArgumentParser) -> None:
    p.set_defaults(fn=cmd_algorithms)


def _build_bench(bench: argparse.ArgumentParser) -> None:
    from specviz.bench.args import add_arguments

    add_arguments(bench)
    bench.set_defaults(fn=cmd_bench, flags=option_names(bench, algorithm="--algos"))


def _build_theory(theory: argparse.ArgumentParser) -> None:
    from specviz.theory.cli import add_arguments as theory_arguments

    theory_arguments(theory)
    theory.set_defaults(fn=cmd_theory, flags=option_names(theory))


def cmd_papers(args: argparse.Namespace) -> int:
    from specviz.papers.cli import main as papers_main

    check_out_dir(args.out, "--out", "the report")
    return papers_main(args)


def _build_papers(p: argparse.ArgumentParser) -> None:
    from specviz.papers.cli import add_arguments as papers_arguments

    papers_arguments(p)
    p.set_defaults(fn=cmd_papers, flags=option_names(p))


# name -> (help, what builds its options); ``train`` is handed to specviz.train.cli whole (see ``main``)
COMMANDS = {
    "run": ("decode one prompt with one algorithm and print the marked text", _build_run),
    "compare": ("several algorithms on the same prompt and seed", _build_compare),
    "algorithms": ("list the registered algorithms", _build_algorithms),
    "bench": ("benchmark algorithms and Hugging Face assisted generation", _build_bench),
    "theory": ("rerun the theory paper's simulations and write its figures", _build_theory),
    "papers": ("each paper's headline claims rerun on the closest setting, as Markdown and JSON", _build_papers),
    "train": ("train the bundled pair (see python -m specviz train --help)", None),
}


def build_parser(commands: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser. ``commands``: the subcommands whose options are built (their modules
    imported); the others are only named, with their help. ``None``: all of them."""
    parser = Parser(prog="python -m specviz", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_, build) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, add_help=build is not None)
        if build is not None and (commands is None or name in commands):
            build(p)
    return parser


def option_names(parser: argparse.ArgumentParser, **aliases: str) -> dict[str, str]:
    """How this command names each parameter an error may be about: every option's Python name (its
    dest, ``top_p``) -> the flag a user types (``--top-p``), plus ``aliases`` for parameters the
    command names otherwise (``algorithm="--algos"``)."""
    names = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if longs and action.dest not in (argparse.SUPPRESS, "help"):
            names.setdefault(action.dest, longs[0])
    return {**names, **aliases}


_QUOTED = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""")
_PY_NAME = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w-])")


def error_line(exc: SpecvizError, flags: dict[str, str]) -> str:
    """``exc``'s message on one line, each parameter named by its flag: the parameter a refusal is
    about (``SpecvizError.param``, in the words its message opens with: "top_p (1 disables it) must
    be" -> "--top-p (1 disables it) must be", "sd: parameter 'gamma'" -> "sd: parameter --gamma"),
    and any other option named by its Python name (``max_new_tokens``) outside quoted values."""
    text = " ".join(str(exc).split())
    param, subject = exc.param, " ".join((exc.subject or "").split())
    head = ""
    if param in flags and subject and text.startswith(subject):
        named = re.compile(rf"'{re.escape(param)}'|(?<![\w-]){re.escape(param)}(?![\w-])")
        head, text = named.sub(flags[param], subject, count=1), text[len(subject) :]
    parts = _QUOTED.split(text)  # odd entries: quoted values ('max_new_tokens' as a value stays as it is)
    for i in range(0, len(parts), 2):
        parts[i] = _PY_NAME.sub(lambda m: flags.get(m.group(), m.group()), parts[i])
    return head + "".join(parts)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["train"]:
        from specviz.train.cli import main as train_main

        return train_main(argv[1:])
    args = build_parser(argv[:1]).parse_args(argv)  # only the command given is built
    try:
        return args.fn(args)
    except SpecvizError as exc:
        print(f"error: {error_line(exc, getattr(args, 'flags', {}))}", file=sys.stderr)  # one line, flags' names
        return 2
    except KeyboardInterrupt:
        return 130
