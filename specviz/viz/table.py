"""The comparison table (HTML) and the greedy-equality check against ``ar``.

Every column header carries its definition from ``specviz.metrics.DEFINITIONS`` as a tooltip, and
the definitions are listed under the table: the same word means different things in different
tools, so the numbers are never shown without them.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

from specviz import metrics
from specviz.trace import RunTrace

COLUMNS: tuple[tuple[str, str, str], ...] = (
    # key, header, definition key
    ("new_tokens", "tokens", "new_tokens"),
    ("target_calls", "target calls", "target_calls"),
    ("draft_calls", "draft calls", "draft_calls"),
    ("tau", "τ", "tau"),
    ("acceptance_rate", "accept rate", "acceptance_rate"),
    ("acceptance_per_position", "accept by position %", "acceptance_per_position"),
    ("wall_time_s", "wall s", "wall_time_s"),
    ("tokens_per_s", "tokens/s", "tokens_per_s"),
    ("speedup", "speed-up vs ar", "speedup"),
    ("greedy", "greedy = ar", "greedy"),
)
GREEDY_DEFINITION = (
    "at temperature 0 a lossless algorithm must reproduce ar's greedy output token for token; "
    "✓ identical, ✗ first differing position"
)


def first_divergence(a: Sequence[int], b: Sequence[int]) -> int | None:
    """Index of the first position where ``a`` and ``b`` differ (length difference counts), else ``None``."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def greedy_check(trace: RunTrace, baseline: RunTrace | None) -> str:
    """Text for the greedy column: only meaningful at temperature 0 with an ``ar`` baseline."""
    if trace.algorithm == "ar":
        return "reference"
    if float(trace.sampling.get("temperature", 1.0)) != 0.0:
        return "n/a (T > 0)"
    if baseline is None:
        return "run ar too"
    if baseline.steps and trace.steps and (trace.finish_reason == "" or baseline.finish_reason == ""):
        return "running…"
    i = first_divergence(trace.output_ids, baseline.output_ids)
    if i is None:
        return "✓ identical"
    common = min(len(trace.output_ids), len(baseline.output_ids))
    if i >= common and "stopped" in (trace.finish_reason, baseline.finish_reason):
        return f"✓ identical over the first {common} tokens (stopped)"  # one stopped early: not a divergence
    a = trace.output_ids[i] if i < len(trace.output_ids) else None
    b = baseline.output_ids[i] if i < len(baseline.output_ids) else None
    return f"✗ differs at token {i + 1} (id {a} vs ar's {b})"


def comparison_rows(runs: Sequence[tuple[str, RunTrace]]) -> list[dict[str, Any]]:
    """One dict per run with the table's values (numbers, not strings)."""
    baseline = next((t for _, t in runs if t.algorithm == "ar" and t.finish_reason), None)
    rows = []
    for label, trace in runs:
        m = trace.metrics or metrics.summarize(trace)
        row = {"label": label, **{k: m.get(k) for k, _, _ in COLUMNS if k in m}}
        row["speedup"] = metrics.speedup(trace, baseline) if baseline is not None and trace.finish_reason else None
        row["acceptance_per_position"] = metrics.acceptance_per_position(trace)
        row["greedy"] = greedy_check(trace, baseline)
        row["finished"] = bool(trace.finish_reason)
        rows.append(row)
    return rows


SHOWN_POSITIONS = 3  # the table shows the first draft positions' rates; the cell's tooltip has them all


def position_cell(vec: Sequence[metrics.PositionAcceptance]) -> tuple[str, str]:
    """The per-position acceptance cell (``metrics.acceptance_per_position``): the first
    ``SHOWN_POSITIONS`` rates in percent joined by "/" ("–" for a position never reached, "…" when
    deeper ones were reached), and its tooltip: every position's accepted / reached counts."""
    vec = list(vec)
    while vec and not vec[-1].reached:  # drafted this deep but never tested (as in the figure)
        vec.pop()
    if not vec:
        return "–", "nothing drafted and tested"
    shown = "/".join("–" if pa.rate is None else f"{100 * pa.rate:.0f}" for pa in vec[:SHOWN_POSITIONS])
    tip = "; ".join(f"position {pa.position}: {pa.accepted}/{pa.reached}" for pa in vec)
    return shown + ("…" if len(vec) > SHOWN_POSITIONS else ""), "accepted/reached by draft position: " + tip


def _cell(key: str, v: Any) -> str:
    if v is None:
        return "–"
    if key in ("tau",):
        return f"{v:.2f}"
    if key == "acceptance_rate":
        return f"{100 * v:.1f}%"
    if key == "wall_time_s":
        return f"{v:.2f}"
    if key == "tokens_per_s":
        return f"{v:.1f}"
    if key == "speedup":
        return f"{v:.2f}×"
    return html.escape(str(v))


