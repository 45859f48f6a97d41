"""The app's Papers view: each paper's headline claims against specviz's numbers, read from the report
the repository ships (``assets/papers/papers.json``, written by ``python -m specviz papers``); static,
no model needed and nothing a visitor sends reaches it."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import gradio as gr

from specviz.papers.report import SHORT
from specviz.viz.papers import VERDICT_COLORS, claims_figure

REPORT = Path(__file__).resolve().parents[2] / "assets" / "papers" / "papers.json"


def load_report(path: Path = REPORT) -> tuple[dict[str, Any] | None, str]:
    """The shipped report and a note on it; ``None`` and a sentence saying why when it cannot be read."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
        rows = report["rows"]
        if not isinstance(rows, list) or not rows:
            raise ValueError("no rows")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, (
            f"No papers report in this install ({path.name}: {html.escape(str(exc))}). "
            "`python -m specviz papers` writes one."
        )
    note = (
        f"From `{report.get('command', 'python -m specviz papers')}` ({report.get('created', '?')}; "
        f"{report.get('machine', '')}). The full report, with every row's settings: docs/papers.md."
    )
    return report, note


def table_html(rows: list[dict[str, Any]]) -> str:
    """One paper's rows: claim, the paper's number with its table or figure, specviz's, the verdict."""
    out = [
        '<table class="sv-papers"><thead><tr><th>#</th><th>claim</th><th>paper</th><th>pair</th>'
        "<th>specviz</th><th>verdict</th></tr></thead><tbody>"
    ]
    for i, r in enumerate(rows, 1):
        color = VERDICT_COLORS.get(r["verdict"], "#6b7280")
        out.append(
            f"<tr><td>{i}</td><td>{html.escape(r['claim'])}</td><td>{html.escape(r['paper_value'])} "
            f"<small>({html.escape(r['source'])})</small></td>"
            f"<td>{html.escape(SHORT.get(r.get('pair', ''), r.get('pair') or 'toy chains'))}</td>"
            f"<td>{html.escape(r['measured'])}</td>"
            f'<td><b style="color:{color}">{html.escape(r["verdict"])}</b><br><small>'
            f"{html.escape(r['difference'])}</small></td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def declare(path: Path = REPORT) -> None:
    """The view, in a closed accordion, inside the Blocks being built."""
    report, note = load_report(path)
    with gr.Accordion("Papers: each paper's claims against specviz", open=False, elem_id="sv-papers"):
        gr.Markdown(note, elem_classes=["sv-note"])
        if report is None:
            return
        by_paper: dict[str, list[dict[str, Any]]] = {}
        for r in report["rows"]:
            by_paper.setdefault(r["paper"], []).append(r)
        for paper, rows in by_paper.items():
            gr.Markdown(f"### {paper}")
            gr.HTML(table_html(rows), elem_classes=["sv-papers-table"])
            gr.Plot(claims_figure(rows, SHORT), show_label=False)
