"""Running several algorithms side by side, and the session they live in (no Gradio here).

``start_columns`` makes one ``decoding.stream`` per selected algorithm on the same pair, prompt, seed
and sampling settings; ``advance`` moves every unfinished run forward by one step, so the columns
advance together, one target call at a time. A failing run becomes a message in its column; the
others go on.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import specviz
from specviz import decoding, interrupt, metrics, trace_io
from specviz.algorithms.registry import ALGORITHMS
from specviz.errors import SpecvizError
from specviz.export_tokens import tokens_csv
from specviz.models.loading import ModelPair
from specviz.trace import RunTrace, StepRecord
from specviz.ui.columns import column_colors, column_labels

_export_root: list[str] = []
_export_lock = threading.Lock()


def export_root() -> str:
    """This process's directory for exported traces: its own, private (mode 0700, made on first use in
    the system temp directory, removed at exit), not a name shared with other processes or users."""
    with _export_lock:
        if not _export_root or not os.path.isdir(_export_root[0]):
            import atexit

            path = tempfile.mkdtemp(prefix="specviz-traces-")
            atexit.register(shutil.rmtree, path, ignore_errors=True)
            _export_root[:] = [path]
        return _export_root[0]


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


EXPORT_MAX_AGE_S = 3600.0
_last_sweep = [0.0]


def sweep_exports(root: str | None = None, max_age_s: float = EXPORT_MAX_AGE_S, every_s: float = 600.0) -> int:
    """Delete exported traces older than ``max_age_s`` (at most once every ``every_s``), so a
    long-running public app does not fill its disk. Returns how many exports were removed."""
    root = root or export_root()
    now = time.time()
    if now - _last_sweep[0] < every_s:
        return 0
    _last_sweep[0] = now
    try:
        old = [d.path for d in os.scandir(root) if d.is_dir() and now - d.stat().st_mtime > max_age_s]
    except OSError:
        return 0
    for path in old:
        shutil.rmtree(path, ignore_errors=True)
    return sum(not os.path.exists(path) for path in old)


def stop_columns(cols: list[Column]) -> None:
    """Finish every column still running, marked ``stopped``."""
    for c in cols:
        if not c.done:
            finish(c)
            if c.trace is not None:
                c.trace.finish_reason = c.trace.finish_reason or "stopped"


def export_finished(cols: list[Column], quota: int | None = None) -> None:
    """Export every column that produced steps without an error and is not exported yet."""
    for c in cols:
        if c.trace is not None and c.trace.steps and not c.error and c.path is None:
            export(c, quota=quota)


def _dir_bytes(path: str) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(dirpath, f))
            except OSError:
                pass
    return total


def enforce_quota(root: str, max_bytes: int, keep: str | None = None, min_age_s: float = 0.0) -> int:
    """Delete the oldest folders under ``root`` (one export, or one Gradio upload, each) until they
    take at most ``max_bytes`` (``keep``, the export just written, goes last; folders younger than
    ``min_age_s`` stay, they may be in use). Returns how many were removed."""
    now = time.time()
    try:
        dirs = [(d.stat().st_mtime, d.path) for d in os.scandir(root) if d.is_dir()]
    except OSError:
        return 0
    young = {path for mtime, path in dirs if now - mtime < min_age_s}
    sizes = {path: _dir_bytes(path) for _, path in dirs}
    total = sum(sizes.values())
    removed = 0
    for _, path in sorted(dirs, key=lambda d: (d[1] == keep, d[0])):
        if total <= max_bytes:
            break
        if path in young:
            continue
        shutil.rmtree(path, ignore_errors=True)
        total -= sizes[path]
        removed += 1
    return removed


def start_quota_sweeper(root: str, max_bytes: int, every_s: float = 15.0, min_age_s: float = 5.0) -> threading.Event:
    """Keep ``root`` (the app's private Gradio directory: uploads, which Gradio takes without any event,
    and copies of served files) under ``max_bytes``, oldest first, every ``every_s`` seconds, in a
    daemon thread. Set the returned event to end it."""
    done = threading.Event()

    def loop() -> None:
        while not done.wait(every_s):
            try:
                enforce_quota(root, max_bytes, min_age_s=min_age_s)
            except Exception:  # noqa: BLE001 - a sweep that failed is tried again next time
                pass

    threading.Thread(target=loop, name="specviz-temp-quota", daemon=True).start()
    return done


EXPORT_NAME_CHARS = 80  # the file name's label part (a label can be any length: "k_config=000…4")


def export(col: Column, directory: str | None = None, quota: int | None = None) -> str | None:
    """Write the column's trace as JSON, gzip-compressed (``.json.gz``) when it is over
    ``trace_io.COMPRESS_OVER`` (a small one stays plain ``.json``, readable as it is); returns the path.
    With ``quota`` (bytes, all exports in the directory together), a file larger than the quota is not
    written, and older exports go first."""
    if col.trace is None:
        return None
    root = directory or export_root()
    if directory is None:
        sweep_exports(root)
    data, suffix = trace_io.for_download(col.trace.to_json(), trace_io.COMPRESS_OVER)
    if quota is not None and len(data) > quota:
        return None
    folder = os.path.join(root, uuid.uuid4().hex[:12])
    os.makedirs(folder, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", col.label).strip("_")[:EXPORT_NAME_CHARS] or col.algorithm
    path = os.path.join(folder, f"specviz-{safe}{suffix}")
    with open(path, "wb") as fh:
        fh.write(data)
    col.path = path
    write_tokens_csv(col, folder, safe)
    if quota is not None:
        enforce_quota(root, quota, keep=folder)
    return path


REPLAY_CSV_MAX_STEPS = 2000  # a longer replay offers its JSON only: its CSV would cost the first view ~0.5 s


def write_tokens_csv(col: Column, folder: str, safe: str) -> None:
    """The column's tokens, each with how it was produced, as CSV (``export_tokens.tokens_csv``) in the
    export's folder, so the quota counts it with the JSON."""
    if col.trace is None:
        return
    path = os.path.join(folder, f"specviz-{safe}.tokens.csv")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(tokens_csv(col.trace))
    col.csv_path = path


