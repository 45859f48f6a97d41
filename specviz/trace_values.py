"""The value checks a trace's fields are held to, one field at a time: each raises ``TraceFormatError``
with a sentence naming the field's path and what is allowed there. ``trace_check`` checks a whole trace
with them; each typed step state checks its own values with them (``ControllerState.check_values``,
``specviz.step_state``). No torch here: part of the light face.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from specviz import validation
from specviz.errors import TraceFormatError

PROB_SLACK = 1e-3  # float32 sums over a vocabulary may land just above 1
MAX_INT = 2**31 - 1  # node ids, call counts, token ids of an unknown vocabulary: sums stay in 64 bits
MAX_JSON_INT = 2**53  # a whole number in a settings / controller object: what the page's JavaScript holds
# the bounds a replayed trace is held to (``trace_check``): its work stays linear and bounded
MAX_STEPS = 100_000  # a 64 MB trace of 1-token steps has about this many
MAX_ITEMS = 20_000  # nodes / committed tokens / positions a step (mcsd drafts at most 1024 + 1)
MAX_POSITION_IDS = 8_192  # ids a position records (top-k of p and q <= 2 x 256, plus the candidates)
MAX_ROOT = 4_096  # tree / beam index (beam width <= 32, dsbd <= 16, batch_sd <= 16 drafts)
MAX_BEAM_DEPTH = 64  # a beam / dsbd forest's depth (dsbd gamma <= 16); viz.beams lays it out recursively
MAX_MS = 1e12  # a step time (ms; about 30 years): sums over MAX_STEPS steps stay finite
MAX_LENS_LAYERS = 256  # rows of a step's logit lens (models.logit_lens shows at most 48)
MAX_LENS_POSITIONS = 64  # columns of a step's logit lens (models.logit_lens records at most 16)
MAX_LAYER = 10_000  # a target's depth
MAX_NAME = 1_000  # characters of a drafter's kind or name (a draft model's name may be a long path)


def _refuse(path: str, allowed: str, value: Any) -> TraceFormatError:
    return TraceFormatError(f"Malformed trace: {path} must be {allowed}, got {validation.shown(value)}.")


def _is_whole(x: Any) -> bool:
    kind = type(x)  # the exact types JSON gives first: an abc isinstance is slow, and a trace has millions
    if kind is int:
        return True
    if kind is float or kind is bool:
        return False
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_real(x: Any) -> bool:
    kind = type(x)
    if kind is float or kind is int:
        return True
    if kind is bool:
        return False
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _finite_ok(x: Any) -> bool:
    try:
        return _is_real(x) and math.isfinite(x)
    except OverflowError:  # an integer past a float's range
        return False


def whole(path: str, x: Any, lo: int = 0, hi: int | None = None) -> int:
    """``x`` if it is a whole number in [lo, hi) (``hi`` exclusive; None: no bound)."""
    if not _is_whole(x) or x < lo or hi is not None and x >= hi:
        span = f"in [{lo}, {hi - 1}]" if hi is not None else f">= {lo}"
        raise _refuse(path, f"a whole number {span}", x)
    return int(x)


def finite(path: str, x: Any, lo: float | None = 0.0, hi: float | None = None) -> float:
    """``x`` if it is a finite number in [lo, hi] (None: no bound that side)."""
    ok = _finite_ok(x) and (lo is None or x >= lo) and (hi is None or x <= hi)
    if not ok:
        span = (
            f" in [{lo:g}, {hi:g}]"
            if lo is not None and hi is not None
            else f" >= {lo:g}"
            if lo is not None
            else f" <= {hi:g}"
            if hi is not None
            else ""
        )
        raise _refuse(path, f"a finite number{span}", x)
    return float(x)


def _prob_ok(x: Any) -> bool:
    return _is_real(x) and 0.0 <= x <= 1.0 + PROB_SLACK  # NaN fails both comparisons


def prob(path: str, x: Any, optional: bool = True) -> None:
    """A probability: a finite number in [0, 1] (null allowed when ``optional``)."""
    if x is None and optional:
        return
    if not _prob_ok(x):
        raise _refuse(path, "a probability (a finite number in [0, 1])" + (" or null" if optional else ""), x)


def probs(path: str, xs: Any, n: int | None = None, optional: bool = True) -> None:
    """A list of probabilities (of length ``n`` when given), or null when ``optional``."""
    if xs is None and optional:
        return
    if not isinstance(xs, list):
        raise _refuse(path, "a list of probabilities" + (" or null" if optional else ""), xs)
    if n is not None and len(xs) != n:
        raise TraceFormatError(f"Malformed trace: {path} has {len(xs)} entries; it must have one per id ({n}).")
    if not all(map(_prob_ok, xs)):
        i = next(i for i, x in enumerate(xs) if not _prob_ok(x))
        prob(f"{path}[{i}]", xs[i], optional=False)


def _mass_ok(x: Any) -> bool:
    return _is_real(x) and 0.0 <= x <= 2.0 + PROB_SLACK


def residual_values(path: str, xs: Any, n: int) -> None:
    """A position's ``residual`` (or null): ``n`` numbers in [0, 2]. Not [0, 1]: until 2026-11-26 the
    recorded residual was ``max(0, p - q)`` divided by the step's TV, ``0.5 * sum |p - q|``, which is at
    least half of any one difference but, when p and q differ only by float noise (eesd's draft), not
    always all of it; exports of then hold 1.54 there and still replay. It is now divided by
    ``sum max(0, p - q)``, its own total."""
    if xs is None:
        return
    if not isinstance(xs, list) or len(xs) != n or not all(map(_mass_ok, xs)):
        bad = next((i for i, x in enumerate(xs) if not _mass_ok(x)), None) if isinstance(xs, list) else None
        if bad is not None:
            raise _refuse(f"{path}[{bad}]", "a number in [0, 2]", xs[bad])
        raise _refuse(path, f"a list of {n} numbers in [0, 2] (one per id) or null", xs)


def token_ids(path: str, ids: Any, vocab: int | None) -> None:
    """A list of token ids: whole numbers >= 0 (below ``vocab`` when known)."""
    if not isinstance(ids, list):
        raise _refuse(path, "a list of token ids", ids)
    hi = vocab if vocab is not None else MAX_INT + 1
    if not all(_is_whole(i) and 0 <= i < hi for i in ids):
        j = next(j for j, i in enumerate(ids) if not (_is_whole(i) and 0 <= i < hi))
        whole(f"{path}[{j}]", ids[j], 0, hi)


def text(path: str, s: Any, optional: bool = False) -> None:
    """A string that encodes as UTF-8 (JSON allows lone surrogates like \\ud800; no page can show them)."""
    if s is None and optional:
        return
    if not isinstance(s, str):
        raise _refuse(path, "a string" + (" or null" if optional else ""), s)
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise TraceFormatError(
                f"Malformed trace: {path} holds an unpaired surrogate (\\ud800-\\udfff), which is no character."
            ) from None


def plain_json(path: str, value: Any) -> None:
    """Inside a free-form object (settings, controller state): every string (keys included) encodes as
    UTF-8 and every whole number is within +-2**53 (a figure's JSON refuses integers past 64 bits, the
    page's JavaScript holds 53 exactly). Iterative, any depth."""
    stack = [(path, value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, str):
            text(where, v)
        elif _is_whole(v):
            if abs(v) > MAX_JSON_INT:
                raise _refuse(where, "a whole number within +-2**53", v)
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(k, str):
                    text(f"{where} (a key)", k)
                stack.append((f"{where}.{k}", x))
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", x) for i, x in enumerate(v))


def _count(path: str, items: list, limit: int, what: str) -> None:
    if len(items) > limit:
        raise TraceFormatError(f"Malformed trace: {path} has {len(items)} {what}; a replay reads at most {limit}.")