TIMED: tuple[str, ...] = ("wall_time_s", "tokens_per_s", "speedup")
COLUMN_TIP = "one row per column of the page: its algorithm and the settings that tell it from its neighbours"


def comparison_table_html(
    runs: Sequence[tuple[str, RunTrace]], show_definitions: bool = True, not_comparable: str | None = None
) -> str:
    """The table as HTML (class ``sv-table``), best τ and speed-up in bold, definitions underneath.

    ``not_comparable`` (why, e.g. "the columns ran interleaved on one device") marks the wall-time
    figures as not comparable: greyed, starred, never bold, with the reason above the table."""
    if not runs:
        return '<div class="sv-empty">Run some algorithms to compare them here.</div>'
    rows = comparison_rows(runs)
    best: dict[str, float] = {}
    for key in ("tau",) if not_comparable else ("tau", "tokens_per_s", "speedup"):
        vals = [r.get(key) for r in rows if isinstance(r.get(key), (int, float)) and r["finished"]]
        if len(vals) > 1:
            best[key] = max(vals)
    defs = {**metrics.DEFINITIONS, "greedy": GREEDY_DEFINITION}
    head = "".join(f'<th title="{html.escape(defs.get(d, ""))}">{html.escape(h)}</th>' for _, h, d in COLUMNS)
    body = []
    for r in rows:
        cells = []
        for key, _, _ in COLUMNS:
            v = r.get(key)
            text = _cell(key, v) if key != "greedy" else html.escape(str(v))
            cls = ""
            if key == "acceptance_per_position":
                text, tip = position_cell(v)
                cls = f' class="sv-vec" title="{html.escape(tip)}"'
            elif not_comparable and key in TIMED:
                cls = f' class="sv-nc" title="not comparable: {html.escape(not_comparable)}"'
                text += "*" if v is not None else ""
            elif key in best and v == best[key]:
                cls = ' class="sv-best"'
            elif key == "greedy" and str(v).startswith("✗"):
                cls = ' class="sv-bad sv-wrap"'
            elif key == "greedy" and str(v).startswith("✓"):
                cls = ' class="sv-good"'
            cells.append(f"<td{cls}>{text}</td>")
        status = "" if r["finished"] else ' <span class="sv-running">running…</span>'
        body.append(f'<tr><th scope="row">{html.escape(r["label"])}{status}</th>{"".join(cells)}</tr>')
    warn = ""
    if not_comparable:
        warn = (
            f'<div class="sv-nc-note">* Wall-time figures are <b>not comparable</b>: {html.escape(not_comparable)}. '
            "Press <b>Measure</b> for timings run one after another, unpaced, with repeats.</div>"
        )
    out = warn + (
        '<div class="sv-table-wrap"><table class="sv-table">'
        f'<thead><tr><th title="{COLUMN_TIP}">column</th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )
    if show_definitions:
        items = "".join(f"<li><b>{html.escape(h)}</b>: {html.escape(defs.get(d, ''))}</li>" for _, h, d in COLUMNS)
        out += (
            '<details class="sv-defs" open><summary>What the numbers mean</summary>'
            f"<ul>{items}</ul><p>Wall time is the sum of the run's step times (runs shown side by side are "
            "interleaved step by step on one device, so each is timed only while it runs).</p></details>"
        )
    return out


TABLE_CSS = """
.sv-table-wrap { overflow-x: auto; max-width: 100%; }
.sv-table { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
.sv-table th, .sv-table td { padding: 6px 9px; border-bottom: 1px solid #e5e7eb; text-align: right;
  white-space: nowrap; }
.sv-table thead th { background: #f9fafb; color: #374151; font-weight: 600; cursor: help;
  border-bottom: 2px solid #d1d5db; }
.sv-table tbody th { text-align: left; font-weight: 600; white-space: normal; min-width: 90px; max-width: 210px; }
.sv-table thead th { white-space: normal; }
.sv-table .sv-best { font-weight: 700; color: #065f46; }
.sv-table .sv-good { color: #065f46; }
.sv-table .sv-bad { color: #b91c1c; font-weight: 600; }
.sv-table .sv-nc { color: #9ca3af; }
.sv-table .sv-vec { cursor: help; font-size: 12px; }
.sv-table td.sv-wrap { white-space: normal; min-width: 120px; }
.sv-nc-note { font-size: 12px; color: #92400e; background: #fffbeb; border: 1px solid #fde68a; border-radius: 6px;
  padding: 4px 8px; margin-bottom: 6px; }
.sv-running { color: #7c3aed; font-weight: 400; font-size: 11px; }
.sv-defs { font-size: 12px; color: #4b5563; margin-top: 6px; }
.sv-defs ul { margin: 4px 0 4px 18px; padding: 0; columns: 2; column-gap: 28px; }
.sv-defs li { break-inside: avoid; margin-bottom: 2px; }
.sv-defs summary { cursor: pointer; }
"""
