"""The performance goals a bench report is checked against, each with its measured value.

Pure functions of ``bench.json``'s data: ``goals(report)`` lists, per goal, what was measured, the
threshold and whether it was met (None where the report lacks what the goal needs, e.g. no peers).
"""

from __future__ import annotations

from typing import Any

TREES = ("mcsd", "specinfer", "sequoia", "dyntree", "dsbd")  # lossless tree / forest algorithms


def _rows(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["category"], r["method"]): r for r in report["rows"]}


def _ratio(rows, category: str, num: str, den: str, key: str = "tokens_per_s") -> float | None:
    a, b = rows.get((category, num)), rows.get((category, den))
    return a[key] / b[key] if a and b and a.get(key) and b.get(key) else None


PASSES = {">=": lambda v, t: v >= t, ">": lambda v, t: v > t, "<=": lambda v, t: v <= t}


def _goal(
    name: str, measured: dict[str, float | None], test: str, threshold: float, extra: bool = True
) -> dict[str, Any]:
    """Met when every measured value passes ``value <test> threshold`` (and ``extra`` holds)."""
    values = [v for v in measured.values() if v is not None]
    met = all(PASSES[test](v, threshold) for v in values) and extra if values else None
    return {"goal": name, "measured": measured, "test": test, "threshold": threshold, "met": met}


def goals(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every performance goal, per prompt category where it is a per-category quantity: those of the
    real default pair (sd at least 1.25x ar and 1.3x Hugging Face assisted generation with the same
    draft, a draft call at most 0.2 of a target call) and of the lean core (ar against plain
    ``generate``, the call overhead, the cost model's efficiency, trees, the trace's overhead)."""
    rows = _rows(report)
    cats = sorted({c for c, _ in rows})
    same_text = all(rows[c, m]["greedy_equal"] for c in cats for m in ("sd", "hf_assisted") if (c, m) in rows)
    out = [
        _goal(
            "sd tokens/s over ar (identical greedy text)",
            {c: _ratio(rows, c, "sd", "ar") for c in cats},
            ">=",
            1.25,
            extra=same_text,
        ),
        _goal(
            "sd tokens/s over HF assisted generation (identical greedy text)",
            {c: _ratio(rows, c, "sd", "hf_assisted") for c in cats},
            ">=",
            1.3,
            extra=same_text,
        ),
        _goal("ar tokens/s over HF plain generate", {c: _ratio(rows, c, "ar", "hf_generate") for c in cats}, ">=", 1.0),
        _goal("one-token target call over bare matmuls", {"all": report.get("target_call_over_bare")}, "<=", 1.5),
        _goal("one-token draft call over target call", {"all": report.get("draft_call_over_target")}, "<=", 0.2),
        _goal(
            "one-token feature-head call over target call", {"all": report.get("feature_call_over_target")}, "<=", 0.08
        ),
        _goal(
            "measured / predicted speedup, lowest lossless specviz row",
            {
                c: min(
                    (
                        r["efficiency"]
                        for (rc, _), r in rows.items()
                        if rc == c and r["kind"] == "specviz" and r["lossless"] and r.get("efficiency")
                    ),
                    default=None,
                )
                for c in cats
            },
            ">=",
            0.9,
        ),
    ]
    best = {
        c: max((rows[c, t]["tau"] for t in TREES if (c, t) in rows and rows[c, t]["tau"]), default=None) for c in cats
    }
    out.append(
        _goal(
            "best tree tau over sd tau",
            {c: best[c] / rows[c, "sd"]["tau"] if best[c] and (c, "sd") in rows else None for c in cats},
            ">",
            1.0,
        )
    )
    out.append(_goal("trace_overhead", {"all": report.get("trace_overhead")}, "<=", 0.05))
    return out


def goals_markdown(items: list[dict[str, Any]]) -> list[str]:
    """A Markdown table of ``goals`` (one line per goal; per-category values joined)."""
    lines = ["| goal | threshold | measured | met |", "|---|---:|---|:---:|"]
    for g in items:
        measured = ", ".join(f"{k} {'-' if v is None else format(v, '.2f')}" for k, v in g["measured"].items())
        met = {True: "yes", False: "**no**", None: "-"}[g["met"]]
        lines.append(f"| {g['goal']} | {g['test']} {g['threshold']:.2f} | {measured} | {met} |")
    return lines
