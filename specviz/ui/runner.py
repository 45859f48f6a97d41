"""Running several algorithms side by side, and the session they live in (no Gradio here).

``start_columns`` makes one ``decoding.stream`` per selected algorithm on the same pair, prompt, seed
and sampling settings; ``advance`` moves every unfinished run forward by one step, so the columns
advance together, one target call at a time. A failing run becomes a message in its column; the
others go on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import specviz
from specviz import decoding, interrupt, metrics
from specviz.algorithms.registry import ALGORITHMS
from specviz.errors import SpecvizError
from specviz.models.loading import ModelPair
from specviz.trace import RunTrace, StepRecord
from specviz.ui.columns import column_colors, column_labels


@dataclass
class Column:
    """One configuration's run (live or replayed) in one column of the page: an algorithm and its
    settings, labelled by what tells it apart from the other columns of that algorithm, in its own
    colour (``ui.columns``)."""

    label: str
    algorithm: str
    params: dict[str, Any] = field(default_factory=dict)
    color: str = ""  # the column's own colour (header chip, figure lines); "" = its algorithm's
    trace: RunTrace | None = None
    error: str | None = None
    done: bool = False
    path: str | None = None  # exported JSON, once finished
    csv_path: str | None = None  # its tokens with their provenance (export_tokens), beside the JSON
    pin: int | None = None  # the step this column shows regardless of the slider (after a run)
    selected: int | None = None  # the tree node whose distribution is shown (at the step shown)
    replayed: bool = False  # read from an uploaded file (``load_trace_file``): not run here
    shown: dict[str, tuple] = field(default_factory=dict)  # what each panel group on screen shows (ui.views)
    cache: dict[str, Any] = field(default_factory=dict, repr=False)  # a finished run's reused views (ui.stepcache)
    _it: Iterator[StepRecord] | None = field(default=None, repr=False)

    @property
    def n_steps(self) -> int:
        return len(self.trace.steps) if self.trace is not None else 0

    def step_shown(self, step: int) -> int:
        """The step (0-based) this column shows when the page is at ``step``: its pin, else ``step``
        clamped to the steps it has."""
        if self.pin is not None:
            return max(0, min(self.pin, self.n_steps - 1))
        return max(0, min(step, self.n_steps - 1))


@dataclass
class Session:
    """Per-visitor state (held in ``gr.State``): the chosen pair and the columns on screen.

    ``step`` is the step the visitor scrubbed to (0-based), or ``None`` to follow the latest step.
    """

    pair_key: str | None = None
    columns: list[Column] = field(default_factory=list)
    step: int | None = None
    running: bool = False
    source: str = ""  # "live" or "replay"
    run_id: int = 0
    pace: float = 0.0  # seconds per step the live run was paced at (0: unpaced)
    drawn_later: int | None = None  # the replay (its run_id) whose comparison a second event draws
    page_reports: bool = False  # the page reports what it has drawn (``PAGE_JS``): live updates wait for it
    columns_shown: int | None = None  # how many columns the page was last sent as visible (``ui.views``)

    @property
    def n_steps(self) -> int:
        return max((c.n_steps for c in self.columns), default=0)

    def view_step(self) -> int:
        """The step every column shows (0-based), clamped to what exists."""
        n = self.n_steps
        if n == 0:
            return 0
        if self.step is None:
            return n - 1
        return max(0, min(self.step, n - 1))

    def runs(self) -> list[tuple[str, RunTrace]]:
        """``(label, trace)`` per column with a trace, for the table and the figures: the label is the
        column's (``RunLabel``, carrying the column's colour)."""
        return [(RunLabel(c.label, c.color), c.trace) for c in self.columns if c.trace is not None]


def given_session(state: Any) -> Session | None:
    """``state`` if it is a visitor's ``Session``, else None: a handler's session input may be anything
    (an API client's value, a state Gradio dropped). The one place the app checks a session's type."""
    return state if isinstance(state, Session) else None


def visitor_session(state: Any, pair_key: str | None) -> Session:
    """The visitor's ``Session``, or a fresh one on ``pair_key`` for state of any other type."""
    session = given_session(state)
    return session if session is not None else Session(pair_key=pair_key)


class RunLabel(str):
    """A run's label that carries its column's colour: the comparison figures draw the run in it
    (``viz.compare.run_styles`` reads ``color``); anywhere else it is the label's text."""

    color: str

    def __new__(cls, text: str, color: str = "") -> "RunLabel":
        out = super().__new__(cls, text)
        out.color = color
        return out


def effective_params(algorithm: str, params: dict[str, Any]) -> dict[str, Any]:
    """The run's parameters that had an effect; all of them for an algorithm not registered here."""
    spec = ALGORITHMS.get(algorithm)
    return spec.effective(params) if spec is not None else dict(params)


def label_columns(cols: list[Column]) -> list[Column]:
    """Each column's label and colour, from all the columns' configurations (``ui.columns``)."""
    labels = column_labels([(c.algorithm, c.params) for c in cols])
    for c, label, color in zip(cols, labels, column_colors([c.algorithm for c in cols])):
        c.label, c.color = label, color
    return cols


def parse_prompt(pair: ModelPair, prompt: str) -> str | list[int]:
    """Text for a pair with a tokenizer; for a tokenizer-less pair, the token ids typed in the box."""
    if pair.tokenizer is not None:
        return prompt
    ids = re.findall(r"-?\d+", prompt or "")
    if not ids:
        raise specviz.PromptError("This pair has no tokenizer: type the prompt as token ids, e.g. 1 2 3.")
    return [int(i) for i in ids]


def start_columns(
    pair: ModelPair,
    prompt: str,
    algorithms: list[tuple[str, dict[str, Any]]],
    *,
    max_new_tokens: int,
    temperature: float,
    top_p: float,
    top_k: int,
    seed: int,
    chat: bool = False,
) -> list[Column]:
    """One column per ``(algorithm, params)`` (an algorithm may come several times, with other settings),
    labelled and coloured as configurations (``label_columns``); argument errors end up in the column's
    ``error``."""
    cols: list[Column] = []
    parsed: str | list[int] | None = None
    prompt_error: str | None = None
    try:
        parsed = parse_prompt(pair, prompt)
    except SpecvizError as exc:
        prompt_error = str(exc)
    for algo, params in algorithms:
        col = Column(algo, algo, params)
        if prompt_error is not None:
            col.error, col.done = prompt_error, True
        else:
            try:
                live = decoding.stream(
                    pair,
                    algo,
                    prompt=parsed,
                    max_new_tokens=max_new_tokens,
                    temperature=temperature,
                    top_p=top_p,
                    top_k=top_k,
                    seed=seed,
                    chat=chat,
                    **effective_params(algo, params),
                )  # a hidden control's value: not sent
                col.trace = live.trace
                col.params = dict(live.params)
                col._it = iter(live)
            except SpecvizError as exc:
                col.error, col.done = str(exc), True
        cols.append(col)
    return label_columns(cols)


def _fail(col: Column, exc: BaseException) -> None:
    if isinstance(exc, SpecvizError):
        col.error = str(exc)
    elif "out of memory" in str(exc).lower():
        col.error = "Out of memory during decoding: ask for fewer tokens, fewer algorithms at once, or a smaller pair."
    else:
        col.error = f"Unexpected error in {col.algorithm}: {type(exc).__name__}: {exc}"
    col.done = True
    col._it = None


def finish(col: Column) -> None:
    """Final metrics: wall time is the sum of the run's own step times, because side-by-side runs are
    interleaved and the time between two of its steps belongs to the other runs (and to rendering)."""
    col.done = True
    col._it = None
    if col.trace is not None:
        col.trace.metrics = metrics.summarize(col.trace)


def advance(cols: list[Column], should_stop: Callable[[], bool] | None = None) -> bool:
    """One step for every unfinished column; returns whether any column is still running.
    ``should_stop`` is asked before each column's step, so a Stop waits for one step, not a round."""
    for col in cols:
        if col.done or col._it is None:
            continue
        if should_stop is not None and should_stop():
            break
        try:
            with interrupt.checking(should_stop):  # long setup (Sequoia's calibration) checks it too
                next(col._it)
        except StopIteration:
            finish(col)
        except Exception as exc:  # noqa: BLE001 - shown in the column, the other runs continue
            _fail(col, exc)
    return any(not c.done for c in cols)


def stop_columns(cols: list[Column]) -> None:
    """Finish every column still running, marked ``stopped``."""
    for c in cols:
        if not c.done:
            finish(c)
            if c.trace is not None:
                c.trace.finish_reason = c.trace.finish_reason or "stopped"


def columns_from_traces(traces: list[RunTrace]) -> list[Column]:
    """One finished column per replayed trace, marked ``replayed`` (its heading says it came from a file),
    labelled and coloured as configurations: two traces of one algorithm are two columns."""
    cols = [Column(t.algorithm, t.algorithm, dict(t.params or {}), trace=t, done=True, replayed=True) for t in traces]
    return label_columns(cols)
