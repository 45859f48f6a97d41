"""Everything computed from a trace. Each number carries its definition (shown next to it in the app).

This module is the one place tau, the acceptance rate and tokens/s are defined; other layers read
``RunTrace.metrics`` or call these functions. Conventions: a *target call* is one forward of the
target, counted by the engine where it happens (``StepRecord.target_calls``; the prompt is processed
inside the first one). *tau* (mean accepted length, "block efficiency",
"compression ratio") counts the bonus/resampled token: ``new_tokens / target_calls``, 1 for ``ar``.
*Acceptance rate* is ``accepted draft tokens / drafted tokens``; for trees the denominator is every
drafted node, so a wide tree has a low rate even when tau is high.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from specviz.trace import RunTrace, StepRecord

DEFINITIONS: dict[str, str] = {
    "new_tokens": "tokens generated (prompt excluded, EOS included)",
    "steps": "decoding steps (verification rounds)",
    "target_calls": "target forward calls (the prompt is processed inside the first)",
    "draft_calls": "draft forward calls",
    "tau": "mean accepted length = new tokens / target calls (counts the bonus or resampled token; 1 for ar)",
    "drafted": "draft tokens proposed (every node of every step's tree or forest)",
    "accepted": "draft tokens accepted",
    "acceptance_rate": "accepted draft tokens / drafted tokens",
    "wall_time_s": "wall-clock seconds of the decoding loop (tokenization excluded)",
    "tokens_per_s": "new tokens / wall time",
    "speedup": "tokens/s of this run / tokens/s of ar on the same pair, prompt and settings",
}


def target_calls(steps: list[StepRecord]) -> int:
    """Target forward calls over ``steps``."""
    return sum(s.target_calls for s in steps)


def tau(new_tokens: int, calls: int) -> float:
    """Mean accepted length: tokens per target call (bonus/resampled token included); 0 with no call."""
    return new_tokens / calls if calls else 0.0


def acceptance_rate(steps: list[StepRecord]) -> float | None:
    """Accepted draft tokens / drafted tokens over ``steps`` (None when nothing was drafted)."""
    drafted = sum(s.n_drafted for s in steps)
    return sum(s.n_accepted for s in steps) / drafted if drafted else None


def tokens_per_s(new_tokens: int, wall_time_s: float) -> float:
    """Tokens per wall-clock second (0 for a zero duration)."""
    return new_tokens / wall_time_s if wall_time_s > 0 else 0.0


def summarize(trace: RunTrace, wall_time_s: float | None = None) -> dict[str, Any]:
    """The run-level metrics stored in ``RunTrace.metrics`` (see ``DEFINITIONS``)."""
    new_tokens = len(trace.output_ids)
    calls = target_calls(trace.steps)
    if wall_time_s is None:
        wall_time_s = sum(s.timings.get("total_ms", 0.0) for s in trace.steps) / 1000
    return {
        "new_tokens": new_tokens,
        "steps": len(trace.steps),
        "target_calls": calls,
        "draft_calls": sum(s.draft_calls for s in trace.steps),
        "tau": tau(new_tokens, calls),
        "drafted": sum(s.n_drafted for s in trace.steps),
        "accepted": sum(s.n_accepted for s in trace.steps),
        "acceptance_rate": acceptance_rate(trace.steps),
        "wall_time_s": wall_time_s,
        "tokens_per_s": tokens_per_s(new_tokens, wall_time_s),
        "draft_ms": sum(s.timings.get("draft_ms", 0.0) for s in trace.steps),
        "verify_ms": sum(s.timings.get("verify_ms", 0.0) for s in trace.steps),
    }


def tokens_per_step(trace: RunTrace) -> list[int]:
    """Committed tokens per step (accepted drafts + the resampled/bonus token)."""
    return [len(s.committed) for s in trace.steps]


def accepted_per_step(trace: RunTrace) -> list[int]:
    """Accepted draft tokens per step."""
    return [s.n_accepted for s in trace.steps]


def cumulative_tokens(trace: RunTrace) -> list[int]:
    """Tokens generated after each target call (x = call number)."""
    out, total = [], 0
    for s in trace.steps:
        total += len(s.committed)
        out.append(total)
    return out


def cumulative_target_calls(trace: RunTrace) -> list[int]:
    """Target calls made up to and including each step (the x axis of ``cumulative_tokens``)."""
    out, total = [], 0
    for s in trace.steps:
        total += s.target_calls
        out.append(total)
    return out


def acceptance_histogram(trace: RunTrace) -> dict[int, int]:
    """Steps by number of accepted draft tokens (vLLM's ``acceptance_histogram``)."""
    return dict(sorted(Counter(accepted_per_step(trace)).items()))


def speedup(trace: RunTrace, baseline: RunTrace) -> float | None:
    """tokens/s of ``trace`` over tokens/s of ``baseline`` (normally ``ar``)."""
    base = baseline.metrics.get("tokens_per_s") or 0.0  # both read from RunTrace.metrics (``summarize``)
    return trace.metrics.get("tokens_per_s", 0.0) / base if base else None


def expected_tau_iid(alpha: float, gamma: int) -> float:
    """Expected tokens per step for chain SD with i.i.d. acceptance ``alpha`` (Leviathan et al. Eq. 1):
    ``(1 - alpha**(gamma + 1)) / (1 - alpha)``."""
    if alpha >= 1.0:
        return gamma + 1.0
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)
