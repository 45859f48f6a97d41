"""A replay's first view, the code as it is against the code before issue #23's last changes, in one
process: ``python -m specviz.bench.replay_first_view [--steps 12000] [--rounds 3] [--file TRACE]``.

Builds the long trace of ``specviz.bench.replay`` (a real ``sd`` run tiled to ``--steps``) and writes it
as ``.json.gz``, as the app offers a long trace, unless ``--file`` names one. Then, ``--rounds`` times,
alternating, ``Explorer.upload`` of the file (read, parse, value check, metrics, the first full view)
with:

* ``after``: the code as it is (``trace.loads``: orjson where it reads exactly what json reads; the
  collector paused from the read to the first view, ``ui.replay``; a figure's long lists not
  deep-copied by plotly, ``viz.style.figure``);
* ``before``: the same with ``trace.loads`` replaced by ``json.loads``, the upload's pause removed
  (the parse and the check keep their own pauses, as before) and every list deep-copied
  (``viz.style.LONG_LIST`` past any length).

The collector's catch-up after an upload (what the pause defers: ``gc.collect(1)`` right after it,
the young generations the next allocations would walk) is timed apart, and so is the time until the
upload's figures are serialised; the upload's CPU time (``time.process_time``: what a busy machine's
other processes do not add to) is given beside its wall time (``to_json`` of each figure, as Gradio does before the page gets them).
Prints a Markdown table with the machine's load average before and after.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import gzip
import json
import os
import shutil
import statistics
import tempfile
import time

import plotly.graph_objects as go


def _upload(ex, path):
    from specviz.ui.runner import Session

    session = Session()
    c0, t0 = time.process_time(), time.perf_counter()
    view = ex.upload([path], session)
    first, cpu = time.perf_counter() - t0, time.process_time() - c0
    if not session.columns:
        raise SystemExit(f"not replayed: {view.get('status')}")
    t0 = time.perf_counter()
    gc.collect(1)
    catch_up = time.perf_counter() - t0
    t0 = time.perf_counter()
    for v in view.values():
        fig = v if isinstance(v, go.Figure) else getattr(v, "value", None) if hasattr(v, "value") else None
        if isinstance(fig, go.Figure):
            fig.to_json()
    serialise = time.perf_counter() - t0
    ex.session_deleted(session)
    del session, view
    gc.collect()
    return first, cpu, catch_up, serialise


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=12000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--file", help="replay this trace file instead of building one")
    args = ap.parse_args(argv)
    from specviz import trace as trace_mod
    from specviz.ui import replay as replay_mod
    from specviz.ui.app import Explorer
    from specviz.ui.config import AppConfig
    from specviz.ui.pairs import PairChoice, PairRegistry
    from specviz.viz import style

    path, folder = args.file, None
    if path is None:
        from specviz.bench.replay import base_trace, tiled
        from specviz.trace_check import check_trace

        trace = tiled(base_trace(), args.steps)
        check_trace(trace)
        folder = tempfile.mkdtemp(prefix="specviz-bench-first-view-")
        path = os.path.join(folder, "long.json.gz")
        with open(path, "wb") as fh:
            fh.write(gzip.compress(trace.to_json().encode("utf-8"), compresslevel=6, mtime=0))
        del trace
    gc.collect()
    ex = Explorer(AppConfig(max_upload_bytes=64 * 1024 * 1024), registry=PairRegistry(),
                  presets=[PairChoice("none", "/nonexistent", None)], preload=False)
    after = (trace_mod.loads, replay_mod.gc_paused, style.LONG_LIST)
    before = (json.loads, contextlib.nullcontext, 10**12)
    _upload(ex, path)  # warm: imports, caches
    load0 = os.getloadavg()[0]
    results: dict[str, list[tuple[float, float, float, float]]] = {"before": [], "after": []}
    try:
        for _ in range(args.rounds):
            for name, (loads, pause, long_list) in (("before", before), ("after", after)):
                trace_mod.loads, replay_mod.gc_paused, style.LONG_LIST = loads, pause, long_list
                results[name].append(_upload(ex, path))
    finally:
        trace_mod.loads, replay_mod.gc_paused, style.LONG_LIST = after
    load1 = os.getloadavg()[0]
    size = os.path.getsize(path)
    print(f"{os.path.basename(path)}: {size / 1e6:.1f} MB on disk; {args.rounds} rounds, alternating; "
          f"load average {load0:.1f} before, {load1:.1f} after, {os.cpu_count()} CPUs\n")
    print("| measure, median (min-max) | before | after |\n|---|---:|---:|")

    def cell(rows, i):
        xs = [r[i] for r in rows]
        return f"{statistics.median(xs):.2f} s ({min(xs):.2f}-{max(xs):.2f})"

    for i, what in enumerate(("upload -> first view (`Explorer.upload`), wall", "the same, this process's CPU time",
                              "collector's catch-up after it",
                              "the view's figures to JSON")):
        print(f"| {what} | {cell(results['before'], i)} | {cell(results['after'], i)} |")
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
