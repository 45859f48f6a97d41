"""Colours, symbols, labels and the figure helpers every builder shares.

One palette for the whole app so a status reads the same in the tree, the text and the legend:
accepted = green, rejected = red, not reached = grey, resampled = orange, bonus = blue. Symbols
differ too (circle, x, open circle, diamond, star), so nothing depends on colour alone.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

import plotly.graph_objects as go

from specviz.cli_params_data import COLORS
from specviz.viz.template import TEMPLATE

STATUS_COLORS: dict[str, str] = {
    "accepted": "#1f9d55",
    "rejected": "#d64545",
    "not_reached": "#aab2bd",
    "resampled": "#e08a00",
    "bonus": "#2f6fd6",
}
STATUS_SYMBOLS: dict[str, str] = {
    "accepted": "circle",
    "rejected": "x",
    "not_reached": "circle-open",
    "resampled": "diamond",
    "bonus": "star",
}
STATUS_LABELS: dict[str, str] = {
    "accepted": "accepted draft",
    "rejected": "rejected draft",
    "not_reached": "not reached",
    "resampled": "resampled (residual)",
    "bonus": "bonus (from target)",
}
# Committed-token kinds map onto the node statuses that produced them.
KIND_STATUS: dict[str, str] = {"draft": "accepted", "resampled": "resampled", "bonus": "bonus"}
CONTEXT_COLOR = "#4b5563"
PATH_COLOR = "#111827"
EDGE_COLOR = "#c8ced6"
GRID_COLOR = "#eef0f3"
CURRENT_COLOR = "#7c3aed"

# Colours for the series inside one figure (controller views: alpha/beta, widths...).
SERIES_COLORS: tuple[str, ...] = (
    "#374151",
    "#2563eb",
    "#db2777",
    "#059669",
    "#d97706",
    "#7c3aed",
    "#0891b2",
    "#65a30d",
    "#dc2626",
    "#4f46e5",
)
# One colour per algorithm, the same in every figure, header chip and replay, whatever column the
# algorithm runs in (lines in the comparison plots are algorithms, not statuses): its registration's
# ``color``, read from the registry's plain-data copy so a stored trace is drawn without the algorithms.
ALGORITHM_COLORS: dict[str, str] = dict(COLORS)
# Unknown names get one of these, chosen by a hash of the name (stable across runs and processes).
FALLBACK_COLORS: tuple[str, ...] = (
    "#be185d",
    "#0369a1",
    "#15803d",
    "#c2410c",
    "#6d28d9",
    "#475569",
    "#b91c1c",
    "#4d7c0f",
)
FONT = "Inter, ui-sans-serif, system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
MONO = "JetBrains Mono, ui-monospace, SFMono-Regular, Menlo, Consolas, monospace"


def series_color(i: int) -> str:
    """The i-th series colour inside one figure (not for algorithms: see ``algorithm_color``)."""
    return SERIES_COLORS[i % len(SERIES_COLORS)]


def algorithm_color(name: str) -> str:
    """The colour of algorithm ``name`` everywhere: fixed for the registered algorithms, and for any
    other name a deterministic pick (CRC-32 of the name, not Python's salted ``hash``)."""
    key = name.strip().lower()
    if key in ALGORITHM_COLORS:
        return ALGORITHM_COLORS[key]
    return FALLBACK_COLORS[zlib.crc32(key.encode()) % len(FALLBACK_COLORS)]


def visible_text(text: str, limit: int = 14) -> str:
    """A token's text made visible for a figure label: spaces as middle dots, newlines as a return arrow."""
    out = text.replace("\r", "").replace("\n", "↵").replace("\t", "⇥").replace(" ", "·")
    if not out:
        out = "∅"
    return out if len(out) <= limit else out[: limit - 1] + "…"


def fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "–"
    if x != x:  # NaN
        return "NaN"
    return f"{x:.{digits}f}"


def fmt_prob(x: float | None, sig: int = 3) -> str:
    """A probability with ``sig`` significant digits that never hides a small value as "0.000":
    0.156 -> "0.156", 0.5 -> "0.5", 0.0004213 -> "4.21e-4", exactly 0 -> "0"; just under 1 it
    shows the gap (0.9999996 -> "1−4e-7") so an uncertain outcome never reads as a certain one."""
    if x is None:
        return "–"
    if x != x:
        return "NaN"
    if x == 0:
        return "0"
    if abs(x) >= 1e-3:
        out = f"{x:.{sig}g}"
        if "e" in out:
            return f"{x:.{sig}f}"
        if 0 < 1 - x and float(out) >= 1:
            return "1−" + fmt_prob(1 - x, sig)
        return out
    mant, exp = f"{x:.{sig - 1}e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def html_escape(text: str) -> str:
    """Plotly reads titles, ticks, labels and hover text as HTML: escape a token's ``<``, ``>``, ``&``."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def wrap_html(text: str, width: int = 72) -> str:
    """``text`` escaped and broken into lines of at most ``width`` characters (at spaces) with ``<br>``;
    an arrow stays with the word after it ("→ rejected")."""
    words: list[str] = []
    # a quoted token (&quot; the&quot;) is one word: its own spaces are not places to break
    text = _QUOTED.sub(lambda m: m.group(0).replace(" ", "\u00a0"), html_escape(text))
    for word in text.split(" "):
        if words and words[-1] in ("→", "=", "<", "≥", "&lt;"):
            words[-1] += " " + word
        else:
            words.append(word)
    return "<br>".join(pack_lines(words, " ", width))


# A line of a hover box fits a tree at 1600 px with four columns (about 290 px wide): monospace at 12 px
# is 7.2 px a character, less the box's padding. A wider box is cut off at the figure's edges (issue 35 point 8).
HOVER_CHARS = 36
_TAG = re.compile(r"<[^>]+>")
_BOLD = re.compile(r"<b>.*?</b>")
_QUOTED = re.compile(r"&quot;[^&]{1,24}&quot;|\"[^\"]{1,24}\"")


def wrap_markup(line: str, width: int = HOVER_CHARS) -> str:
    """A line of hover markup (escaped text with ``<b>`` spans) broken at spaces into lines of at most
    ``width`` visible characters with ``<br>``: tags count nothing and a bold span is never broken."""
    words = _BOLD.sub(lambda m: m.group(0).replace(" ", "\u00a0"), line).split(" ")
    return "<br>".join(pack_lines(words, " ", width, visible=lambda w: len(_TAG.sub("", w))))


def pack_lines(items: list[str], sep: str, width: int, visible: Any = len) -> list[str]:
    """``items`` joined with ``sep`` into as few lines of at most ``width`` characters as greedy packing
    gives; an item is never split (one longer than ``width`` gets a line of its own). ``visible``: an
    item's width (its length; ``wrap_markup`` leaves tags out)."""
    lines, cur, n = [], "", 0
    for item in items:
        k = visible(item)
        if cur and n + len(sep) + k > width:
            lines.append(cur)
            cur, n = item, k
        elif cur:
            cur, n = f"{cur}{sep}{item}", n + len(sep) + k
        else:
            cur, n = item, k
    return lines + ([cur] if cur else [])


# A title line fits the narrowest figure, a column at phone width (316 px): about 7.1 px a character
# at 13 px, from 3 px in. Pixels a title takes, as plotly draws it from its top: the title line with
# the gap under it, and each subtitle line (12 px).
TITLE_CHARS, TITLE_PX, SUBTITLE_LINE_PX = 40, 20, 16
# A line of a message figure, centred on the plot of that column (48 px margin left, 16 right), stays
# inside the figure up to twice the 142 px right of its centre: 36 characters at 13 px, with room to spare.
MESSAGE_CHARS = 36


def title_lines(head: str, details: list[str], width: int = TITLE_CHARS) -> list[str]:
    """``head`` on a line of its own, then ``details`` joined with " · " into lines of at most ``width``
    characters; a detail is never split (one longer than ``width`` gets a line of its own)."""
    return [head, *pack_lines(details, " · ", width)]


def title_text(lines: list[str]) -> dict[str, Any]:
    """Title ``lines`` (plain text) as a layout title's text: the first line the title, the others its
    subtitle, smaller and grey (a multi-line plotly title would be drawn partly above its anchor)."""
    out: dict[str, Any] = {"text": html_escape(lines[0])}
    if lines[1:]:
        out["subtitle"] = {
            "text": "<br>".join(html_escape(x) for x in lines[1:]),
            "font": {"size": 12, "color": CONTEXT_COLOR},
        }
    return out


# The top of a titled figure, in pixels: padding above the title, gap under it, a legend row and the
# legend's own padding (as in ``theory.py``). LEGEND_COLUMNS entries a row at any width: at phone width
# half the plots' width (about 230 px) holds a name of LEGEND_CHARS characters at 11 px; a figure whose
# names are longer gets a row for each (a figure with a smaller legend font or narrower margins may say
# how many characters its half-width holds: ``legend_chars``).
TOP_PX, GAP_PX, LEGEND_ROW_PX, LEGEND_PAD_PX, LEGEND_COLUMNS, LEGEND_CHARS = 6, 6, 19, 12, 2, 12


def titled(
    layout: dict[str, Any], lines: list[str], data: list[dict[str, Any]], body: int, legend_chars: int = LEGEND_CHARS
) -> None:
    """Lay out a figure's top in pixels so nothing overlaps or is cut off at any width: the title
    ``lines`` (``title_lines``: the first the title, the rest its subtitle) from the top, the legend of
    ``data`` under them (a fixed number of entries a row, so its rows do not depend on the width), then
    ``body`` pixels of plots and axes."""
    layout["title"].update(**title_text(lines), y=1, yref="container", yanchor="top", pad={"t": TOP_PX})
    names = [str(tr.get("name", "")) for tr in data if tr.get("showlegend", True)]
    columns = LEGEND_COLUMNS if all(len(n) <= legend_chars for n in names) else 1
    rows = -(-len(names) // columns)
    layout["legend"].update(
        y=1, yanchor="bottom", entrywidth=1 / columns, entrywidthmode="fraction", traceorder="normal"
    )
    top = (
        TOP_PX
        + TITLE_PX
        + SUBTITLE_LINE_PX * (len(lines) - 1)
        + GAP_PX
        + (rows * LEGEND_ROW_PX + LEGEND_PAD_PX if rows else 0)
    )
    layout["margin"]["t"] = top
    layout["height"] = top + body


def base_layout(title: str | None = None, height: int = 320, **extra: Any) -> dict[str, Any]:
    """A compact white layout; ``extra`` is merged on top."""
    layout: dict[str, Any] = {
        "height": height,
        "margin": {"l": 48, "r": 16, "t": 44 if title else 16, "b": 40},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "font": {"family": FONT, "size": 12, "color": "#1f2937"},
        "hoverlabel": {"font": {"family": MONO, "size": 12}, "align": "left"},
        "showlegend": True,
        "legend": {
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.0,
            "xanchor": "left",
            "x": 0,
            "font": {"size": 11},
            "bgcolor": "rgba(255,255,255,0.6)",
        },
        # the toolbar upright down the right edge from the plot area's top, under the title and legend
        # (``ui.style.APP_CSS``), short enough for a short plot: zoom, pan, reset and download (the
        # selection tools select nothing here; the mouse wheel and a double click zoom and reset too)
        "modebar": {"orientation": "v", "remove": ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d"]},
    }
    if title:
        layout["title"] = {
            "text": title,
            "x": 0.01,
            "xanchor": "left",
            "y": 0.98,
            "yanchor": "top",
            "font": {"size": 13},
        }
    layout.update(extra)
    return layout


def axis(title: str | None = None, **extra: Any) -> dict[str, Any]:
    a: dict[str, Any] = {
        "gridcolor": GRID_COLOR,
        "zerolinecolor": GRID_COLOR,
        "linecolor": "#d1d5db",
        "title": {"text": title or "", "font": {"size": 11}},
        "tickfont": {"size": 10},
    }
    a.update(extra)
    return a


try:
    import orjson

    def _dumps(obj: Any) -> str:
        return orjson.dumps(obj, option=orjson.OPT_SERIALIZE_NUMPY).decode()
except ImportError:  # pragma: no cover - gradio depends on orjson
    import json

    def _dumps(obj: Any) -> str:
        return json.dumps(obj)


class Figure(go.Figure):
    """A ``go.Figure`` whose plain ``to_json()`` dumps its data directly.

    Plotly's ``to_json`` deep-copies the figure and walks it looking for arrays to encode (about
    4 ms for a 64-node tree); the builders here put only plain Python values in a figure, so the
    direct dump (0.2 ms) gives the same JSON. Gradio's ``gr.Plot`` calls ``to_json()`` on every
    update. Any argument falls back to plotly's own implementation.
    """

    def to_json(self, *args: Any, **kwargs: Any) -> str:
        if args or kwargs:
            return super().to_json(*args, **kwargs)
        try:
            return _dumps({"data": self._data, "layout": self._layout})
        except TypeError:
            return super().to_json()


LONG_LIST = 64  # a trace's list of more items than this is handed to the figure as it is, not deep-copied


def figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> go.Figure:
    """Build a figure from plain dicts without plotly's per-property validation.

    Validation costs ~5x the rest of a figure build; the builders' output is validated once in the
    test suite instead (``tests/test_viz.py`` rebuilds every figure with validation on). A trace's long
    lists (its ``x``, ``y``, ``customdata`` of more than ``LONG_LIST`` points) become the figure's own
    without the deep copy plotly makes of every trace (a 12,000-step theory panel: 320,000 numbers,
    most of its build; issue #23); the figure holds the same values, in the same key order. The lists
    are the builder's: a builder makes them for the figure and does not change them after.
    """
    if "template" not in layout:
        layout = {**layout, "template": TEMPLATE}  # plotly's default less what no figure uses (viz.template)
    long = [{k: v for k, v in tr.items() if type(v) is list and len(v) > LONG_LIST} for tr in data]
    if not any(long):
        return Figure({"data": data, "layout": layout}, _validate=False)
    short = [{**tr, **dict.fromkeys(big, ())} if big else tr for tr, big in zip(data, long)]  # a stand-in each
    fig = Figure({"data": short, "layout": layout}, _validate=False)
    if not all(props.get(k) == () for big, props in zip(long, fig._data) for k in big):  # a plotly that rewrites
        return Figure({"data": data, "layout": layout}, _validate=False)
    for big, props in zip(long, fig._data):  # the dicts the trace objects read: plotly's key order kept
        props.update(big)
    return fig


def message_figure(text: str, height: int = 220, title: str | None = None) -> go.Figure:
    """An empty figure that says why it is empty (no run yet, no steps, no controller...)."""
    layout = base_layout(title, height=height, showlegend=False)
    layout["xaxis"] = {"visible": False}
    layout["yaxis"] = {"visible": False}
    layout["annotations"] = [
        {
            "text": text,
            "x": 0.5,
            "y": 0.5,
            "xref": "paper",
            "yref": "paper",
            "showarrow": False,
            "font": {"size": 13, "color": "#6b7280"},
        }
    ]
    return figure([], layout)
