"""Everything computed from a trace. Each number carries its definition (shown next to it in the app).

This module is the one place tau, the acceptance rate and tokens/s are defined; other layers read
``RunTrace.metrics`` or call these functions. Conventions: a *target call* is one forward of the
target, counted by the engine where it happens (``StepRecord.target_calls``; the prompt is processed
inside the first one). *tau* (mean accepted length, "block efficiency",
"compression ratio") counts the bonus/resampled token: ``new_tokens / target_calls``, 1 for ``ar``.
*Acceptance rate* is ``accepted draft tokens / drafted tokens``; for trees the denominator is every
drafted node, so a wide tree has a low rate even when tau is high. The *per-position acceptance*
(``acceptance_per_position``) is P(draft position i accepted | position i reached), the serving
engines' per-position counts (vLLM ``num_accepted_tokens_per_pos``) made conditional.
"""

from __future__ import annotations

import math
import operator
import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import accumulate, chain
from operator import attrgetter
from typing import Any

from specviz.step_state import RejectionProbe, SequoiaState, TheoryState, TradeoffProbe
from specviz.trace import DRAFTED, TESTED, RunTrace, StepRecord

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
    "acceptance_per_position": "per draft position i = 1, 2, ...: steps where a draft token at position i was "
    "accepted / steps where verification tested one (position i reached)",
}


def target_calls(steps: list[StepRecord]) -> int:
    """Target forward calls over ``steps``."""
    return sum(s.target_calls for s in steps)


def tau(new_tokens: int, calls: int) -> float:
    """Mean accepted length: tokens per target call (bonus/resampled token included); 0 with no call."""
    return new_tokens / calls if calls else 0.0


def acceptance_rate(steps: list[StepRecord]) -> float | None:
    """Accepted draft tokens / drafted tokens over ``steps`` (None when nothing was drafted)."""
    drafted, accepted = _drafted_accepted(steps)
    return accepted / drafted if drafted else None


def _drafted_accepted(steps: list[StepRecord]) -> tuple[int, int]:
    """``sum(s.n_drafted)`` and ``sum(s.n_accepted)`` over ``steps``, counted in one pass over the nodes."""
    statuses = Counter(map(attrgetter("status"), chain.from_iterable(map(attrgetter("forest"), steps))))
    return sum(statuses[k] for k in DRAFTED), statuses["accepted"]


def tokens_per_s(new_tokens: int, wall_time_s: float) -> float:
    """Tokens per wall-clock second (0 for a zero duration)."""
    return new_tokens / wall_time_s if wall_time_s > 0 else 0.0


def summarize(trace: RunTrace, wall_time_s: float | None = None) -> dict[str, Any]:
    """The run-level metrics stored in ``RunTrace.metrics`` (see ``DEFINITIONS``)."""
    new_tokens = len(trace.output_ids)
    calls = target_calls(trace.steps)
    if wall_time_s is None:
        wall_time_s = sum(s.timings.get("total_ms", 0.0) for s in trace.steps) / 1000
    drafted, accepted = _drafted_accepted(trace.steps)
    return {
        "new_tokens": new_tokens,
        "steps": len(trace.steps),
        "target_calls": calls,
        "draft_calls": sum(s.draft_calls for s in trace.steps),
        "tau": tau(new_tokens, calls),
        "drafted": drafted,
        "accepted": accepted,
        "acceptance_rate": accepted / drafted if drafted else None,
        "wall_time_s": wall_time_s,
        "tokens_per_s": tokens_per_s(new_tokens, wall_time_s),
        "draft_ms": sum(s.timings.get("draft_ms", 0.0) for s in trace.steps),
        "verify_ms": sum(s.timings.get("verify_ms", 0.0) for s in trace.steps),
    }


def read_metrics(trace: RunTrace) -> dict[str, Any]:
    """A read trace's metrics (``RunTrace.from_json``, replay): ``summarize`` of its (checked) steps, never
    the file's counts or rates. The wall time is the file's ``metrics.wall_time_s`` where that is a finite
    number >= 0 (what the run measured: ``decode`` times its whole loop), else the sum of the steps'
    ``total_ms`` as for a live column; unknown (``None``, shown as "–") when no step recorded it either."""
    given = (trace.metrics or {}).get("wall_time_s")
    if type(given) in (int, float) and math.isfinite(given) and given >= 0:
        return summarize(trace, wall_time_s=given)
    out = summarize(trace)
    if not any("total_ms" in s.timings for s in trace.steps):
        out["wall_time_s"] = out["tokens_per_s"] = None
    return out


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


