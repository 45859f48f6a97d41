"""``python -m specviz papers``: every paper's headline claims rerun on the closest setting specviz can
run, written as ``papers.md`` (one table per paper, then each row's setting and reasoning) and
``papers.json`` (the same rows, ``rows.Claim``), which the app's Papers view and the tests read."""

from __future__ import annotations

import json
import math
import platform
import time
from pathlib import Path
from typing import Any, Callable

from specviz.papers.measure import FULL, QUICK, Budget, PairRun, load, load_average
from specviz.papers.rows import VERDICTS, Claim

SCHEMA = 1
SHORT = {"bundled-stdlib-pair": "code pair", "smollm2-135m-offline": "SmolLM2"}
LEFT_OUT = {
    "scaling": "Sequoia's tree-size scaling (Fig. 2, Fig. 5a)",
    "replacement": "MCSD's Table 4 ablation",
    "dsbd": "DSBD's rows (Tables 1-2, Figs. 4-5)",
}
SECTIONS = ("theory", "sequoia", "mcsd", "eesd", "dsbd")


def _section(name: str) -> Callable[[list[PairRun], Budget], list[Claim]]:
    from specviz.papers import dsbd, eesd, mcsd, sequoia, theory

    return {
        "theory": lambda pairs, b: theory.rows(b),
        "sequoia": sequoia.rows,
        "mcsd": mcsd.rows,
        "eesd": eesd.rows,
        "dsbd": dsbd.rows,
    }[name]


def collect(budget: Budget, sections: tuple[str, ...] = SECTIONS, log: Callable[[str], Any] = print) -> dict[str, Any]:
    """Run the sections on the budget's pairs; returns the report (``SCHEMA``) as plain data."""
    import torch

    started = time.time()
    pairs = [load(name, budget) for name in budget.pairs] if set(sections) - {"theory"} else []
    claims: list[Claim] = []
    timings = {}
    for name in sections:
        t0 = time.time()
        got = _section(name)(pairs, budget)
        for c in got:
            c.pair = c.pair or str(c.extra.get("pair", ""))
        timings[name] = round(time.time() - t0, 1)
        log(f"{name}: {len(got)} rows in {timings[name]:.0f} s ({load_average()})")
        claims += got
    return {
        "schema": SCHEMA,
        "budget": budget.name,
        "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}",
        "load_average_end": load_average(),
        "seconds": round(time.time() - started, 1),
        "section_seconds": timings,
        "pairs": {p.name: p.label for p in pairs},
        "left_out": {p.name: list(budget.for_pair(p.name).skip) for p in pairs if budget.for_pair(p.name).skip},
        "rows": [c.to_dict() for c in claims],
    }


def check(report: dict[str, Any]) -> list[str]:
    """What is wrong with a report read back (empty: nothing): rows present, every row with a paper
    value, a finite specviz value (and spread) and a known verdict."""
    problems = []
    rows = report.get("rows") or []
    if not rows:
        problems.append("no rows")
    for i, r in enumerate(rows):
        where = f"row {i} ({r.get('paper')}: {r.get('claim')})"
        for key in ("paper", "claim", "source", "paper_value", "setting", "measured", "difference"):
            if not str(r.get(key) or "").strip():
                problems.append(f"{where}: no {key}")
        if not isinstance(r.get("value"), (int, float)) or not math.isfinite(r["value"]):
            problems.append(f"{where}: value {r.get('value')!r} is not a finite number")
        if r.get("spread") is not None and not math.isfinite(r["spread"]):
            problems.append(f"{where}: spread {r['spread']!r} is not finite")
        if r.get("verdict") not in VERDICTS:
            problems.append(f"{where}: verdict {r.get('verdict')!r}")
    return problems


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown(report: dict[str, Any], command: str) -> str:
    """The report as Markdown: per paper a table (claim, paper's number, specviz's, verdict), then
    every row's settings and the reasoning behind its verdict."""
    lines = [
        "# The papers side by side",
        "",
        "Each paper's headline claims next to what specviz measures on the closest setting it can run: the "
        "paper's number and setting, specviz's setting and number with its spread, the difference in words and "
        "a verdict. `python -m specviz papers --out DIR` writes this file and `papers.json` (the same rows, "
        "which the app's Papers view reads); `--quick` is the CI-sized run (the code pair only, a few tokens). "
        "Speeds are ratios against a baseline decoded on the same prompt and seed in the same process, "
        "configurations round-robin; the machine's load average is stated where a speed was measured.",
        "",
        f"Made by `{command}` on {report['created']} ({report['machine']}; {report['seconds']:.0f} s; "
        f"{report['load_average_end']} at the end). Pairs: "
        + ("; ".join(f"`{k}` ({v})" for k, v in report["pairs"].items()) or "none (theory only)")
        + ".",
        "",
        "Verdicts: *holds*; *holds at small scale* (the effect is there on specviz's small pairs, smaller or "
        "larger than the paper's); *does not hold*; *not comparable* (the number depends on models specviz "
        'cannot run); *unresolved* (the difference is inside its own spread). No row says "reproduced": a '
        "value matching the paper's is reported with the spread that says how much the match means.",
        "",
    ]
    for pair, rows in (report.get("left_out") or {}).items():
        lines += [
            f"Left out on `{pair}` for time (each costs tens of minutes on a shared CPU; the code pair runs "
            "them): " + ", ".join(LEFT_OUT.get(r, r) for r in rows) + ".",
            "",
        ]
    by_paper: dict[str, list[dict]] = {}
    for r in report["rows"]:
        by_paper.setdefault(r["paper"], []).append(r)
    for paper, rows in by_paper.items():
        lines += [
            f"## {paper}",
            "",
            "| # | claim | paper (source) | pair | specviz | verdict |",
            "|---|---|---|---|---|---|",
        ]
        for i, r in enumerate(rows, 1):
            lines.append(
                f"| {i} | {_cell(r['claim'])} | {_cell(r['paper_value'])} ({_cell(r['source'])}) | "
                f"{_cell(SHORT.get(r.get('pair', ''), r.get('pair') or 'toy chains'))} | "
                f"{_cell(r['measured'])} | **{r['verdict']}** |"
            )
        lines.append("")
        for i, r in enumerate(rows, 1):
            spread = "" if r["spread"] is None else f" ± {r['spread']:.3g}"
            lines += [
                f"{i}. **{_cell(r['claim'])}.** Paper's setting: {_cell(r['paper_setting'])}. specviz: "
                f"{_cell(r['setting'])}. Value {r['value']:.4g}{spread} ({_cell(r['spread_kind'])}). "
                f"Difference: {_cell(r['difference'])}."
            ]
        lines.append("")
    return "\n".join(lines) + "\n"


def write(report: dict[str, Any], out: Path, command: str, json_path: Path | None = None) -> list[Path]:
    """``out/papers.md`` and the JSON (``out/papers.json`` unless ``json_path``)."""
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "papers.md", json_path or out / "papers.json"
    js.parent.mkdir(parents=True, exist_ok=True)
    js.write_text(
        json.dumps({**report, "command": command}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )  # first: the measurements are kept even if the Markdown fails
    md.write_text(markdown(report, command), encoding="utf-8")
    return [md, js]


def read(path: Path) -> dict[str, Any]:
    """A written ``papers.json``."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def budget_for(quick: bool) -> Budget:
    return QUICK if quick else FULL
