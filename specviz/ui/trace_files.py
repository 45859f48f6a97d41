"""The trace files a visitor downloads and uploads (no Gradio here): each finished column exported as
JSON (gzip when large) with its tokens as CSV, in this process's private directory under a byte quota
and an age limit; an uploaded trace read within a byte budget and checked before it is shown."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
import uuid

import specviz
from specviz import trace_io
from specviz.export_tokens import tokens_csv
from specviz.trace import RunTrace
from specviz.ui.runner import Column

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


def _new_folder(root: str, col: Column) -> tuple[str, str]:
    """A fresh folder for one export under ``root``, and the column's label made safe for a file name."""
    folder = os.path.join(root, uuid.uuid4().hex[:12])
    os.makedirs(folder, exist_ok=True)
    return folder, re.sub(r"[^A-Za-z0-9_.=-]+", "_", col.label).strip("_")[:EXPORT_NAME_CHARS] or col.algorithm


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
    folder, safe = _new_folder(root, col)
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
    folder, safe = _new_folder(root, col)
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
