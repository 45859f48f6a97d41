"""One way to time a method (issue 34): the routine the app's Measure, ``python -m specviz compare``,
``python -m specviz bench`` and the cost model's t(n) share.

``rounds`` calls every method once per round, in the same order each round (interleaved, so that a
machine's drift in speed hits all of them alike), after ``warmup`` untimed rounds, under one torch
thread count set for the whole measurement and restored after it; ``Timing`` keeps each method's
timed rounds (median, fastest, slowest) and ``speedup`` compares two methods round by round. The
``Conditions`` it ran under (torch threads, device, dtype, the load average before and after) go
with every result. Clocks are injected (``clock``, ``loadavg``) so that tests drive time themselves.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Hashable, Iterator, Mapping

from specviz.errors import SpecvizError


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity where the system says, else ``os.cpu_count``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def default_threads(concurrency: int = 1, cpus: int | None = None) -> int:
    """The one thread setting: the CPUs shared out between the runs in flight (``cpus // concurrency``,
    at least 1). The command line runs one thing at a time (all the CPUs); the app, ``concurrency``
    runs at once (``ui.config.configure_torch_threads``)."""
    return max(1, (cpus or cpu_count()) // max(1, concurrency))


def check_threads(value: Any, flag: str = "--threads") -> int:
    """``value`` as a thread count: a whole number from 1 to this machine's CPUs; anything else a
    ``SpecvizError`` in one sentence."""
    from specviz.validation import whole_text

    n = (
        value if isinstance(value, int) and not isinstance(value, bool) else whole_text(str(value))
    )  # no spaces: the one grammar
    if n is None or not 1 <= n <= cpu_count():
        raise SpecvizError(f"{flag} must be {_threads_wanted(value)}.")
    return n


def _threads_wanted(value: Any) -> str:
    return f"a whole number of torch threads from 1 to {cpu_count()} (this machine's CPUs), got {str(value)!r}"


def threads_arg(raw: str) -> int:
    """An argparse ``type`` for ``--threads`` (``check_threads``), refused as argparse's one line."""
    try:
        return check_threads(raw)
    except SpecvizError:
        raise argparse.ArgumentTypeError(f"expected {_threads_wanted(raw)}") from None


threads_arg.__name__ = "threads"  # what argparse names the type in its refusal


@contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """torch's intra-op threads set to ``n`` (None: left as they are) inside the block, and what they
    were restored after it; yields the count in force."""
    import torch

    before = torch.get_num_threads()
    if n and n != before:
        torch.set_num_threads(n)
    try:
        yield torch.get_num_threads()
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def _keep_threads(n: int | None) -> None:
    """Set ``n`` threads again if they are not in force: a paused call may resume on another Python
    thread (a Gradio worker), whose own OpenMP setting is not the one set before the pause."""
    if n:
        import torch

        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


def load_average() -> float | None:
    """The 1-minute load average (``os.getloadavg``), None where the system has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


@dataclass(frozen=True)
class Conditions:
    """What a measurement ran under: torch threads, device, dtype, this machine's CPUs and the
    1-minute load average before and after it."""

    threads: int
    device: str = "cpu"
    dtype: str = "float32"
    cpus: int = 1
    load_before: float | None = None
    load_after: float | None = None

    def sentence(self) -> str:
        """``1 torch thread, cpu, float32; load average 1.52 before, 1.61 after (2 CPUs)``."""
        text = f"{self.threads} torch thread{'s' if self.threads != 1 else ''}, {self.device}, {self.dtype}"
        if self.load_before is None or self.load_after is None:
            return f"{text} ({self.cpus} CPUs; no load average on this system)"
        return f"{text}; load average {self.load_before:.2f} before, {self.load_after:.2f} after ({self.cpus} CPUs)"

    def as_dict(self) -> dict[str, Any]:
        return {
            "threads": self.threads,
            "device": self.device,
            "dtype": self.dtype,
            "cpus": self.cpus,
            "load_before": self.load_before,
            "load_after": self.load_after,
        }


@dataclass
class Timing:
    """One method's timed rounds in seconds, in round order, and the result of its last timed round."""

    seconds: list[float] = field(default_factory=list)
    result: Any = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def fastest(self) -> float:
        return min(self.seconds)

    @property
    def slowest(self) -> float:
        return max(self.seconds)


@dataclass(frozen=True)
class Spread:
    """A median with the smallest and largest value it summarises."""

    median: float
    lo: float
    hi: float


def rate(method: Timing, work: float) -> Spread | None:
    """``work`` per second (tokens/s): at the median time, and at the slowest and the fastest round."""
    if not method.seconds or method.fastest <= 0:
        return None
    return Spread(work / method.median, work / method.slowest, work / method.fastest)


