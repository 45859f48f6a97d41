"""What ``specviz.bench.live`` prints: a row per case, the update sizes by output, where a scrub's time
goes, and each goal of issue 34 met or not."""

from __future__ import annotations

import os
from typing import Any

from specviz.bench.live_analysis import med


def load() -> str:
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def fmt(x: Any, unit: str = "s") -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    if unit == "kB":
        return f"{x / 1000:.1f}"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def goals_met(r: dict[str, Any], n_cols: int, paced: bool, pair: str) -> list[str]:
    said = []
    ok = lambda b: "met" if b else "NOT met"  # noqa: E731
    if n_cols == 4:
        said.append(f"overhead median {fmt(r['overhead_median_s'])} s <= 0.1: {ok(r['overhead_median_s'] <= 0.1)}")
        said.append(f"overhead p95 {fmt(r['overhead_p95_s'])} s <= 0.3: {ok(r['overhead_p95_s'] <= 0.3)}")
        said.append(
            f"gap beyond decoding {fmt(r['worst_gap_beyond_decoding_s'])} s <= 1: "
            f"{ok(r['worst_gap_beyond_decoding_s'] <= 1.0)}"
        )
        if pair == "default":
            said.append(
                f"update {fmt(r['update_bytes_median'], 'kB')} kB (median; max "
                f"{fmt(r['update_bytes_max'], 'kB')}) <= 50 kB: {ok(r['update_bytes_median'] <= 50_000)}"
            )
    if n_cols == 6 and not paced:
        said.append(
            f"on screen {fmt(r['screen_over_decode'])}x decoding <= 1.25: {ok(r['screen_over_decode'] <= 1.25)}"
        )
    said.append(f"first step {fmt(r['first_step_s'])} s <= 1.5: {ok(r['first_step_s'] <= 1.5)}")
    if r.get("scrub_s"):
        said.append(f"scrub median {fmt(med(r['scrub_s']))} s <= 0.3: {ok(med(r['scrub_s']) <= 0.3)}")
    if r.get("click_s") is not None and "click_s" in r:
        said.append(f"node click {fmt(r['click_s'])} s <= 0.5: {ok(r['click_s'] <= 0.5)}")
    return said


HEAD = (
    "| pair | cols | paced | px | steps | decode s | on screen s (x decode) | overhead med / p95 s | "
    "longest gap s (decoding in it) | first step s | update kB med / max | build / wait page / serialise / "
    "transfer / browser (plotly) s | scrub s | click s |"
)


def row(case: tuple, r: dict[str, Any]) -> str:
    pair, n_cols, paced, width = case
    p = r["parts_median_s"]
    parts = " / ".join(fmt(p[k]) for k in ("build", "wait_page", "serialise", "transfer", "browser"))
    parts += f" ({fmt(p['plotly'])})"
    scrub = fmt(med(r["scrub_s"])) if r.get("scrub_s") else "-"
    return (
        f"| {pair} | {n_cols} | {'yes' if paced else 'no'} | {width} | {r['steps']} | {fmt(r['decode_s'])} | "
        f"{fmt(r['on_screen_s'])} ({fmt(r['screen_over_decode'])}x) | {fmt(r['overhead_median_s'])} / "
        f"{fmt(r['overhead_p95_s'])} | {fmt(r['longest_gap_s'])} ({fmt(r['decode_in_longest_gap_s'])}) | "
        f"{fmt(r['first_step_s'])} | {fmt(r['update_bytes_median'], 'kB')} / {fmt(r['update_bytes_max'], 'kB')} | "
        f"{parts} | {scrub} | {fmt(r.get('click_s'))} |"
    )


def print_summary(results: list[tuple[tuple, dict[str, Any]]]) -> None:
    """Every case's row, its update's bytes by output, where its scrubs' time went, and the goals."""
    print(f"\n# {load()} at the end\n")
    print(HEAD)
    print("|" + "---|" * (HEAD.count("|") - 1))
    for case, r in results:
        print(row(case, r))
    print("\nAn update's bytes by output (ASCII JSON, median over the live updates; the largest 10):")
    for case, r in results:
        top = list(r["update_bytes_by_output"].items())[:10]
        wire = r["update_wire_bytes_median"] / 1000
        print(f"- {case}: {wire:.1f} kB as UTF-8 (the wire); " + ", ".join(f"{k} {v / 1000:.1f} kB" for k, v in top))
    for case, r in results:
        if r.get("scrub_split_s"):
            a, b, c, d, e = (med([x[j] for x in r["scrub_split_s"]]) for j in range(5))
            names = {k for x in r["scrub_split_s"] for k in x[5]}
            calls = {k: med([x[5].get(k, 0.0) for x in r["scrub_split_s"]]) for k in sorted(names)}
            print(
                f"- {case}: a scrub, median: answer received {a:.3f} s (of it the handler {d:.3f}, Gradio's "
                f"postprocessing {e:.3f}), then the browser {b:.3f} s (Plotly {c:.3f}: "
                + ", ".join(f"{k} {v:.3f}" for k, v in calls.items())
                + ")"
            )
    print("\nGoals (issue 34):")
    for (pair, n_cols, paced, width), r in results:
        for line in goals_met(r, n_cols, paced, pair):
            print(f"- {pair}, {n_cols} columns, {'paced' if paced else 'unpaced'}, {width} px: {line}")
