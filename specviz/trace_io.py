"""Trace files: plain JSON (``.json``) or gzip-compressed JSON (``.json.gz``), written and read with bounds.

A long run's trace is large (a 12,000-step trace is 35 to 43 MB of JSON) and gzip makes it about a fifth
of that (7.8 MB of 35 MB, level 6, 1.8 s on a busy 2-core machine), so the app offers a trace over
``COMPRESS_OVER`` bytes of JSON as ``.json.gz`` and the CLI writes gzip when ``--out`` ends in ``.gz``;
everything that reads a trace takes either (by its content: gzip data starts with ``1f 8b``, whatever
the file's name).

Reading is bounded twice: the file's own size (``max_bytes``: what was uploaded, compressed or not) and
the JSON it holds (``max_json_bytes``: for a gzip file, counted as it is decompressed). A gzip file is
inflated in chunks of at most ``CHUNK`` bytes and abandoned as soon as it passes the limit, so a small
file that would inflate to gigabytes (a "zip bomb") costs the memory of ``max_json_bytes`` (within twice
it, with the buffer's growth) and the time to inflate that much, and is refused with a sentence naming
the limit. A truncated or damaged gzip file (bad header, bad data, CRC or length mismatch) is refused
with a sentence, never a traceback.
"""

from __future__ import annotations

import gzip
import os
import zlib
from typing import Any

from specviz.errors import TraceFormatError
from specviz.metrics import read_metrics
from specviz.trace import MAX_TRACE_BYTES, READ_CHECKS, RunTrace
from specviz.trace_check import check_trace

GZIP_MAGIC = b"\x1f\x8b"
COMPRESS_OVER = 1024 * 1024  # the app's download of a trace is gzip-compressed above this many bytes of JSON
COMPRESS_LEVEL = 6  # zlib's default: a trace's JSON to about a fifth (level 9: 2% smaller, 3x slower)
CHUNK = 1024 * 1024  # most bytes one read inflates (the last asks for one byte past the limit)
MAX_JSON_BYTES = MAX_TRACE_BYTES  # RunTrace.from_json's own limit


def mb(n: int | float) -> str:
    """``n`` bytes in MB (2**20 bytes, as the app's limits are given), e.g. "5", "0.3", "43.2"."""
    value = n / 2**20
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"


def is_gzip_name(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path).lower().endswith(".gz")


def encode(text: str, compress: bool) -> bytes:
    """``text`` (a trace's JSON) as the bytes of a ``.json`` file, or of a ``.json.gz`` file when
    ``compress`` (no file name or time in the gzip header, so the same trace gives the same bytes)."""
    data = text.encode("utf-8")
    return gzip.compress(data, compresslevel=COMPRESS_LEVEL, mtime=0) if compress else data


def for_download(text: str, compress_over: int | None = COMPRESS_OVER) -> tuple[bytes, str]:
    """A trace's JSON as the app offers it: the bytes and the file name's suffix, ``.json.gz`` when
    the JSON is over ``compress_over`` bytes (None: never), else ``.json`` (small traces stay readable)."""
    compress = compress_over is not None and len(text) > compress_over
    return encode(text, compress), ".json.gz" if compress else ".json"


