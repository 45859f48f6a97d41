"""``python -m specviz bench``'s report: ``bench.md`` (the run's settings and timed calls, a row per method
and category, what was skipped, the goals), written with ``bench.json`` and ``bench.html`` (the figures)."""

from __future__ import annotations

import json
import os
from typing import Any

from specviz.bench import timing
from specviz.bench.goals import goals_markdown


def _fmt(v: Any, f: str) -> str:
    return "-" if v is None else format(v, f)


def _speedup(row: dict[str, Any]) -> str:
    """``1.42 (1.31-1.55)``: the speed-up over ar with its range pass by pass, where it has one."""
    lo, hi = row.get("speedup_vs_ar_min"), row.get("speedup_vs_ar_max")
    text = _fmt(row["speedup_vs_ar"], ".2f")
    return text if lo is None or hi is None or f"{lo:.2f}" == f"{hi:.2f}" else f"{text} ({lo:.2f}-{hi:.2f})"


def to_markdown(report: dict[str, Any]) -> str:
    """``bench.md``: the run's settings and timed calls, the table of every row, what was skipped, the goals."""
    lines = _markdown_header(report) + _markdown_table(report["rows"])
    for name, why in report["skipped"].items():
        lines.append(f"\nskipped {name}: {why}")
    lines += ["", "Goals (the performance issue's; per category where per category):", ""]
    lines += goals_markdown(report["goals"])
    return "\n".join(lines) + "\n"


def _markdown_header(report: dict[str, Any]) -> list[str]:
    """The title line and the measured facts under it (calls, the cost model's timings, trace overhead)."""
    d, s, over = report["pair"], report["settings"], report["trace_overhead_detail"]
    cats = ", ".join(f"{n} {c}" for c, n in s["categories"].items())
    return [
        f"## specviz bench: {d['target']} <- {d['draft']} on {d['device']} ({d['dtype']}), greedy, "
        f"{s['max_new_tokens']} new tokens per prompt, {'chat ' if s.get('chat') else ''}prompts: {cats}; "
        f"median of {s['repeat']} (min-max) after a warm-up",
        "",
        *(
            [
                f"- timed on {timing.Conditions(**report['conditions']).sentence()} (bench.timing: the routine "
                "of the app's Measure and compare)"
            ]
            if report.get("conditions")
            else []
        ),
        f"- one-token target call {report['target_call_ms']:.2f} ms (stock transformers forward "
        f"{report['stock_target_call_ms']:.2f} ms); the same weight matrices as bare matmuls "
        f"{report['bare_matmul_ms']:.2f} ms (ratio {report['target_call_over_bare']:.2f}); "
        f"{report['threads']} torch threads",
        f"- one-token draft call {_fmt(report['draft_call_ms'], '.2f')} ms "
        f"(stock {_fmt(report['stock_draft_call_ms'], '.2f')} ms; "
        f"{_fmt(report['draft_call_over_target'], '.2f')} of a target call)",
        *(
            [
                f"- one-token feature-head draft call {report['t_feature_ms'][1]:.2f} ms "
                f"({report['feature_call_over_target']:.3f} of a target call, both as t(1) of the cost model)"
            ]
            if report.get("t_feature_ms")
            else []
        ),
        *(
            [f"- cost model: t(n) timed after {report['t_prefix']} cached tokens (the runs' mean context)"]
            if report.get("t_prefix")
            else []
        ),
        *(
            [
                f"- the cost model's ceiling for chain sd here (a draft always right): "
                f"{report['sd_ceiling']['speedup']:.2f}x at gamma {report['sd_ceiling']['gamma']}"
            ]
            if report.get("sd_ceiling")
            else []
        ),
        *(
            [
                f"- alternating the models (cost model): a draft call after a target call "
                f"+{report['switch_ms']['draft_after_target']:.2f} ms, a target call after a draft call "
                f"+{report['switch_ms']['target_after_draft']:.2f} ms"
            ]
            if report.get("switch_ms")
            else []
        ),
        f"- trace_overhead ({report['trace_overhead_algorithm']}, full recording vs record_top_k=0): "
        f"{report['trace_overhead']:+.3f} (median of {over['pairs']} paired runs, quartiles "
        f"{over['spread'][0]:+.3f} to {over['spread'][1]:+.3f}); time inside the recording / rest of the run: "
        f"{over['recording_share']:.3f}; garbage collection / run: {over['gc_share']:.4f}",
        "",
    ]


def _markdown_table(rows: list[dict[str, Any]]) -> list[str]:
    """The table: one row per method and category."""
    lines = [
        "| category | method | new tokens | target calls | draft calls | tau | accept | wall s (min-max) | "
        "tokens/s | speedup vs ar (min-max) | predicted | efficiency | greedy = ar | target log p / token | "
        "greedy = beam |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|:---:|",
    ]
    for r in rows:
        eq = "-" if r["greedy_equal"] is None else ("yes" if r["greedy_equal"] else "NO")
        eq_beam = "-" if r["greedy_equal_beam"] is None else ("yes" if r["greedy_equal_beam"] else "no")
        lines.append(
            f"| {r['category']} | {r['method']} | {r['new_tokens']} | {r['target_calls']} | {r['draft_calls']} | "
            f"{_fmt(r['tau'], '.2f')} | {_fmt(r['acceptance_rate'], '.0%')} | {r['wall_s']:.3f} "
            f"({r['wall_s_min']:.3f}-{r['wall_s_max']:.3f}) | {r['tokens_per_s']:.1f} | "
            f"{_speedup(r)} | {_fmt(r['predicted_speedup'], '.2f')} | "
            f"{_fmt(r['efficiency'], '.2f')} | {eq} | {_fmt(r['target_logp'], '.3f')} | {eq_beam} |"
        )
    return lines


def write_report(report: dict[str, Any], out: str) -> None:
    """``bench.json``, ``bench.md`` and ``bench.html`` (the figures) under ``out``."""
    from specviz.bench.figures import cost_figure, efficiency_figure, speedup_figure, write_html

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "bench.json"), "w") as fh:
        json.dump(report, fh, indent=2, default=str)
    with open(os.path.join(out, "bench.md"), "w") as fh:
        fh.write(to_markdown(report))
    figs = [
        speedup_figure(report["rows"]),
        cost_figure(
            report["t_target_ms"], report["t_draft_ms"], report["pair"]["device"], report.get("t_early_exit_ms")
        ),
        efficiency_figure(report["rows"]),
    ]
    write_html(figs, os.path.join(out, "bench.html"))
