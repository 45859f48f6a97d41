"""One timed run of the live page in numbers (``specviz.bench.live``): pure functions of what the server
and the page recorded (``live_probe``)."""

from __future__ import annotations

import statistics
from typing import Any


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q * (len(xs) - 1)))))]


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def sizes_by_output(sends: list[dict[str, Any]]) -> dict[str, float]:
    """Median bytes per output over a run's live updates (not its opening and final views), largest first."""
    live = [s["by_output"] for s in (sends[1:-1] or sends) if "by_output" in s]
    names = {k for s in live for k in s}
    out = {k: med([s.get(k, 0) for s in live]) for k in names}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def analyse(rec_events: list[dict], sends: list[dict], browser: dict, t_click: float, paced: bool) -> dict[str, Any]:
    """One run's numbers from what the server and the page recorded (all times in seconds, wall clock)."""
    decoded = [e for e in rec_events if e["event"] == "decoded"]
    updates = [e for e in rec_events if e["event"] == "update"]
    status = [s for s in browser["status"] if s["paint"] is not None]
    msgs = browser["msgs"]
    n = max((e["steps"] for e in decoded), default=0)
    dec_at = {}
    for e in decoded:
        dec_at.setdefault(e["steps"], e["t"])
    decode_s = sum(e["seconds"] for e in decoded)
    # drawn: the first status line with that step or a later one (the page's clock: ms since the epoch)
    drawn_list = [(s["step"], s["paint"] / 1000.0) for s in status if s["step"] is not None and s["step"] > 0]
    overhead, first_drawn = _overheads(n, dec_at, updates, drawn_list, paced)
    paints = sorted({t for _, t in drawn_list})
    longest, unexplained = _gaps(paints, decoded)
    parts = _update_parts(updates, sends, msgs, status, browser["plotly"])
    sizes = [s.get("bytes", 0) for s in sends]
    end = max(paints) if paints else float("nan")
    first_k = min(first_drawn) if first_drawn else None
    return {
        "steps": n,
        "updates": len(updates),
        "decode_s": decode_s,
        "on_screen_s": end - t_click,
        "screen_over_decode": (end - t_click) / decode_s if decode_s else float("nan"),
        "overhead_median_s": med(overhead),
        "overhead_p95_s": pct(overhead, 0.95),
        "longest_gap_s": longest[0],
        "decode_in_longest_gap_s": longest[1],
        "worst_gap_beyond_decoding_s": unexplained,
        "first_step_s": (first_drawn[first_k] - dec_at[first_k]) if first_k else float("nan"),
        "click_to_first_step_s": (first_drawn[first_k] - t_click) if first_k else float("nan"),
        "update_bytes_median": med(sizes[1:-1] or sizes),
        "update_bytes_max": max(sizes, default=0),
        "update_wire_bytes_median": med([s.get("wire_bytes", 0) for s in sends][1:-1] or [0]),
        "update_bytes_by_output": sizes_by_output(sends),
        "parts_median_s": {k: med(v) for k, v in parts.items()},
        "reports": sum(e["event"] == "reported" for e in rec_events),
        "plotly_calls": _plotly_calls(browser["plotly"]),
        "msg_bytes": [m["bytes"] for m in msgs],
        "longtask_s": sum(t["d"] for t in browser["longtasks"] if t["t"] / 1000.0 >= t_click) / 1000.0,
    }


def _overheads(
    n: int, dec_at: dict[int, float], updates: list[dict], drawn_list: list[tuple[int, float]], paced: bool
) -> tuple[list[float], dict[int, float]]:
    """Each step's display overhead (from decoded, or released by the pacing, to drawn) and when each
    step was first drawn (``drawn_list``: (step, paint time) of the status lines)."""
    # the step's update, by its step: the first update showing it (an update shows every step up to its own)
    released = {u["steps"]: u["t_ready"] for u in updates if not u.get("final")}
    overhead, first_drawn = [], {}
    for k in range(1, n + 1):
        d = next((t for step, t in drawn_list if step >= k), None)
        if d is None or k not in dec_at:
            continue
        first_drawn[k] = d
        ready = max(dec_at[k], released.get(k, dec_at[k])) if paced else dec_at[k]
        overhead.append(d - ready)
    return overhead, first_drawn


def _gaps(paints: list[float], decoded: list[dict]) -> tuple[tuple[float, float], float]:
    """The longest gap between two successive drawn updates with the decoding inside it, and the largest
    gap less the decoding (and pacing) that happened inside."""
    longest, unexplained = (0.0, 0.0), 0.0
    for a, b in zip(paints, paints[1:]):
        inside = sum(e["seconds"] for e in decoded if a < e["t"] <= b)
        if b - a > longest[0]:
            longest = (b - a, inside)
        unexplained = max(unexplained, b - a - inside)
    return longest, unexplained


def _update_parts(
    updates: list[dict], sends: list[dict], msgs: list[dict], status: list[dict], plotly: list[dict]
) -> dict[str, list[float]]:
    """Where each update's time went: built, waited for the page (before issue 34), serialised, received,
    drawn by the browser (Plotly's calls part of it)."""
    parts: dict[str, list[float]] = {
        "build": [],
        "wait_page": [],
        "serialise": [],
        "transfer": [],
        "browser": [],
        "plotly": [],
    }
    for i, u in enumerate(updates):
        parts["build"].append(u["t_built"] - u.get("t_build", u["t_ready"]))
        # before issue 34 the loop waited for the page after building; since, a paced run waits before
        parts["wait_page"].append(u["t_yield"] - u["t_built"] + u.get("t_build", u["t_ready"]) - u["t_ready"])
        s = sends[i + 1] if i + 1 < len(sends) else None  # the first send is the run's opening view
        if s is None or "t_sent" not in s:
            continue
        parts["serialise"].append(s["t_sent"] - s["t_post0"])
        m = msgs[i + 1] if i + 1 < len(msgs) else None
        if m is None:
            continue
        arrive = m["t"] / 1000.0
        parts["transfer"].append(arrive - s["t_sent"])
        shown = next(
            (
                st
                for st in status
                if st["dom"] / 1000.0 >= arrive - 0.002 and st["step"] is not None and st["step"] >= u["steps"]
            ),
            None,
        )
        if shown is not None:
            parts["browser"].append(shown["paint"] / 1000.0 - arrive)
            parts["plotly"].append(sum(p["d"] for p in plotly if arrive * 1000 <= p["t"] <= shown["paint"]) / 1000.0)
    return parts


def _plotly_calls(plotly: list[dict]) -> dict[str, list]:
    """Plotly's calls in the page by name: [how many, seconds in all]."""
    return {
        name: [
            sum(p["name"] == name for p in plotly),
            round(sum(p["d"] for p in plotly if p["name"] == name) / 1000.0, 3),
        ]
        for name in sorted({p["name"] for p in plotly})
    }
