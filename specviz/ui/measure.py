"""The app's "Measure" action: timings that can be compared (no Gradio here).

A live run interleaves its columns step by step on one device and may be paced, so its wall times
are not independent measurements. ``measure`` times the selected columns unpaced with the routine
``python -m specviz compare`` and ``bench`` use (``bench.timing.rounds``: a warm-up round, then
``repeats`` timed rounds, each running every column once, in order), under one torch thread count,
and reports medians with their spread, the conditions it ran under (threads, device, dtype, load)
and the verdict in words (``bench.verdict``) with the cost model's predictions (``bench.costs``). A
row is named as its column is everywhere else (``columns.column_labels``: the algorithm, and what tells
same-algorithm columns apart), with the settings that had an effect under it (``runner.effective_params``:
no Thompson-sampling prior under ``controller=static``), as the column's header shows them.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Generator, Iterator

from specviz import decoding, interrupt
from specviz.bench import timing
from specviz.bench.verdict import VerdictRow, verdict
from specviz.models.loading import ModelPair
from specviz.trace import RunTrace
from specviz.ui.columns import column_labels
from specviz.ui.runner import effective_params


@dataclass
class Measurement:
    """Median timing of one column over ``repeats`` timed rounds after a warm-up round, with the
    fastest and the slowest timed run (``wall_s_min``, ``wall_s_max``; both ``wall_s`` when not given);
    what it ran under (``conditions``) and the cost model's predictions over ``ar`` (``predicted`` here,
    ``predicted_gpu`` on a GPU, with ``gpu_draft_cost`` a draft call's assumed share of a target call)."""

    label: str
    algorithm: str
    wall_s: float
    new_tokens: int
    target_calls: int
    repeats: int
    speedup: float | None = None  # tokens/s over ar's tokens/s (when ar was measured)
    wall_s_min: float | None = None
    wall_s_max: float | None = None
    speedup_min: float | None = None  # the lowest and highest of the rounds' speed-ups, each against
    speedup_max: float | None = None  # ar's run of the same round
    conditions: timing.Conditions | None = None
    predicted: float | None = None
    predicted_gpu: float | None = None
    gpu_draft_cost: float | None = None
    target_ms: float | None = None  # the cost model's one-token calls here
    draft_ms: float | None = None
    settings: str = ""  # the settings that had an effect, k=v, ... (``measure_settings``)

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

    @property
    def tau(self) -> float | None:
        return self.new_tokens / self.target_calls if self.target_calls else None

    def verdict_row(self) -> VerdictRow:
        return VerdictRow(
            self.label,
            self.algorithm,
            self.tokens_per_s,
            self.speedup,
            self.speedup_min,
            self.speedup_max,
            self.predicted,
            self.predicted_gpu,
            self.tau,
            self.gpu_draft_cost,
            self.target_ms,
            self.draft_ms,
        )


def measure_settings(algorithm: str, params: dict[str, Any]) -> str:
    """``k=v, ...``: the parameters that have an effect (``runner.effective_params``, the app's rule for
    which settings a column shows), all of them, as the column's header lists them."""
    return ", ".join(f"{k}={v}" for k, v in effective_params(algorithm, params).items())


