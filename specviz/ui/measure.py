"""The app's "Measure" action: timings that can be compared (no Gradio here).

A live run interleaves its columns step by step on one device and may be paced, so its wall times
are not independent measurements. ``measure`` runs the selected algorithms one after another,
unpaced, each with a warm-up and ``repeats`` timed runs, and reports medians: the method of the
README benchmark (``specviz.bench.run``), so the two agree within noise for the same settings.
"""
from __future__ import annotations

import html
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import specviz
from specviz import interrupt
from specviz.models.loading import ModelPair

median = statistics.median  # of the timed runs (a module name, so tests can check the rows use it)


@dataclass
class Measurement:
    """Median timing of one algorithm over ``repeats`` runs after a warm-up."""

    label: str
    algorithm: str
    wall_s: float
    new_tokens: int
    target_calls: int
    repeats: int
    speedup: float | None = None   # tokens/s over ar's tokens/s (when ar was measured)

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.wall_s if self.wall_s > 0 else 0.0


def _timed_decode(pair: ModelPair, algo: str, prompt: str | list[int], params: dict[str, Any],
                  sampling: dict[str, Any], should_stop: Callable[[], bool] | None,
                  clock: Callable[[], float], tick_s: float) -> Iterator[tuple[float | None, Any]]:
    """One decode, step by step: yields ``(None, None)`` at most every ``tick_s`` (by ``clock``) so the
    caller can hand control back (a Gradio generator notices a gone client only when it yields), then
    ``(seconds, trace)``, the decode's own time without the ticks. Ends without a result if
    ``should_stop`` says so between two steps."""
    elapsed, last_tick = 0.0, clock()
    start = time.perf_counter()
    live = specviz.stream(pair, algo, prompt=prompt, **sampling, **params)
    steps = iter(live)
    while True:
        try:
            with interrupt.checking(should_stop):  # Sequoia's calibration checks it between its steps
                next(steps)
        except StopIteration:
            break
        except interrupt.RunInterrupted:
            return
        if should_stop is not None and should_stop():
            return
        if clock() - last_tick >= tick_s:
            elapsed += time.perf_counter() - start
            yield None, None
            last_tick = clock()
            if should_stop is not None and should_stop():
                return
            start = time.perf_counter()
    elapsed += time.perf_counter() - start
    yield elapsed, live.trace


def measure(pair: ModelPair, prompt: str | list[int], algorithms: list[tuple[str, dict[str, Any]]], *,
            repeats: int = 3, should_stop: Callable[[], bool] | None = None,
            clock: Callable[[], float] = time.monotonic, tick_s: float = 1.0,
            **sampling: Any) -> Iterator[tuple[str, list[Measurement]]]:
    """Yield ``(progress sentence, measurements so far)`` after each algorithm, and at least every
    ``tick_s`` seconds of decoding in between (the same sentence again); the last yield has all.
    ``should_stop`` is asked between two decoding steps: Measure ends there, with what it measured.
    ``sampling``: ``max_new_tokens``, ``temperature``, ``top_p``, ``top_k``, ``seed``.

    Each algorithm gets a warm-up and ``repeats`` timed runs; its time is the median of the whole
    decode calls (the method of ``specviz.bench``), not counting the pauses at the ticks."""
    done: list[Measurement] = []
    for i, (algo, params) in enumerate(algorithms):
        if should_stop is not None and should_stop():
            yield f"stopped after {len(done)} of {len(algorithms)}", done
            return
        note = f"measuring {algo} ({i + 1} of {len(algorithms)}): a warm-up and {repeats} timed runs…"
        yield note, done
        times, trace = [], None
        for r in range(repeats + 1):
            result = None
            for result in _timed_decode(pair, algo, prompt, params, sampling, should_stop, clock, tick_s):
                if result[0] is None:
                    yield note, done
            if result is None or result[0] is None:  # stopped inside a decode
                yield f"stopped after {len(done)} of {len(algorithms)}", done
                return
            if r:  # the first run warms up
                times.append(result[0])
                trace = result[1]
        wall = median(times)
        m = trace.metrics
        done.append(Measurement(algo if not params else f"{algo} ({', '.join(f'{k}={v}' for k, v in params.items())})",
                                algo, wall, int(m["new_tokens"]), int(m["target_calls"]), repeats))
    base = next((d for d in done if d.algorithm == "ar"), None)
    for d in done:
        d.speedup = d.tokens_per_s / base.tokens_per_s if base is not None and base.tokens_per_s else None
    yield f"measured {len(done)} algorithm{'s' if len(done) != 1 else ''}, one after another", done


def measurements_html(rows: list[Measurement], note: str = "") -> str:
    """The measured medians as a table (class ``sv-table``)."""
    if not rows:
        return f'<div class="sv-empty">{html.escape(note) or "Press Measure to time the selected algorithms."}</div>'
    body = "".join(
        f'<tr><th scope="row">{html.escape(r.label)}</th><td>{r.new_tokens}</td><td>{r.target_calls}</td>'
        f"<td>{r.wall_s:.3f}</td><td>{r.tokens_per_s:.1f}</td>"
        f"<td>{'–' if r.speedup is None else f'{r.speedup:.2f}×'}</td><td>{r.repeats}</td></tr>" for r in rows)
    return (f'<div class="sv-measure-note">{html.escape(note)}</div>'
            '<div class="sv-table-wrap"><table class="sv-table"><thead><tr><th>algorithm</th><th>tokens</th>'
            '<th>target calls</th><th title="median wall-clock seconds of a whole decode call">median wall s</th>'
            "<th>tokens/s</th><th>speed-up vs ar</th><th>timed runs</th></tr></thead>"
            f"<tbody>{body}</tbody></table></div>"
            '<p class="sv-note">Run one after another, unpaced, after a warm-up each; medians of the timed runs '
            "(the method of <code>python -m specviz bench</code>).</p>")
