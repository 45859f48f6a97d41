"""The app's "Measure" action: timings that can be compared (no Gradio here).

A live run interleaves its columns step by step on one device and may be paced, so its wall times
are not independent measurements. ``measure`` runs the selected algorithms one after another,
unpaced, each with a warm-up and ``repeats`` timed runs, and reports medians with their spread (the
fastest and slowest timed run): the method of the README benchmark (``specviz.bench.run``), so the two
agree within noise for the same settings. A row names only the settings that had an effect
(``runner.effective_params``: no Thompson-sampling prior under ``controller=static``).
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
from specviz.ui.runner import effective_params

median = statistics.median  # of the timed runs (a module name, so tests can check the rows use it)


@dataclass
class Measurement:
    """Median timing of one algorithm over ``repeats`` runs after a warm-up, with the fastest and the
    slowest timed run (``wall_s_min``, ``wall_s_max``; both ``wall_s`` when not given)."""

    label: str
    algorithm: str
    wall_s: float
    new_tokens: int
    target_calls: int
    repeats: int
    speedup: float | None = None   # tokens/s over ar's tokens/s (when ar was measured)
    wall_s_min: float | None = None
    wall_s_max: float | None = None
    speedup_min: float | None = None  # the slowest of these runs against ar's fastest
    speedup_max: float | None = None  # the fastest against ar's slowest

    def __post_init__(self) -> None:
        self.wall_s_min = self.wall_s if self.wall_s_min is None else self.wall_s_min
        self.wall_s_max = self.wall_s if self.wall_s_max is None else self.wall_s_max

    @staticmethod
    def _rate(tokens: int, seconds: float) -> float:
        return tokens / seconds if seconds > 0 else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self._rate(self.new_tokens, self.wall_s)

    @property
    def tokens_per_s_min(self) -> float:
        return self._rate(self.new_tokens, self.wall_s_max)

    @property
    def tokens_per_s_max(self) -> float:
        return self._rate(self.new_tokens, self.wall_s_min)


def measure_label(algorithm: str, params: dict[str, Any]) -> str:
    """``algorithm (k=v, ...)`` with the parameters that have an effect (``runner.effective_params``,
    the app's rule for which settings a column shows), all of them."""
    shown = effective_params(algorithm, params)
    return algorithm if not shown else f"{algorithm} ({', '.join(f'{k}={v}' for k, v in shown.items())})"


def row_labels(algorithms: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """One row label per column (``measure_label``); columns with the same label are numbered (#1, #2)."""
    labels = [measure_label(a, p) for a, p in algorithms]
    return [f"{label} #{labels[:i + 1].count(label)}" if labels.count(label) > 1 else label
            for i, label in enumerate(labels)]


def _timed_decode(pair: ModelPair, algo: str, prompt: str | list[int], params: dict[str, Any],
                  sampling: dict[str, Any], should_stop: Callable[[], bool] | None,
                  clock: Callable[[], float], tick_s: float) -> Iterator[tuple[float | None, Any]]:
    """One decode, step by step: yields ``(None, None)`` at most every ``tick_s`` (by ``clock``) so the
    caller can hand control back (a Gradio generator notices a gone client only when it yields), then
    ``(seconds, trace)``, the decode's own time without the ticks. Ends without a result if
    ``should_stop`` says so between two steps."""
    elapsed, last_tick = 0.0, clock()
    start = time.perf_counter()
    live = specviz.stream(pair, algo, prompt=prompt, **sampling, **effective_params(algo, params))  # shown ones
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
    labels = row_labels(algorithms)
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
        done.append(Measurement(labels[i], algo, wall, int(m["new_tokens"]), int(m["target_calls"]),
                                repeats, wall_s_min=min(times), wall_s_max=max(times)))
    base = next((d for d in done if d.algorithm == "ar"), None)
    for d in done:
        if base is None or not base.tokens_per_s:
            continue
        d.speedup = 1.0 if d is base else d.tokens_per_s / base.tokens_per_s
        # the runs were not paired (each algorithm's one after another): the range pairs extremes
        if d is not base and base.tokens_per_s_max and base.tokens_per_s_min:
            d.speedup_min = d.tokens_per_s_min / base.tokens_per_s_max
            d.speedup_max = d.tokens_per_s_max / base.tokens_per_s_min
    yield f"measured {len(done)} algorithm{'s' if len(done) != 1 else ''}, one after another", done


def _spread(median_value: float, lo: float | None, hi: float | None, fmt: str, unit: str = "") -> str:
    """``median`` and, when the runs differ, its range as ``lo–hi`` underneath (class ``sv-spread``)."""
    text = f"{median_value:{fmt}}{unit}"
    if lo is None or hi is None or f"{lo:{fmt}}" == f"{hi:{fmt}}":
        return text
    return f'{text}<br><span class="sv-spread">{lo:{fmt}}–{hi:{fmt}}</span>'


def measurements_html(rows: list[Measurement], note: str = "") -> str:
    """The measured medians with their spread (min–max over the timed runs) as a table (class ``sv-table``)."""
    if not rows:
        return f'<div class="sv-empty">{html.escape(note) or "Press Measure to time the columns, one after another."}</div>'
    body = "".join(
        f'<tr><th scope="row">{html.escape(r.label)}</th><td>{r.new_tokens}</td><td>{r.target_calls}</td>'
        f"<td>{_spread(r.wall_s, r.wall_s_min, r.wall_s_max, '.3f')}</td>"
        f"<td>{_spread(r.tokens_per_s, r.tokens_per_s_min, r.tokens_per_s_max, '.1f')}</td>"
        f"<td>{'–' if r.speedup is None else _spread(r.speedup, r.speedup_min, r.speedup_max, '.2f', '×')}</td>"
        f"<td>{r.repeats}</td></tr>" for r in rows)
    return (f'<div class="sv-measure-note">{html.escape(note)}</div>'
            '<div class="sv-table-wrap"><table class="sv-table"><thead><tr><th>algorithm</th><th>tokens</th>'
            '<th>target calls</th><th title="median wall-clock seconds of a whole decode call; below it the '
            'fastest and the slowest timed run">median wall s</th>'
            '<th title="median; below it the range over the timed runs">tokens/s</th>'
            '<th title="median tokens/s over ar\'s; below it the slowest run against ar\'s fastest to the fastest '
            'against ar\'s slowest">speed-up vs ar</th><th>timed runs</th></tr></thead>'
            f"<tbody>{body}</tbody></table></div>"
            '<p class="sv-note">Run one after another, unpaced, after a warm-up each; medians of the timed runs, '
            "under each its range (min–max) over them (the method of <code>python -m specviz bench</code>). "
            "A row lists only the settings that apply to it.</p>")
