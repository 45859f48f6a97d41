"""Reading JSON fast: ``loads`` (``json.loads``'s values and errors in about half the time on a large
trace, through orjson where it reads exactly what json reads) and ``gc_paused`` (the cyclic collector
paused while a large trace is read, checked or first drawn). Used by ``RunTrace.from_json`` and the
replay."""

from __future__ import annotations

import contextlib
import gc
import json
import threading
from typing import Any, Iterator

_ORJSON_DEPTH = 1024  # how deep orjson reads since 3.9.15; older releases recurse without a bound


def _bounded(module: Any) -> bool:
    """Whether ``module.loads`` refuses JSON nested past ``_ORJSON_DEPTH`` (an older orjson reads any depth,
    so what it returns could be deeper than anything here can walk)."""
    deep = _ORJSON_DEPTH + 1
    try:
        module.loads(b"[" * deep + b"]" * deep)
    except ValueError:
        return True
    except RecursionError:  # pragma: no cover - not an orjson
        pass
    return False


try:  # gradio depends on orjson: about twice as fast as json.loads on a large trace
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None
if _orjson is not None and not _bounded(_orjson):  # pragma: no cover - an orjson older than 3.9.15
    _orjson = None

# ``loads``' scan for an integer literal of 19 digits or more (outside 64 bits, where orjson would give a
# float): digits -> "0", what may come before a number (whitespace, ":", ",", "[") and "-" -> " ",
# anything else -> "x". A float's digits follow "." or "e"; a string's may match too (then json.loads).
_DIGITS = bytes(48 if chr(c).isdigit() and c < 128 else 32 if chr(c) in " \t\n\r:,[-" else 120 for c in range(256))
_BIG_INT = b" " + b"0" * 19


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads(text)``, the same values (types, key order, floats to the bit) and the same errors, in
    about half the time on a large trace: orjson parses what it parses exactly as json does, and
    everything else goes to ``json.loads`` (which then decides, and says what is wrong): what orjson
    refuses (NaN, Infinity, 1e999, lone surrogates, nesting past 1024, not UTF-8, a UTF-16 file) and
    any integer literal of 19 digits or more, which orjson would read as a float (found by a scan in C:
    ``_DIGITS``; a long digit run inside a string only costs the slower parse). One difference: text
    nested deeper than ``json.loads`` recurses (Python's recursion limit, less the caller's stack) but at
    most 1024 levels is read, not refused; callers bound the depth they accept (``json_values``). An
    orjson that reads any depth (before 3.9.15) is not used."""
    if _orjson is None:
        return json.loads(text)
    try:
        raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    except UnicodeEncodeError:  # a lone surrogate in the text itself
        return json.loads(text)
    if _BIG_INT not in b" " + raw[:24].translate(_DIGITS) and _BIG_INT not in raw.translate(_DIGITS):
        try:
            return _orjson.loads(raw)
        except ValueError:  # orjson.JSONDecodeError
            pass
    return json.loads(text)


_gc_lock = threading.Lock()
_gc_state = {"depth": 0, "was_enabled": False}


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a large trace is read, checked or first drawn (issue #23).

    Reading a 12,000-step trace makes some 400,000 containers; every 700 of them the collector runs, and
    every so often it walks them all, which took a third of an upload's time. Nothing read or built here
    makes a cycle, so nothing is lost by collecting once afterwards, as the collector then does on its
    own. Nested and concurrent uses (two uploads at once) share one pause: the collector is enabled again
    when the last one ends, if it was enabled when the first began."""
    with _gc_lock:
        if _gc_state["depth"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["depth"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["depth"] -= 1
            if _gc_state["depth"] == 0 and _gc_state["was_enabled"]:
                gc.enable()
