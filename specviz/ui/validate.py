"""The sampling inputs checked as typed: each problem is a sentence shown in the page (no Gradio here).

``check_inputs`` is called both when an input changes (the message appears under the inputs) and
by Run (which refuses with the same sentences), so the page and the server agree on what is valid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from specviz.validation import MAX_SEED as SEED_MAX  # the API's range: one number for both
from specviz.validation import whole_text


@dataclass
class Checked:
    """The inputs as numbers where they are valid, and one sentence per problem."""

    max_new_tokens: int | None = None
    top_k: int | None = None
    seed: int | None = None
    prompt_tokens: int | None = None
    max_new_limit: int | None = None  # context - prompt tokens (capped by the app's limit)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


EXACT_FLOAT = 2**53  # a float above it may be a rounded neighbour of the number meant


def whole_number(raw: Any, text: bool = True) -> int | None:
    """``raw`` as an int if it is a finite whole number (Gradio sends floats for Number boxes) or, with
    ``text`` (the seed's text box), text of one in ASCII digits (``validation.whole_text``: not "1_000",
    "+4", "1e3" or other scripts' digits; spaces around it are the box's), else None."""
    if raw is None or isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return int(raw) if math.isfinite(raw) and raw.is_integer() else None
    if isinstance(raw, str) and text:
        return whole_text(raw.strip())
    return None


def check_seed(raw: Any) -> tuple[int | None, str | None]:
    """The seed as an int, exactly: the page's seed box is text (a JavaScript number holds whole numbers
    exactly only up to 2^53: 9007199254740993 became ...992 and 2^63 − 1 became 9223372036854776000,
    over the range), parsed here in digits; an API client's int is taken as it is. A float is taken only
    where it is a whole number of at most 2^53, which it holds exactly; above that it may already be
    another number than the one meant, so it is refused with a sentence saying to send the digits."""
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer() and abs(raw) > EXACT_FLOAT:
        return None, (
            f"seed must be a whole number from 0 to {SEED_MAX} (2^63 − 1), sent as an integer or as "
            f"text in digits; got the floating-point number {_shown(raw)}, which holds whole numbers "
            "exactly only up to 2^53."
        )
    v = whole_number(raw)
    if v is None or not 0 <= v <= SEED_MAX:
        return None, f"seed must be a whole number from 0 to {SEED_MAX} (2^63 − 1); got {_shown(raw)}."
    return v, None


def _as_text(raw: Any) -> str:
    """What a number box's refusal adds when it was sent text (an API client's "64"): a number box takes numbers."""
    return ", sent as a number, not as text" if isinstance(raw, str) and raw.strip() else ""


def check_top_k(raw: Any) -> tuple[int | None, str | None]:
    v = whole_number(raw, text=False)
    if v is None or v < 0:
        return None, f"top-k must be 0 (off) or a positive whole number{_as_text(raw)}; got {_shown(raw)}."
    return v, None


def check_pace(raw: Any, most: float) -> tuple[float, str | None]:
    """The pace in seconds per step (None: unpaced, as an emptied box), or a sentence: from 0 to ``most``."""
    if raw is None:
        return 0.0, None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw) and 0 <= raw <= most:
        return float(raw), None
    return 0.0, f"pace must be a number of seconds per step from 0 to {most:g}; got {_shown(raw)}."


def max_new_limit(context_length: int | None, prompt_tokens: int | None, cap: int) -> int:
    """The most new tokens a run may ask for: the pair's context minus the prompt, and the app's cap."""
    if context_length is None:
        return cap
    return max(0, min(cap, context_length - (prompt_tokens or 0)))


def check_inputs(
    max_new_tokens: Any,
    top_k: Any,
    seed: Any,
    *,
    cap: int,
    context_length: int | None = None,
    prompt_tokens: int | None = None,
) -> Checked:
    """Every sampling input at once; ``prompt_tokens`` and ``context_length`` come from the loaded pair."""
    out = Checked(prompt_tokens=prompt_tokens)
    out.seed, problem = check_seed(seed)
    if problem:
        out.problems.append(problem)
    out.top_k, problem = check_top_k(top_k)
    if problem:
        out.problems.append(problem)
    limit = max_new_limit(context_length, prompt_tokens, cap)
    out.max_new_limit = limit
    n = whole_number(max_new_tokens, text=False)
    if n is None or n < 1:
        out.problems.append(
            f"max new tokens must be a whole number of at least 1{_as_text(max_new_tokens)}; "
            f"got {_shown(max_new_tokens)}."
        )
    elif n > limit:
        if context_length is not None and context_length - (prompt_tokens or 0) <= cap:
            why = (
                f"the pair's context is {context_length} tokens and the prompt takes {prompt_tokens}, "
                f"so at most {limit} new tokens fit"
            )
        else:
            why = f"this app allows at most {limit}"
        out.problems.append(f"max new tokens is {n}, but {why}.")
    else:
        out.max_new_tokens = n
    return out


def _shown(raw: Any) -> str:
    if raw is None or raw == "":
        return "nothing"
    if isinstance(raw, int) and not isinstance(raw, bool) and len(str(raw)) <= 24:
        return str(raw)
    if isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw) and abs(raw) >= 1e19:
        return f"{raw:.3g}"  # 1e+30, not the 31 digits of its float
    if isinstance(raw, float) and raw.is_integer():
        return str(int(raw))
    text = repr(raw) if isinstance(raw, str) else str(raw)
    return text if len(text) <= 40 else text[:37] + "…"