def row_labels(algorithms: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """One row label per column: the column's own label (``columns.column_labels``, as its header, the
    comparison table and the figures' legends name it)."""
    return column_labels(algorithms)


def _decode(
    pair: ModelPair,
    algo: str,
    prompt: str | list[int],
    params: dict[str, Any],
    sampling: dict[str, Any],
    should_stop: Callable[[], bool] | None,
    clock: Callable[[], float],
    tick_s: float,
) -> Generator[None, None, RunTrace | None]:
    """One whole decode call, step by step, as a pausable call of ``timing.rounds``: it yields at most
    every ``tick_s`` (by ``clock``) so the caller can hand control back (a Gradio generator notices a
    gone client only when it yields; the routine does not count the pause), and returns the trace, or
    None if ``should_stop`` said so between two steps."""
    live = decoding.stream(pair, algo, prompt=prompt, **sampling, **effective_params(algo, params))  # shown ones
    steps, last_tick = iter(live), clock()
    while True:
        try:
            with interrupt.checking(should_stop):  # Sequoia's calibration checks it between its steps
                next(steps)
        except StopIteration:
            return live.trace
        except interrupt.RunInterrupted:
            return None
        if should_stop is not None and should_stop():
            return None
        if clock() - last_tick >= tick_s:
            yield
            last_tick = clock()
            if should_stop is not None and should_stop():
                return None


def _rows(
    labels: list[str],
    algorithms: list[tuple[str, dict[str, Any]]],
    seconds: list[list[float]],
    traces: list[RunTrace],
    rounds: int,
    conditions: timing.Conditions | None,
) -> list[Measurement]:
    """A row per column from its first ``rounds`` timed rounds, each speed-up against ``ar``'s
    (``timing.speedup``: the ratio of the median rates, the range round by round)."""
    timings = [timing.Timing(s[:rounds], t) for s, t in zip(seconds, traces)]
    rows = []
    for label, (algo, params), t in zip(labels, algorithms, timings):
        m = t.result.metrics
        rows.append(
            Measurement(
                label,
                algo,
                t.median,
                int(m["new_tokens"]),
                int(m["target_calls"]),
                rounds,
                wall_s_min=t.fastest,
                wall_s_max=t.slowest,
                conditions=conditions,
                settings=measure_settings(algo, params),
            )
        )
    base_at = next((i for i, (algo, _) in enumerate(algorithms) if algo == "ar"), None)
    if base_at is None:
        return rows
    base = rows[base_at]
    for row, t in zip(rows, timings):
        up = timing.speedup(t, timings[base_at], row.new_tokens, base.new_tokens)
        if up is None:
            continue
        row.speedup = 1.0 if row is base else up.median
        if row is not base:
            row.speedup_min, row.speedup_max = up.lo, up.hi
    return rows


def _predict(pair: ModelPair, rows: list[Measurement], traces: list[RunTrace], threads: int | None) -> str:
    """The cost model's predictions on ``rows`` (``costs.predictions`` of each column's last run);
    empty, or the sentence saying why there are none."""
    from specviz.bench import costs

    try:
        found = costs.predictions(pair, {i: [t] for i, t in enumerate(traces)}, threads=threads)
    except Exception as exc:  # noqa: BLE001 - a measurement is never lost to its verdict's model
        return f"The cost model could not be timed here ({type(exc).__name__}: {exc})."
    for i, row in enumerate(rows):
        p = found.get(i)
        if p is not None:
            row.predicted, row.predicted_gpu, row.gpu_draft_cost = p.here, p.gpu, p.gpu_draft_cost
            row.target_ms, row.draft_ms = p.target_ms, p.draft_ms
    return ""


def _note(algo: str, i: int, n: int, r: int, repeats: int) -> str:
    when = "warm-up round" if r == 0 else f"timed round {r} of {repeats}"
    return f"measuring {algo} ({i + 1} of {n}), {when}…"


@dataclass
class _Rounds:
    """The timed rounds so far: each column's timed seconds and last trace, the rows they make, and how
    the rounds ended (``conditions`` when they all ran, ``stopped`` when Measure was stopped)."""

    seconds: list[list[float]]
    traces: list[Any]
    rows: list[Measurement] = field(default_factory=list)
    conditions: timing.Conditions | None = None
    stopped: bool = False


def _run_rounds(
    events: Generator[timing.Event, None, None],
    algorithms: list[tuple[str, dict[str, Any]]],
    labels: list[str],
    repeats: int,
    should_stop: Callable[[], bool] | None,
    got: _Rounds,
) -> Iterator[tuple[str, list[Measurement]]]:
    """Follow ``timing.rounds``' events into ``got``, yielding the progress sentence before each decode,
    after each complete round (with the rows so far) and at each tick; on a stop, the sentence saying how
    many rounds completed (``got.stopped``)."""
    n = len(algorithms)
    stopped = "stopped after {} of {} timed rounds"
    for event in events:
        if event.kind == "end":
            got.conditions = event.conditions
            return
        note = _note(algorithms[event.index][0], event.index, n, event.round, repeats)
        if event.kind == "done":
            if event.result is None:  # stopped inside a decode
                events.close()
                got.stopped = True
                yield stopped.format(len(got.seconds[-1]), repeats), got.rows
                return
            if event.timed:
                got.seconds[event.index].append(event.seconds)
                got.traces[event.index] = event.result
                if event.index == n - 1:  # a round complete: the rows so far
                    got.rows = _rows(labels, algorithms, got.seconds, got.traces, len(got.seconds[-1]), None)
        if should_stop is not None and should_stop():
            events.close()
            got.stopped = True
            yield stopped.format(len(got.seconds[-1]), repeats), got.rows
            return
        if event.kind != "done" or (event.timed and event.index == n - 1):  # not twice for the same news
            yield note, got.rows


def _complete(
    pair: ModelPair,
    algorithms: list[tuple[str, dict[str, Any]]],
    labels: list[str],
    got: _Rounds,
    repeats: int,
    predict: bool,
    should_stop: Callable[[], bool] | None,
    threads: int | None,
) -> Iterator[tuple[str, list[Measurement]]]:
    """The rows of all ``repeats`` rounds; with ``predict`` (and no stop), the cost model timed for the
    verdict first; then the rows with the conditions they ran under."""
    rows = _rows(labels, algorithms, got.seconds, got.traces, repeats, None)
    n = len(algorithms)
    done = (
        f"measured {n} algorithm{'s' if n != 1 else ''}, interleaved: a warm-up round, then {repeats} timed "
        f"round{'s' if repeats != 1 else ''}"
    )
    if predict and not (should_stop is not None and should_stop()):
        yield f"{done}; timing the cost model's calls for the verdict…", rows
        why = _predict(pair, rows, got.traces, threads or got.conditions.threads)
        if why:
            done += f". {why}"
    for row in rows:  # complete: the table now shows what it ran under and the verdict
        row.conditions = got.conditions
    yield done, rows


def measure(
    pair: ModelPair,
    prompt: str | list[int],
    algorithms: list[tuple[str, dict[str, Any]]],
    *,
    repeats: int = 3,
    should_stop: Callable[[], bool] | None = None,
    clock: Callable[[], float] = time.monotonic,
    tick_s: float = 1.0,
    timer: Callable[[], float] = time.perf_counter,
    threads: int | None = None,
    loadavg: Callable[[], float | None] = timing.load_average,
    predict: bool = True,
    **sampling: Any,
) -> Iterator[tuple[str, list[Measurement]]]:
    """Yield ``(progress sentence, measurements so far)`` before each decode, after each round, and
    at least every ``tick_s`` seconds of decoding in between (the same sentence again); the last yield
    has all. ``should_stop`` is asked between two decoding steps: Measure ends there, with the rounds
    it completed. ``sampling``: ``max_new_tokens``, ``temperature``, ``top_p``, ``top_k``, ``seed``.

    The columns are timed by ``timing.rounds`` (a warm-up round, then ``repeats`` timed rounds; the
    whole decode call, by ``timer``, not counting the pauses at the ticks) under ``threads`` torch
    threads (None: as they are), then, with ``predict``, the cost model is timed for the verdict."""
    labels = row_labels(algorithms)
    calls = {
        i: partial(_decode, pair, algo, prompt, params, sampling, should_stop, clock, tick_s)
        for i, (algo, params) in enumerate(algorithms)
    }
    got = _Rounds([[] for _ in algorithms], [None] * len(algorithms))
    events = timing.rounds(
        calls, repeats, threads=threads, device=str(pair.device), dtype=str(pair.dtype), clock=timer, loadavg=loadavg
    )
    yield from _run_rounds(events, algorithms, labels, repeats, should_stop, got)
    if not got.stopped:
        yield from _complete(pair, algorithms, labels, got, repeats, predict, should_stop, threads)


def _spread(median_value: float, lo: float | None, hi: float | None, fmt: str, unit: str = "") -> str:
    """``median`` and, when the runs differ, its range as ``lo–hi`` underneath (class ``sv-spread``)."""
    text = f"{median_value:{fmt}}{unit}"
    if lo is None or hi is None or f"{lo:{fmt}}" == f"{hi:{fmt}}":
        return text
    return f'{text}<br><span class="sv-spread">{lo:{fmt}}–{hi:{fmt}}</span>'


def _predicted(r: Measurement) -> str:
    if r.predicted is None:
        return "–"
    gpu = "" if r.predicted_gpu is None else f' / <span class="sv-gpu">{r.predicted_gpu:.2f}×</span>'
    return f"{r.predicted:.2f}×{gpu}"


def _settings(r: Measurement) -> str:
    return f'<br><span class="sv-params">{html.escape(r.settings)}</span>' if r.settings else ""


def measurements_html(rows: list[Measurement], note: str = "") -> str:
    """The measured medians with their spread (min–max over the timed rounds) as a table (class
    ``sv-table``); once the measurement is complete, the conditions it ran under and the verdict in
    words (``bench.verdict``)."""
    if not rows:
        return f'<div class="sv-empty">{html.escape(note) or "Press Measure to time the columns, interleaved."}</div>'
    body = "".join(
        f'<tr><th scope="row">{html.escape(r.label)}{_settings(r)}</th>'
        f"<td>{'–' if r.speedup is None else _spread(r.speedup, r.speedup_min, r.speedup_max, '.2f', '×')}</td>"
        f"<td>{_predicted(r)}</td>"
        f"<td>{_spread(r.tokens_per_s, r.tokens_per_s_min, r.tokens_per_s_max, '.1f')}</td>"
        f"<td>{_spread(r.wall_s, r.wall_s_min, r.wall_s_max, '.3f')}</td>"
        f"<td>{r.new_tokens}</td><td>{r.target_calls}</td><td>{r.repeats}</td></tr>"
        for r in rows
    )
    conditions = rows[0].conditions
    after = ""
    if conditions is not None:
        said = verdict([r.verdict_row() for r in rows])
        after = f'<p class="sv-note sv-conditions">Timed on {html.escape(conditions.sentence())}.</p>' + (
            f'<p class="sv-verdict"><strong>Verdict.</strong> {html.escape(said)}</p>' if said else ""
        )
    return (
        f'<div class="sv-measure-note">{html.escape(note)}</div>'
        # the speed-up first, after the name: what a reader looks for, in view at a phone's width (issue 35
        # point 8); the quantities it is made of after it
        '<div class="sv-table-wrap"><table class="sv-table"><thead><tr><th>algorithm</th>'
        "<th title=\"median tokens/s over ar's; below it the lowest and highest of the rounds, each against "
        "ar's run of the same round\">speed-up vs ar</th>"
        "<th title=\"the cost model's speed-up over ar for this run: on this machine (t(n) timed here) / on a "
        'GPU (a prediction: t(n) = t(1), the draft call at its share of the layers or weights)">predicted '
        "here / GPU</th>"
        '<th title="median; below it the range over the timed rounds">tokens/s</th>'
        '<th title="median wall-clock seconds of a whole decode call; below it the '
        'fastest and the slowest timed round">median wall s</th>'
        "<th>tokens</th><th>target calls</th><th>timed rounds</th></tr></thead>"
        f"<tbody>{body}</tbody></table></div>{after}"
        '<p class="sv-note">Interleaved and unpaced: a warm-up round, then timed rounds that each run every '
        "column once, in order; medians of the timed rounds, under each its range (min–max) over them (the "
        "method of <code>python -m specviz compare</code> and <code>bench</code>). A row is named as its column "
        "is, with the settings that apply to it under the name.</p>"
    )