@dataclass(frozen=True)
class PositionAcceptance:
    """Draft position ``position`` (1 = the first drafted token after the committed text) over a run.

    ``drafted``: steps whose draft reached this depth; ``reached``: steps whose verification tested a
    drafted token here; ``accepted``: steps where one was accepted. ``rate`` = accepted / reached
    (``None`` when never reached)."""

    position: int
    drafted: int
    reached: int
    accepted: int

    @property
    def rate(self) -> float | None:
        return self.accepted / self.reached if self.reached else None

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """Wilson's score interval of ``rate`` at ``z`` (width 1 when never reached)."""
        n = self.reached
        if not n:
            return 0.0, 1.0
        r = self.accepted / n
        centre = (r + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(r * (1 - r) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)


def acceptance_per_position(trace: RunTrace) -> list[PositionAcceptance]:
    """P(draft position i accepted | position i reached) for i = 1 .. the run's deepest drafted position.

    A drafted node at depth d (a root has depth 0) sits at draft position i = d + 1. In a step,
    position i is *reached* when verification tested (accepted or rejected) some drafted node at
    depth i - 1, and *accepted* when one of them was accepted. For a chain that is the chain's i-th
    token; for a tree, any node at that depth (two children tested at depth 1 reach position 2 once,
    accepted if either was); for a forest (``batch_sd``, ``dsbd``), any node at that depth in any of
    its trees. Counted once per step, so ``reached`` at position 1 is the steps that tested anything,
    and for a chain ``accepted`` at i is ``reached`` at i + 1 unless nothing was drafted past i. vLLM's
    per-position rate divides the accepted counts by the steps instead (``drafted`` at position 1);
    for a chain it is the running product of these rates. Resampled and bonus tokens are the
    target's, never a draft position; a run that drafts nothing (``ar``, ``beam``) gives ``[]``."""
    drafted: Counter[int] = Counter()
    reached: Counter[int] = Counter()
    accepted: Counter[int] = Counter()
    for s in trace.steps:
        depths = {n.depth for n in s.forest if n.status in DRAFTED}
        drafted.update(range(max(depths) + 1) if depths else ())
        reached.update({n.depth for n in s.forest if n.status in TESTED})
        accepted.update({n.depth for n in s.forest if n.status == "accepted"})
    deepest = max(drafted, default=-1)
    return [PositionAcceptance(d + 1, drafted[d], reached[d], accepted[d]) for d in range(deepest + 1)]


LATENCY_PARTS: tuple[str, ...] = ("draft_ms", "verify_ms", "bookkeeping_ms")


def step_latencies(trace: RunTrace) -> dict[str, list[float]]:
    """Per step: ``draft_ms`` (drafter calls), ``verify_ms`` (target verification calls),
    ``bookkeeping_ms`` (the rest of the step: sampling, acceptance, caches, recording) and
    ``total_ms`` (their sum), plus ``step`` (1-based). A step's times are taken inside the decoding
    loop's ``next()`` (``decoding.LiveRun``), so a paced run's waits between steps are never in them.
    Bookkeeping is ``total_ms - draft_ms - verify_ms`` where a trace lacks it; every list is empty
    when no step recorded ``total_ms`` (a trace written without timings)."""
    out: dict[str, list[float]] = {k: [] for k in ("step", *LATENCY_PARTS, "total_ms")}
    if not any("total_ms" in s.timings for s in trace.steps):
        return out
    for s in trace.steps:
        t = s.timings
        draft, verify, total = t.get("draft_ms", 0.0), t.get("verify_ms", 0.0), t.get("total_ms", 0.0)
        other = t.get("bookkeeping_ms", max(0.0, total - draft - verify))
        for key, v in zip(out, (s.index + 1, draft, verify, other, draft + verify + other)):
            out[key].append(float(v))
    return out


def speedup(trace: RunTrace, baseline: RunTrace) -> float | None:
    """tokens/s of ``trace`` over tokens/s of ``baseline`` (normally ``ar``)."""
    base = baseline.metrics.get("tokens_per_s") or 0.0  # both read from RunTrace.metrics (``summarize``)
    own = trace.metrics.get("tokens_per_s", 0.0)
    return own / base if base and own is not None else None  # None: a replayed trace without step times


# ---------------------------------------------------------------- theory overlays
# "A Theoretical Perspective for Speculative Decoding Algorithm" (Yin et al. 2024, arXiv:2411.00841),
# in specviz's letters (p = target, q = draft; the paper swaps them). Computed from the trace's
# position records (``residual_mass`` = TV(p, q), exact at run time) and, where an algorithm records
# them (a ``step_state.TheoryState`` as ``StepRecord.controller``: ``batch_sd``, ``biased_sd``), the run-time
# whole-vocabulary probabilities per position. Only DRAFTED positions count: a bonus token is never a
# rejection.


@dataclass
class DraftedPosition:
    """One drafted (tested) position of a run.

    ``reject_prob`` is P(this position ends in a rejection | everything before it): TV(p, q) for one
    candidate under the exact rule (Thm 1), Thm 3's ``prod_m TV(p^m, q)`` at a batch root, ``Z`` for
    over-acceptance, ``1 - sum p(c)`` over the children of a chosen (``point_mass``, ``dyntree``) tree;
    ``None`` when the trace cannot tell (several candidates and no recorded probe).
    ``rejected``: every candidate was rejected and the token came from the residual.
    """

    step: int
    tv: float
    reject_prob: float | None
    rejected: bool
    candidates: int
    probe: RejectionProbe | TradeoffProbe | None = None
    first_rejected: bool = False  # the position's first candidate (drawn from q) was rejected


_reused = threading.local()


@contextmanager
def reusing(trace: RunTrace):
    """Within the block, in this thread, ``drafted_positions(trace)`` and ``rejection_overlay(trace)``
    are computed once and reused (a theory panel asks for them eight and five times): for a trace whose
    steps do not change meanwhile (``ui.stepcache``). Their results are then shared: not to be mutated."""
    outer = getattr(_reused, "memo", None)
    _reused.memo = (trace, {})
    try:
        yield
    finally:
        _reused.memo = outer


def _memo(trace: RunTrace) -> dict[Any, Any] | None:
    memo = getattr(_reused, "memo", None)
    return memo[1] if memo is not None and memo[0] is trace else None


def drafted_positions(trace: RunTrace) -> list[DraftedPosition]:
    """The run's drafted positions in order (steps, then walk order inside a step)."""
    memo = _memo(trace)
    if memo is None:
        return _drafted_positions(trace)
    if "positions" not in memo:
        memo["positions"] = _drafted_positions(trace)
    return memo["positions"]


def _drafted_positions(trace: RunTrace) -> list[DraftedPosition]:
    out = []
    for s in trace.steps:
        probes = s.controller.positions if isinstance(s.controller, TheoryState) else ()
        records = [r for r in s.positions if r.q is not None and r.residual_mass is not None]
        drafted = [n for n in s.forest if n.status in DRAFTED]
        chosen = isinstance(s.rule, dict) and s.rule.get("name") == "point_mass"
        for i, r in enumerate(records):
            probe = probes[i] if i < len(probes) else None
            here = [n for n in drafted if n.parent == r.parent and n.root == r.root]  # draw order
            k = len(here)
            prob = probe.reject if probe else (r.residual_mass if k == 1 else None)
            if chosen and all(n.p is not None for n in here):  # distinct chosen children: all rejected w.p. 1 - sum p
                prob = min(1.0, max(0.0, 1.0 - sum(n.p for n in here)))
            tv = probe.tv if probe else r.residual_mass
            out.append(
                DraftedPosition(
                    s.index,
                    float(tv),
                    prob,
                    r.final_residual is not None,
                    k,
                    probe,
                    bool(here) and here[0].status == "rejected",
                )
            )
    return out


def rejection_overlay(trace: RunTrace, z: float = 1.96) -> dict[str, list[float]]:
    """Thm 1 / Thm 3 along one run, per drafted position n (x = 1..N):

    ``tv`` TV(p_n, q_n); ``tv_sum`` its running sum (Thm 1's expected rejections of SD on these
    positions); ``expected`` the running sum of ``reject_prob`` (the run's own expectation: equal to
    ``tv_sum`` for ``sd``, below it for ``batch_sd``); ``low`` / ``high`` the ``z`` band of
    ``core.theory.rejection_band`` around it; ``measured`` the running count of rejections; ``step``
    the step of each position. All lists are empty when the run has no drafted position or any
    position's ``reject_prob`` is unknown (a tree tried several candidates and recorded no probe).
    """
    memo = _memo(trace)
    if memo is None:
        return _rejection_overlay(trace, z)
    if ("overlay", z) not in memo:
        memo["overlay", z] = _rejection_overlay(trace, z)
    return memo["overlay", z]


def _rejection_overlay(trace: RunTrace, z: float) -> dict[str, list[float]]:
    keep = drafted_positions(trace)
    if any(d.reject_prob is None for d in keep):
        keep = []
    tv, probs = [d.tv for d in keep], [d.reject_prob for d in keep]
    mean = _running(probs)  # core.theory.rejection_band, accumulated position by position
    half = [z * math.sqrt(v) for v in _running([p * (1.0 - p) for p in probs])]
    return {
        "tv": tv,
        "tv_sum": _running(tv),
        "expected": mean,
        "low": list(map(operator.sub, mean, half)),
        "high": list(map(operator.add, mean, half)),
        "measured": _running([d.rejected for d in keep]),
        "step": [d.step for d in keep],
    }


def _running(xs: list[Any]) -> list[float]:
    """The running sums of ``xs`` from 0.0, each as ``total += x`` makes it (the same floats)."""
    out = list(accumulate(xs, operator.add, initial=0.0))
    del out[0]
    return out


def first_draft_overlay(trace: RunTrace, z: float = 1.96) -> dict[str, list[float]] | None:
    """Thm 1 on the first candidate of each verified position of a multi-draft tree (``specinfer``,
    ``mcsd``, ``sequoia``), where ``rejection_overlay`` is empty: a position's first candidate is
    drawn from q (with or without replacement, the first draw is q's) and tested by ``min(1, p/q)``,
    so it is rejected with probability TV(p, q) exactly (the recorded ``residual_mass``), whatever
    the tree around it. Keys as ``rejection_overlay`` (``expected`` = ``tv_sum``, its ``z`` band,
    ``measured`` the running count of rejected first candidates) plus ``measured_all``, the running
    count of positions where every candidate was rejected (at most ``measured``; its own chance,
    prod_j TV(p_j, q) over the successive residuals p_j, needs laws the trace does not record).
    ``None`` when no position tried several candidates or a drafted position's TV is unknown."""
    ds = [d for d in drafted_positions(trace) if d.candidates]
    if not any(d.candidates > 1 and d.probe is None for d in ds):
        return None
    out: dict[str, list[float]] = {
        k: [] for k in ("tv", "tv_sum", "expected", "low", "high", "measured", "measured_all", "step")
    }
    mean = var = first = every = 0.0
    for d in ds:
        mean += d.tv
        var += d.tv * (1.0 - d.tv)
        first += d.first_rejected
        every += d.rejected
        half = z * math.sqrt(var)
        for key, v in zip(out, (d.tv, mean, mean, mean - half, mean + half, first, every, d.step)):
            out[key].append(v)
    return out


def batch_improvement_overlay(trace: RunTrace, z: float = 1.96) -> dict[str, list[float]] | None:
    """Thm 3's batch improvement along a run: ``theory`` = running sum of ``TV_n - Pr(R_n = 1)``
    (nonzero only at batch roots, where it is ``TV - prod_m TV(p^m, q)``), ``measured`` = running
    ``sum TV_n - N_rej`` (SD's expected rejections on the same positions minus the rejections seen;
    its expectation is ``theory``), with the ``z`` band of the rejection count around ``theory``.
    ``None`` unless the run tried several roots at a position with a recorded probability (batch_sd)."""
    if not any(d.candidates > 1 and d.probe for d in drafted_positions(trace)):
        return None
    ov = rejection_overlay(trace, z)
    theory = [t - e for t, e in zip(ov["tv_sum"], ov["expected"])]
    return {
        "theory": theory,
        "measured": [t - m for t, m in zip(ov["tv_sum"], ov["measured"])],
        "low": [th - (hi - e) for th, hi, e in zip(theory, ov["high"], ov["expected"])],
        "high": [th + (hi - e) for th, hi, e in zip(theory, ov["high"], ov["expected"])],
        "step": ov["step"],
    }


def tradeoff_point(trace: RunTrace, z: float = 1.96) -> dict[str, float] | None:
    """Thm 5 for an over-accepting run (``biased_sd``): the means over its drafted positions of the
    rejection probability, the OPT bias (Thm 4's least, on the line ``rejection + bias = TV``) and the
    UNO bias (above it), the mean TV (the line's intercepts), and the measured rejection rate with a
    ``z`` binomial band. ``None`` when the trace records no bias."""
    ds = [d for d in drafted_positions(trace) if isinstance(d.probe, TradeoffProbe)]
    if not ds:
        return None
    probes: list[TradeoffProbe] = [d.probe for d in ds]
    n = len(ds)
    rate = sum(d.rejected for d in ds) / n
    half = z * (rate * (1 - rate) / n) ** 0.5
    return {
        "positions": n,
        "tv": sum(d.tv for d in ds) / n,
        "rejection": sum(p.reject_b for p in probes) / n,
        "bias_opt": sum(p.bias_opt for p in probes) / n,
        "bias_uno": sum(p.bias_uno for p in probes) / n,
        "measured_rejection": rate,
        "measured_low": rate - half,
        "measured_high": rate + half,
    }


def predicted_vs_measured_tokens(trace: RunTrace) -> dict[str, list[float]] | None:
    """Sequoia's per-step prediction (``step_state.SequoiaState``: ``predicted_tokens``, the DP tree's
    expected tokens) next to the tokens the step produced (``measured_tokens``); None without them."""
    rows = [
        (s.index, s.controller.predicted_tokens, s.controller.measured_tokens)
        for s in trace.steps
        if isinstance(s.controller, SequoiaState)
    ]
    if not rows:
        return None
    return {
        "step": [r[0] for r in rows],
        "predicted": [float(r[1]) for r in rows],
        "measured": [float(r[2]) for r in rows],
    }
