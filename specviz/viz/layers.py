"""The layer view of a step: the logit lens (``StepRecord.lens``) as a heatmap, and its narrative.

Rows are the target's layers, columns the positions that produced the step's committed tokens; a
cell shows the token that layer would predict through the target's own final norm and head, coloured
by whether it is the last layer's token (the target's own choice) and shaded by its probability. The
early-exit layer of the pair (EESD's N; Liu et al. 2024, arXiv 2406.03853, Sec. 3.1, Eq. 1) is
marked, and a line on the right gives per layer the share of positions that already agree with the
last layer. Plain data in, a figure out: no model.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from specviz.trace import LayerLens, StepRecord
from specviz.viz.style import (
    CURRENT_COLOR,
    axis,
    base_layout,
    figure,
    fmt_prob,
    html_escape,
    message_figure,
    title_lines,
    titled,
    visible_text,
)

AGREE, DISAGREE = "#1f9d55", "#d64545"
ROW_PX, MIN_BODY_PX = 18, 220


def agreement(lens: LayerLens) -> list[list[bool]]:
    """Per layer (row) and position: whether the layer's top-1 token is the last layer's."""
    final = lens.ids[-1]
    return [[a == b for a, b in zip(row, final)] for row in lens.ids]


def first_agreeing(lens: LayerLens) -> list[int | None]:
    """Per position: the shallowest layer from which every deeper layer shown agrees with the last."""
    agree = agreement(lens)
    out: list[int | None] = []
    for j in range(len(lens.reads)):
        first = None
        for layer, row in zip(reversed(lens.layers), reversed(agree)):
            if not row[j]:
                break
            first = layer
        out.append(first)
    return out


def exit_row(lens: LayerLens) -> int | None:
    """The row of the exit layer, if it is shown."""
    return lens.layers.index(lens.exit_layer) if lens.exit_layer in lens.layers else None


def _hover(lens: LayerLens, agree: list[list[bool]]) -> list[list[str]]:
    """Each cell's hover: the layer, the position and what it reads, its top-1 token and probability, and
    whether it is the last layer's token (else which that is)."""
    final = lens.texts[-1]
    return [
        [
            f"layer {layer} at position {j + 1} (reads {html_escape(visible_text(lens.reads[j], 16))})<br>"
            f"top-1 {html_escape(visible_text(t, 16))} p = {fmt_prob(p)}<br>"
            f"{'= the last layer' if a else 'last layer: ' + html_escape(visible_text(final[j], 16))}"
            for j, (t, p, a) in enumerate(zip(trow, prow, arow))
        ]
        for layer, trow, prow, arow in zip(lens.layers, lens.texts, lens.probs, agree)
    ]


def _heatmap(lens: LayerLens, agree: list[list[bool]], y: list[str]) -> dict[str, Any]:
    """Layer by position: each cell's top-1 token, green where it is the last layer's, red where not,
    darker the likelier."""
    x = [f"{j + 1}: {visible_text(r, 10)}" for j, r in enumerate(lens.reads)]
    z = [[(1 if a else -1) * (0.25 + 0.75 * p) for a, p in zip(arow, prow)] for arow, prow in zip(agree, lens.probs)]
    return {
        "type": "heatmap",
        "x": x,
        "y": y,
        "z": z,
        "zmin": -1,
        "zmax": 1,
        "showscale": False,
        "xgap": 1,
        "ygap": 1,
        "colorscale": [[0, DISAGREE], [0.5, "#ffffff"], [1, AGREE]],
        "text": [[visible_text(t, 6) for t in row] for row in lens.texts],
        "texttemplate": "%{text}",
        "textfont": {"size": 9},
        "customdata": _hover(lens, agree),
        "hovertemplate": "%{customdata}<extra></extra>",
        "name": "top-1 token",
        "showlegend": False,
        "xaxis": "x",
        "yaxis": "y",
    }


def _share_trace(share: list[float], y: list[str]) -> dict[str, Any]:
    """Right: per layer, the share of positions whose token agrees with the last layer's."""
    return {
        "type": "scatter",
        "x": share,
        "y": y,
        "mode": "lines+markers",
        "name": "agrees with the last layer",
        "line": {"color": AGREE, "width": 2},
        "marker": {"size": 4},
        "xaxis": "x2",
        "yaxis": "y",
        "hovertemplate": "%{y}: %{x:.0%} of positions agree<extra></extra>",
    }