def export_copy(col: Column, source: str, quota: int | None = None) -> str | None:
    """A replayed column's download: the uploaded file itself, copied byte for byte into the export
    directory (``export`` would serialise the whole trace again: 16 s for a 12,000-step trace). Its
    metrics are the file's own; the page shows them recomputed (``metrics.read_metrics``). A gzip upload
    stays gzip, named ``.json.gz``."""
    root = export_root()
    sweep_exports(root)
    size = os.path.getsize(source)
    if quota is not None and size > quota:
        return None
    folder = os.path.join(root, uuid.uuid4().hex[:12])
    os.makedirs(folder, exist_ok=True)
    safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", col.label).strip("_")[:EXPORT_NAME_CHARS] or col.algorithm
    with open(source, "rb") as fh:
        suffix = ".json.gz" if fh.read(2) == trace_io.GZIP_MAGIC else ".json"
    path = os.path.join(folder, f"specviz-{safe}{suffix}")
    shutil.copyfile(source, path)
    col.path = path
    if col.trace is not None and len(col.trace.steps) <= REPLAY_CSV_MAX_STEPS:
        write_tokens_csv(col, folder, safe)
    if quota is not None:
        enforce_quota(root, quota, keep=folder)
    return path


def load_trace_file(path: str, max_bytes: int | trace_io.ReadBudget) -> RunTrace:
    """Read one uploaded trace (``.json`` or ``.json.gz``), refusing it with a clear message if it is too
    large, malformed or incoherent (``specviz.trace_check``); its metrics are recomputed from its steps
    (``RunTrace.from_json``'s one reading, ``metrics.read_metrics``). ``max_bytes``: the file's cap (its
    JSON then up to ``trace_io.MAX_JSON_BYTES`` once decompressed), or a ``trace_io.ReadBudget`` shared by the files of
    one replay, charged with the JSON this one held."""
    budget = (
        max_bytes
        if isinstance(max_bytes, trace_io.ReadBudget)
        else trace_io.ReadBudget(max_bytes, trace_io.MAX_JSON_BYTES, "the limit is {cap} MB")
    )
    name = os.path.basename(path)
    if budget.left <= 0:
        raise specviz.TraceFormatError(f"{name} was not read: {budget.says()}.")
    text = trace_io.read_trace_text(path, budget.file_bytes, min(budget.left, trace_io.MAX_JSON_BYTES), budget.says())
    budget.charge(len(text))
    try:
        return RunTrace.from_json(text)  # checked, metrics recomputed: the Python API's one reading
    except specviz.TraceFormatError as exc:
        raise specviz.TraceFormatError(f"{name}: {exc}") from exc


