"""A replay's first view, in one event against two, in one process:
``python -m specviz.bench.replay_first_view [--steps 12000] [--rounds 3] [--file TRACE]``.

Builds the long trace of ``specviz.bench.replay`` (a real ``sd`` run tiled to ``--steps``) and writes it
as ``.json.gz``, as the app offers a long trace, unless ``--file`` names one. Then, ``--rounds`` times,
alternating, ``Explorer.upload`` of the file (read, parse, value check, metrics, the first view) with:

* ``two events``: the code as it is: past ``ui.replay.LATER_STEPS`` steps the first view is the
  columns, and the comparison and theory panels follow in a second event (``Explorer.replay_rest``,
  the upload's ``.then``), timed apart;
* ``one event``: the same with ``LATER_STEPS`` past any length, so the first view holds everything
  (as before the split).

Also timed: the collector's catch-up after the upload (two events: the second event's full
collection once the page has its view; one event: ``gc.collect(1)``, what the upload's collector
pause, ``fast_json.gc_paused``, leaves to the next allocations) and the serialisation of the
views' figures (``to_json``, as Gradio does before the page gets them). The upload's CPU time
(``time.process_time``: what other processes on a busy machine do not add to) is given beside its wall
time. Prints a Markdown table with the machine's load average before and after. The history of these
numbers is in ``docs/bench.md``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import os
import shutil
import statistics
import tempfile
import time

import plotly.graph_objects as go

from specviz.validation import Parser, whole


def _figures_to_json(view) -> None:
    for v in view.values():
        fig = v if isinstance(v, go.Figure) else getattr(v, "value", None)
        if isinstance(fig, go.Figure):
            fig.to_json()


def _upload(ex, path) -> tuple[float, float, float, float, float]:
    """(first view wall, its CPU time, the second event's wall (0 when none), the collector's catch-up,
    the figures to JSON) of one upload of ``path``."""
    from specviz.ui.runner import Session

    session = Session()
    c0, t0 = time.process_time(), time.perf_counter()
    view = ex.upload([path], session)
    first, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not session.columns:
        raise SystemExit(f"not replayed: {view.get('status')}")
    t0 = time.perf_counter()
    later = ex.replay_rest(session)
    rest = next(later)
    second = time.perf_counter() - t0 if rest else 0.0
    t0 = time.perf_counter()
    for _ in later:  # the second event's own full collection, after the page has its view
        pass
    gc.collect(1)
    catch_up = time.perf_counter() - t0
    t0 = time.perf_counter()
    _figures_to_json(view)
    _figures_to_json(rest)
    serialise = time.perf_counter() - t0
    ex.session_deleted(session)
    del session, view, rest
    gc.collect()
    return first, cpu, second, catch_up, serialise


def _trace_file(steps: int) -> tuple[str, str]:
    """The long trace of ``specviz.bench.replay`` (``tiled`` to ``steps``, checked) written as ``.json.gz``,
    as the app offers a long trace, to a new temporary folder: its path and the folder."""
    from specviz.bench.replay import base_trace, tiled
    from specviz.trace_check import check_trace

    trace = tiled(base_trace(), steps)
    check_trace(trace)
    folder = tempfile.mkdtemp(prefix="specviz-bench-first-view-")
    path = os.path.join(folder, "long.json.gz")
    with open(path, "wb") as fh:
        fh.write(gzip.compress(trace.to_json().encode("utf-8"), compresslevel=6, mtime=0))
    return path, folder


def _time_modes(ex, path: str, rounds: int) -> dict[str, list[tuple[float, ...]]]:
    """``rounds`` uploads of ``path`` in each mode, alternating: one event (``LATER_STEPS`` past any
    length) and two events (as the code is; restored after)."""
    from specviz.ui import replay as replay_mod

    modes = {"one event": 10**12, "two events": replay_mod.LATER_STEPS}
    results: dict[str, list[tuple[float, ...]]] = {name: [] for name in modes}
    try:
        for _ in range(rounds):
            for name, later_steps in modes.items():
                replay_mod.LATER_STEPS = later_steps
                results[name].append(_upload(ex, path))
    finally:
        replay_mod.LATER_STEPS = modes["two events"]
    return results


def _cell(rows: list[tuple[float, ...]], i: int) -> str:
    """``median s (min-max)`` of measure ``i`` over the rounds; ``-`` when it is always 0 (not made)."""
    xs = [r[i] for r in rows]
    if not any(xs):
        return "-"
    return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"


def _print_table(results: dict[str, list[tuple[float, ...]]]) -> None:
    """The Markdown table: each measure, one event against two."""
    print("| measure, median (min-max) | one event | two events |\n|---|---:|---:|")
    for i, what in enumerate(
        (
            "upload -> first view (`Explorer.upload`), wall",
            "the same, this process's CPU time",
            "the second event (`Explorer.replay_rest`), wall",
            "collector's catch-up after them (nobody waits)",
            "the views' figures to JSON",
        )
    ):
        print(f"| {what} | {_cell(results['one event'], i)} | {_cell(results['two events'], i)} |")


def main(argv: list[str] | None = None) -> None:
    """Time a long replay's first view (built, or ``--file``), one event against two, and print the table."""
    ap = Parser(
        prog="python -m specviz.bench.replay_first_view",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--steps", type=whole(1), default=12000)
    ap.add_argument("--rounds", type=whole(1), default=3)
    ap.add_argument("--file", help="replay this trace file instead of building one")
    args = ap.parse_args(argv)
    from specviz.bench.replay import explorer

    path, folder = (args.file, None) if args.file is not None else _trace_file(args.steps)
    gc.collect()
    ex = explorer()
    _upload(ex, path)  # warm: imports, caches
    load0 = os.getloadavg()[0]
    results = _time_modes(ex, path, args.rounds)
    load1 = os.getloadavg()[0]
    size = os.path.getsize(path)
    print(
        f"{os.path.basename(path)}: {size / 1e6:.1f} MB on disk; {args.rounds} rounds, alternating; "
        f"load average {load0:.1f} before, {load1:.1f} after, {os.cpu_count()} CPUs\n"
    )
    _print_table(results)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