def _exit_mark(row: int, exit_layer: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The exit layer's row framed across both plots, and its legend entry."""
    frame = {
        "type": "rect",
        "xref": "paper",
        "yref": "y",
        "x0": 0,
        "x1": 1,
        "y0": row - 0.5,
        "y1": row + 0.5,
        "line": {"color": CURRENT_COLOR, "width": 2},
        "fillcolor": "rgba(0,0,0,0)",
    }
    entry = {
        "type": "scatter",
        "x": [None],
        "y": [None],
        "mode": "lines",
        "name": f"exit layer {exit_layer}",
        "line": {"color": CURRENT_COLOR, "width": 2},
        "xaxis": "x2",
        "yaxis": "y",
        "hoverinfo": "skip",
    }
    return frame, entry


def _details(lens: LayerLens, share: list[float], row: int | None) -> list[str]:
    """The lines under the title: the grid's size, the colours' meaning, the exit layer's agreement."""
    n = len(lens.reads)
    details = [
        f"{n} position{'s' if n != 1 else ''} × {len(lens.layers)} of {lens.n_layers} layers",
        "green: the last layer's token",
        "red: another",
        "darker: likelier",
    ]
    if lens.exit_layer is not None:
        details.append(f"exit layer {lens.exit_layer}: {fmt_share(share[row]) if row is not None else '?'} agree")
    return details


def layers_figure(step: StepRecord | None, algorithm: str = "") -> go.Figure:
    """The step's layer view (module docstring); a message where the step recorded no lens."""
    if step is None:
        return message_figure("No step to show.", title="Layers")
    lens = step.lens
    if lens is None:
        return message_figure("This step recorded no layer view (run with the layer view on).", title="Layers")
    agree = agreement(lens)
    y = [f"L{layer}" for layer in lens.layers]
    share = [sum(row) / len(lens.reads) for row in agree]
    data = [_heatmap(lens, agree, y), _share_trace(share, y)]
    shapes: list[dict[str, Any]] = []
    row = exit_row(lens)
    if row is not None:
        frame, entry = _exit_mark(row, lens.exit_layer)
        shapes.append(frame)
        data.append(entry)
    head = f"Layers · step {step.index + 1}" + (f" · {algorithm}" if algorithm else "")
    layout = base_layout(head)
    layout["xaxis"] = axis("position (the token it reads)", domain=[0, 0.78], tickangle=-30, side="bottom")
    layout["xaxis2"] = axis("agree", domain=[0.82, 1], range=[-0.05, 1.05], tickformat=".0%", dtick=1)
    layout["yaxis"] = axis("layer", autorange="reversed", tickfont={"size": 9})
    layout["shapes"] = shapes
    titled(
        layout, title_lines(head, _details(lens, share, row)), data, max(MIN_BODY_PX, ROW_PX * len(lens.layers) + 70)
    )
    return figure(data, layout)


def fmt_share(x: float) -> str:
    """A share as a whole percentage: ``0.5`` -> ``50%``."""
    return f"{round(100 * x)}%"


def layers_narrative(step: StepRecord | None) -> str:
    """What the step's layer view says about drafting from an early layer, in a few sentences (markdown)."""
    if step is None or step.lens is None:
        return (
            "The layer view shows, for a step's positions, what each layer of the target would predict "
            "through the target's own output head (the logit lens). Turn it on before the run."
        )
    lens = step.lens
    agree = agreement(lens)
    n = len(lens.reads)
    settled = first_agreeing(lens)
    known = [s for s in settled if s is not None]
    parts = [
        f"Step {step.index + 1}: {n} position{'s' if n != 1 else ''}, each read through the target's final "
        f"norm and output head at {len(lens.layers)} of its {lens.n_layers} layers (the logit lens)."
    ]
    if known:
        parts.append(
            f"The last layer's token is settled from layer {min(known)} at the earliest and "
            f"{max(known)} at the latest (median {sorted(known)[len(known) // 2]})."
        )
    row = exit_row(lens)
    if row is not None:
        k = sum(agree[row])
        parts.append(
            f"At the exit layer {lens.exit_layer}, where `eesd` drafts from, the target's own head already gives the "
            f"last layer's token at {k} of {n} position{'s' if n != 1 else ''}. Where it does not, a draft read "
            "there has to learn what the remaining layers add, and its exit layer and head are trained for "
            "exactly that (EESD, Liu et al. 2024, Sec. 3.1); a low agreement here is why a shallow exit "
            "drafts tokens the target rejects, and why deeper exits accept more but cost more per draft token."
        )
    elif lens.exit_layer is None:
        parts.append(
            "This pair has no early-exit head; the rows show how early the target's answer forms, which "
            "is what an early-exit drafter (EESD) could read at most through the target's own head."
        )
    return " ".join(parts)