def columns_from_traces(traces: list[RunTrace]) -> list[Column]:
    """One finished column per replayed trace, marked ``replayed`` (its heading says it came from a file),
    labelled and coloured as configurations: two traces of one algorithm are two columns."""
    cols = [Column(t.algorithm, t.algorithm, dict(t.params or {}), trace=t, done=True, replayed=True) for t in traces]
    return label_columns(cols)


class Throttle:
    """When to send the next live update: at most every ``interval`` seconds, and never sooner than
    ``ratio`` times the last render took, so rendering (and Gradio's serialisation, about as long
    again) stays a small share of a run on a slow machine. ``clock`` is injectable (tests drive it)."""

    def __init__(self, interval: float, ratio: float = 8.0, clock: Callable[[], float] = time.monotonic):
        self.interval = interval
        self.ratio = ratio
        self.clock = clock
        self.last = float("-inf")
        self.render_s = 0.0

    def __call__(self, force: bool = False) -> bool:
        now = self.clock()
        if force or now - self.last >= max(self.interval, self.ratio * self.render_s):
            self.last = now
            return True
        return False

    def rendered(self, seconds: float) -> None:
        self.render_s = seconds


class FrameGate:
    """Which decoded steps a live run sends the page (issue 34): a new update only once the page has
    drawn the one before it, so a browser slower than decoding costs frames, never decoding time. The
    steps decoded meanwhile are not drawn and nothing is computed for them: the latest step wins (the
    trace keeps every step, for scrubbing). A report that never comes (lost) must not stall the page:
    past a patience of ``patience`` seconds, or twice the page's last draw if that is longer (a page
    drawing slowly is not sent updates faster than it draws them: they would pile up in it and come out
    in a burst), the next update goes anyway. A page that does not report (a script, an API client) is
    sent every update its caller's pacing or throttling allows. Pure: the caller passes what the page
    has reported and the time."""

    def __init__(self, patience: float):
        self.patience = patience
        self.sent_step: int | None = None
        self.sent_at = float("-inf")
        self.draw_s = 0.0  # how long the page took to draw the last update it reported

    def sent(self, step: int, now: float) -> None:
        """An update showing ``step`` went to the page at ``now``."""
        self.sent_step, self.sent_at = step, now

    def ready(self, drawn: int, reports: bool, now: float) -> bool:
        """Whether the next update may go: the page (``reports``: it reports at all) has drawn step
        ``drawn``, the last update sent showed ``sent_step``."""
        if self.sent_step is None or not reports:
            return True
        if drawn >= self.sent_step:
            if self.sent_at > float("-inf"):
                self.draw_s = max(0.0, now - self.sent_at)  # at most this long: it was drawn by now
            self.sent_at = float("-inf")  # counted once
            return True
        return now - self.sent_at >= max(self.patience, 2.0 * self.draw_s)


class RunControl:
    """A live run's Stop flag, shared by the run's generator and the Stop callback.

    The run checks ``stopped`` between steps and paces itself with ``pause`` (an ``Event.wait``, so a
    Stop ends a pause at once); it then shows what ran, marked "stopped", in its own last update.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.shown_step = -1  # the last step the page reported drawn (see ``PAGE_JS``, ``FrameGate``)
        self.page_reports = False  # whether the page reported in this run (a browser does; tests may not)

    def stop(self) -> None:
        self._event.set()

    def report_shown(self, step: int) -> None:
        """The page has drawn the update of ``step`` (its status line says so); a late report of an
        earlier step never moves it back."""
        with self._lock:
            self.page_reports = True
            self.shown_step = max(self.shown_step, step)

    def stopped(self) -> bool:
        return self._event.is_set()

    def pause(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True if stopped meanwhile."""
        return self._event.wait(seconds) if seconds > 0 else self._event.is_set()


class RunRegistry:
    """The runs going on, one per visitor (keyed by Gradio's session hash), for Stop to find."""

    def __init__(self) -> None:
        self._runs: dict[Any, RunControl] = {}
        self._lock = threading.Lock()

    def begin(self, key: Any) -> RunControl | None:
        """A control for a new run, or None if this visitor already has one going."""
        with self._lock:
            if key in self._runs:
                return None
            control = self._runs[key] = RunControl()
            return control

    def end(self, key: Any, control: RunControl) -> None:
        with self._lock:
            if self._runs.get(key) is control:
                del self._runs[key]

    def get(self, key: Any) -> RunControl | None:
        with self._lock:
            return self._runs.get(key)
