"""How long a large replay takes: ``python -m specviz.bench.replay [--steps 12000] [--scrubs 20]``.

Builds a long trace (issue #23: a 12,000-step, 43 MB export took 28 s to appear and 18-32 s a scrub):
decodes ``sd`` (gamma 4, T = 1) on the bundled pair (else a small random Llama pair) for a few hundred
steps and repeats those steps, renumbered so the trace stays coherent (``check_trace`` passes), until
it has ``--steps`` steps. Then, in process, as the app does it: ``Explorer.upload`` of the file (read,
value check, metrics, export, first view; past ``ui.replay.LATER_STEPS`` steps the comparison and theory
panels follow in ``Explorer.replay_rest``, timed apart), ``Explorer.scrub`` to random steps (the view of a slider
move) and the resident memory before, after the upload and after the session is dropped. Prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import random
import shutil
import statistics
import tempfile
import time

from specviz.metrics import summarize
from specviz.trace import RunTrace
from specviz.validation import Parser, whole


def _pair():
    from specviz.bench.figure_timing import _timing_pair

    return _timing_pair(None, None)


def base_trace(max_new_tokens: int = 200, seed: int = 0) -> RunTrace:
    """A real ``sd`` run (gamma 4, T = 1) of a few hundred steps."""
    from specviz.decoding import decode

    pair = _pair()
    prompt = "def main(argv=None):\n" if pair.tokenizer is not None else [1, 2, 3]
    return decode(pair, "sd", prompt=prompt, max_new_tokens=max_new_tokens, temperature=1.0, seed=seed, gamma=4)


def tiled(trace: RunTrace, n_steps: int) -> RunTrace:
    """``trace``'s steps repeated until there are ``n_steps``, each renumbered (index, n_before) and the
    output the concatenation of what they commit: a coherent trace of any length."""
    out = copy.copy(trace)
    base = trace.steps
    steps, produced = [], 0
    for i in range(n_steps):
        s = copy.copy(base[i % len(base)])
        s.index, s.n_before = i, produced
        produced += len(s.committed)
        steps.append(s)
    out.steps = steps
    out.output_ids = [c.token_id for s in steps for c in s.committed]
    out.output_text = "".join(c.text for s in steps for c in s.committed)
    out.finish_reason = "length"
    out.metrics = summarize(out)
    return out


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def explorer():
    """The app's ``Explorer`` with no pair to load (a replay needs none) and uploads up to 64 MB."""
    from specviz.ui.app import Explorer
    from specviz.ui.config import AppConfig
    from specviz.ui.pairs import PairChoice, PairRegistry

    return Explorer(
        AppConfig(max_upload_bytes=64 * 1024 * 1024),
        registry=PairRegistry(),
        presets=[PairChoice("none", "/nonexistent", None)],
        preload=False,
    )


def _trace_file(steps: int) -> str:
    """A long trace (``tiled`` to ``steps``, checked) written as JSON to a new temporary folder: its path."""
    from specviz.trace_check import check_trace

    trace = tiled(base_trace(), steps)
    check_trace(trace)
    path = os.path.join(tempfile.mkdtemp(prefix="specviz-bench-replay-"), "long.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(trace.to_json())
    return path


def _parse_and_check(path: str) -> tuple[float, float]:
    """Seconds of the parts of an upload on their own (the upload does them again): the parse
    (``RunTrace.from_json``) and the value check (``check_trace``)."""
    from specviz.trace_check import check_trace
    from specviz.trace_io import read_trace_text

    text = read_trace_text(path)  # a .json or a .json.gz, as an upload reads it
    t0 = time.perf_counter()
    trace = RunTrace.from_json(text)
    parse = time.perf_counter() - t0
    t0 = time.perf_counter()
    check_trace(trace)
    check = time.perf_counter() - t0
    del trace, text
    gc.collect()
    return parse, check


def _session(ex, path: str, session_no: int, scrubs: int) -> tuple[tuple, int]:
    """One session's upload of ``path``, its second event, the collection after it, ``scrubs`` scrubs to
    random steps (seeded by ``session_no``) and the resident memory while shown and after it ended: the
    table's row and the trace's steps."""
    from specviz.ui.runner import Session

    session = Session()
    t0 = time.perf_counter()
    view = ex.upload([path], session)
    first = time.perf_counter() - t0
    if not session.columns:
        raise SystemExit(f"not replayed: {view.get('status')}")
    t0 = time.perf_counter()
    later = ex.replay_rest(session)  # a long replay's comparison and theory panels (the upload's .then)
    view.update(next(later))
    rest = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in later:  # then its collection, after the page has them
        pass
    collect = time.perf_counter() - t0
    n = session.n_steps
    rng = random.Random(session_no)
    times = []
    for _ in range(scrubs):
        step = rng.randrange(1, n + 1)
        t0 = time.perf_counter()
        ex.scrub(session, step)
        times.append(time.perf_counter() - t0)
    held = rss_mb()
    ex.session_deleted(session)
    del session, view
    gc.collect()
    return (first, rest, collect, times, held, rss_mb()), n


def _print_table(n: int, size: int, parse: float, check: float, rows: list[tuple], rss0: float) -> None:
    """The Markdown table of the measures, under a line naming the trace and the machine's load."""
    print(f"trace: {n} steps, {size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| measure | value |\n|---|---|")
    print(f"| parse (json + schema, RunTrace.from_json) | {parse:.2f} s |")
    print(f"| value check (check_trace) | {check:.2f} s |")
    for i, (first, rest, collect, scrubs, held, dropped) in enumerate(rows, 1):
        print(f"| session {i}: upload -> first view (parse, check, metrics, export, the columns) | {first:.2f} s |")
        print(f"| session {i}: then the comparison and theory panels (second event) | {rest:.2f} s |")
        print(f"| session {i}: then the second event's full collection, after the page has it | {collect:.2f} s |")
        print(
            f"| session {i}: scrub to a random step, median of {len(scrubs)} (min-max) | "
            f"{statistics.median(scrubs):.3f} s ({min(scrubs):.3f}-{max(scrubs):.3f}) |"
        )
        print(f"| session {i}: resident memory while shown / after the session ended | {held:.0f} / {dropped:.0f} MB |")
    print(f"| resident memory before the first upload | {rss0:.0f} MB |")


def main(argv: list[str] | None = None) -> None:
    """Time a long replay (built, or ``--file``) in two sessions and print the table."""
    ap = Parser(
        prog="python -m specviz.bench.replay", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--steps", type=whole(1), default=12000)
    ap.add_argument("--scrubs", type=whole(1), default=20)
    ap.add_argument("--file", help="replay this trace file (.json or .json.gz) instead of building one")
    args = ap.parse_args(argv)
    path = args.file or _trace_file(args.steps)
    gc.collect()
    size = os.path.getsize(path)
    ex = explorer()
    parse, check = _parse_and_check(path)
    rows = []
    rss0 = rss_mb()
    for session_no in (1, 2):  # a second session: what the first left is reused, not added to
        row, n = _session(ex, path, session_no, args.scrubs)
        rows.append(row)
    _print_table(n, size, parse, check, rows, rss0)
    if args.file is None:  # the trace built here
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


if __name__ == "__main__":
    main()