def speedup(method: Timing, base: Timing, work: float = 1.0, base_work: float = 1.0) -> Spread | None:
    """``method``'s rate over ``base``'s (``work`` per second: tokens, or 1 for calls): the ratio of
    the median rates, with the range of the ratios round by round (each round ran both, one after the
    other). None when ``base`` did no work or took no time."""
    if not base.seconds or not method.seconds or not base_work or base.median <= 0 or method.median <= 0:
        return None
    ratios = [(work / m) / (base_work / b) for m, b in zip(method.seconds, base.seconds) if m > 0 and b > 0]
    mid = (work / method.median) / (base_work / base.median)
    return Spread(mid, min(ratios, default=mid), max(ratios, default=mid))


@dataclass(frozen=True)
class Event:
    """What ``rounds`` reports as it goes. ``kind``: ``"start"`` (a call is about to run), ``"tick"`` (a
    pausable call handed control back; its clock is stopped until the caller asks for the next
    event), ``"done"`` (a call ended: ``seconds``, ``result``), ``"skipped"`` (a call raised one of
    ``skip`` in a warm-up round and is left out: ``result`` is the exception), ``"end"`` (``timings``
    and ``conditions``). ``timed`` is False in warm-up rounds; ``round`` counts from 0, warm-ups
    first; ``index`` is the call's place in the round."""

    kind: str
    name: Hashable = None
    round: int = 0
    index: int = 0
    timed: bool = False
    seconds: float = 0.0
    result: Any = None
    timings: dict | None = None
    conditions: Conditions | None = None


Call = Callable[[], Any]


def _timed_call(
    fn: Call, clock: Callable[[], float], sync: Callable[[], None] | None, threads: int | None
) -> Generator[None, None, tuple[float, Any]]:
    """Time one call. A call that returns a generator is a pausable one: each of its yields stops the
    clock (this yields too) until it is resumed; its return value is the result."""
    start = clock()
    out = fn()
    if not isinstance(out, Generator):
        if sync:
            sync()
        return clock() - start, out
    elapsed = 0.0
    while True:
        try:
            next(out)
        except StopIteration as stop:
            if sync:
                sync()
            return elapsed + clock() - start, stop.value
        elapsed += clock() - start
        yield
        _keep_threads(threads)
        start = clock()


def rounds(
    calls: Mapping[Hashable, Call],
    repeats: int,
    *,
    warmup: int = 1,
    threads: int | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    clock: Callable[[], float] = time.perf_counter,
    loadavg: Callable[[], float | None] = load_average,
    before: Mapping[Hashable, Call] | None = None,
    sync: Callable[[], None] | None = None,
    skip: tuple[type[BaseException], ...] = (),
) -> Iterator[Event]:
    """Time ``calls``: ``warmup`` untimed rounds then ``repeats`` timed ones, each round calling every
    method once in the order given, all under ``threads`` torch threads (None: as they are), restored
    when the measurement ends or is abandoned. ``before[name]``, where given, is called untimed right
    before each call of ``name`` (the cost model's t(n) times each call as it finds the caches after
    that one); ``sync`` waits for the device before each reading of the clock. Yields ``Event``s; the
    last is ``"end"``, with every method's ``Timing`` and the ``Conditions``."""
    with torch_threads(threads) as in_force:
        load_before = loadavg()
        live = dict(calls)
        timings = {name: Timing() for name in live}
        for r in range(warmup + repeats):
            for i, (name, fn) in enumerate(list(live.items())):
                yield Event("start", name, r, i, r >= warmup)
                if before and name in before:
                    before[name]()
                if sync:
                    sync()
                call = _timed_call(fn, clock, sync, in_force if threads else None)
                try:
                    while True:
                        next(call)
                        yield Event("tick", name, r, i)
                except StopIteration as stop:
                    seconds, result = stop.value
                except skip as exc:
                    if r >= warmup:
                        raise
                    del live[name], timings[name]
                    yield Event("skipped", name, r, i, result=exc)
                    continue
                timed = r >= warmup
                if timed:
                    timings[name].seconds.append(seconds)
                    timings[name].result = result
                yield Event("done", name, r, i, timed, seconds, result)
        conditions = Conditions(
            in_force, str(device), str(dtype).removeprefix("torch."), cpu_count(), load_before, loadavg()
        )
        yield Event("end", timings=timings, conditions=conditions)


def time_calls(
    calls: Mapping[Hashable, Call], repeats: int, **kwargs: Any
) -> tuple[dict[Hashable, Timing], Conditions, dict[Hashable, BaseException]]:
    """``rounds`` run to its end: every method's ``Timing``, the ``Conditions`` and the methods
    skipped (name -> the exception of its warm-up)."""
    skipped: dict[Hashable, BaseException] = {}
    for event in rounds(calls, repeats, **kwargs):
        if event.kind == "skipped":
            skipped[event.name] = event.result
        elif event.kind == "end":
            return event.timings, event.conditions, skipped
    raise AssertionError("rounds ended without its end event")  # pragma: no cover


def median_time(fn: Call, repeats: int) -> tuple[float, Any]:
    """Call ``fn`` once to warm up, then ``repeats`` times; return the median seconds and the last result."""
    timings, _, _ = time_calls({"fn": fn}, repeats)
    return timings["fn"].median, timings["fn"].result