def save_trace(trace: RunTrace, path: str | os.PathLike[str], compress: bool | None = None) -> str:
    """Write ``trace`` (a ``RunTrace``) to ``path`` as JSON, gzip-compressed when ``compress`` (None:
    when the name ends in ``.gz``). Returns the path."""
    path = os.fspath(path)
    data = encode(trace.to_json(), is_gzip_name(path) if compress is None else compress)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def read_trace_text(
    path: str | os.PathLike[str],
    max_bytes: int | None = None,
    max_json_bytes: int = MAX_JSON_BYTES,
    json_limit_says: str | None = None,
) -> str:
    """The JSON text of the trace file at ``path`` (plain or gzip, by its content). Refuses, with a
    ``TraceFormatError`` naming the file and the limit: a file over ``max_bytes`` (None: no limit; a
    gzip file counts compressed), JSON over ``max_json_bytes`` (a gzip file counts decompressed, read
    no further than the limit), gzip data that is truncated or damaged, a ``.gz`` name over data that
    is not gzip, and text that is not UTF-8. ``json_limit_says``: the sentence that explains
    ``max_json_bytes`` (default: "the limit is N MB")."""
    path = os.fspath(path)
    name = os.path.basename(path)
    size = os.path.getsize(path)
    if max_bytes is not None and size > max_bytes:
        raise TraceFormatError(
            f"{name} is {mb(size)} MB; this app accepts traces up to {mb(max_bytes)} MB a file, a .json.gz "
            "counted compressed (gzip makes a trace's JSON about a fifth of its size)."
        )
    says = json_limit_says or f"the limit is {mb(max_json_bytes)} MB"
    with open(path, "rb") as fh:
        compressed = fh.read(2) == GZIP_MAGIC
        fh.seek(0)
        if compressed:
            raw = _inflate(fh, name, max_json_bytes, says)
        elif is_gzip_name(path):
            raise TraceFormatError(f"{name} is named .gz but is not gzip-compressed data.")
        else:
            raw = fh.read(max_json_bytes + 1)
            if len(raw) > max_json_bytes:
                raise TraceFormatError(f"{name} holds more than {mb(max_json_bytes)} MB of JSON; {says}.")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        what = "does not hold a text (UTF-8 JSON) file" if compressed else "is not a text (UTF-8 JSON) file"
        raise TraceFormatError(f"{name} {what}.") from exc


def _inflate(fh: Any, name: str, limit: int, says: str) -> bytearray:
    """``fh``'s gzip data decompressed, at most ``limit`` bytes of it (every member, CRC and length
    checked by ``gzip``); each read inflates at most ``CHUNK`` bytes, so memory stays within the limit."""
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
            while True:
                piece = gz.read(min(CHUNK, limit + 1 - len(out)))
                if not piece:
                    return out
                out += piece
                if len(out) > limit:
                    raise TraceFormatError(
                        f"{name} holds more than {mb(limit)} MB of JSON once decompressed, so it was not "
                        f"read further; {says}."
                    )
    except EOFError as exc:  # the stream ends before its end-of-stream marker
        raise TraceFormatError(
            f"{name} is a truncated gzip file (it ends before its compressed data "
            "does); export or compress the trace again."
        ) from exc
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise TraceFormatError(f"{name} is a damaged gzip file ({exc}); export or compress the trace again.") from exc
    except OSError as exc:
        raise TraceFormatError(f"{name} could not be read ({exc.strerror or exc}).") from exc


class ReadBudget:
    """The limits of several reads together (one replay's files): each file up to ``file_bytes`` as
    stored (a gzip file counted compressed), and ``json_bytes`` of JSON in all, decompressed; each read
    gets what is left (``left``) and uses it up (``charge``). ``says``: the sentence naming the limit."""

    def __init__(
        self,
        file_bytes: int | None,
        json_bytes: int,
        what: str = "this app reads at most {cap} MB of trace JSON in one replay (all its files "
        "together, decompressed)",
    ):
        self.file_bytes, self.json_bytes, self.what, self.used = file_bytes, json_bytes, what, 0

    @property
    def left(self) -> int:
        return max(0, self.json_bytes - self.used)

    def charge(self, n: int) -> None:
        self.used += n

    def says(self) -> str:
        said = self.what.format(cap=mb(self.json_bytes))
        return said + (f", and the files before it hold {mb(self.used)} MB" if self.used else "")


def load_trace(
    path: str | os.PathLike[str], max_bytes: int | None = None, max_json_bytes: int = MAX_JSON_BYTES
) -> RunTrace:
    """The ``RunTrace`` in the ``.json`` or ``.json.gz`` file at ``path`` (``read_trace_text``'s limits,
    then ``RunTrace.from_json``'s reading: the schema, ``trace_check.check_trace`` and the metrics
    recomputed, as the app's replay reads it)."""
    return RunTrace.from_json(read_trace_text(path, max_bytes, max_json_bytes))


def checked_reading(trace: RunTrace) -> RunTrace:
    """What ``RunTrace.from_json`` / ``from_dict`` do after the schema (``trace.READ_CHECKS``): the values
    checked (``trace_check.check_trace``) and the metrics recomputed from the steps (``metrics.read_metrics``:
    a file's "NaN" tau or negative count is never read)."""
    check_trace(trace)
    trace.metrics = read_metrics(trace)
    return trace


READ_CHECKS.append(checked_reading)  # registered once, on import (``specviz`` imports this module)
