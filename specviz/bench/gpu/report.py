"""The GPU check's Markdown report: the device, driver, torch and dtypes named, a summary table and each
section's lines, ready to paste into ``docs/gpu.md``."""

from __future__ import annotations

import datetime
import platform
import sys
from typing import Any

from specviz.bench.gpu.plan import SECTIONS, UNLIMITED
from specviz.bench.gpu.section import table
from specviz.bench.gpu.timings import bench_dtype


def report_markdown(args, results: dict[str, dict[str, Any]], total: float, budget: float) -> str:
    facts = results.get("environment", {}).get("facts") or {}
    dtypes = f"greedy in float32 and bfloat16; benchmark in {bench_dtype(args)}"
    cmd = "bash scripts/gpu_check.sh " + " ".join(sys.argv[1:])
    lines = [
        f"# specviz GPU check: {facts.get('device_name', args.device)}",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
        f"command: `{cmd.strip()}`; commit {facts.get('commit', 'unknown')}",
        f"- device: {args.device} ({facts.get('device_name', 'unknown')}); driver: {facts.get('driver', 'unknown')}",
        f"- torch {facts.get('torch', 'unknown')} (CUDA {facts.get('cuda', '-')}); transformers "
        f"{facts.get('transformers', 'unknown')}; Python {facts.get('python', platform.python_version())}",
        f"- dtype: {dtypes}",
        f"- mode: {'--quick (reduced sizes; a smoke test of the check itself)' if args.quick else 'full'}; "
        f"total {total:.0f} s " + (f"of a {budget:.0f} s budget" if budget < UNLIMITED else "(no time limits)"),
        "",
        "## Summary",
        "",
        *table(
            ["section", "status", "seconds", "note"],
            [
                [
                    name,
                    results[name]["status"],
                    f"{results[name].get('seconds', 0.0):.1f}",
                    (results[name].get("note") or "").replace("|", "/"),
                ]
                for name in SECTIONS
                if name in results
            ],
            "---|---|---:|---",
        ),
        "",
    ]
    for name in SECTIONS:
        if name in results:
            lines += [f"## {name}", "", f"status: {results[name]['status']}", "", *results[name].get("lines", []), ""]
    return "\n".join(lines).rstrip() + "\n"
