"""Controller views: the figures of the typed state a step carries (``specviz.step_state``), chosen by
the state's **type** (``viz.registry``: ``@register_view(ThompsonState)``).

``controller_figure(trace, step)`` draws the view registered for the state's type, or, when there is
none or it has nothing to draw (a round with no posterior yet), the ``generic_view``: numeric scalars
over steps and numeric lists at the step, read from the state's JSON, so a kind added later, or one
this specviz does not know (``UnknownState``, with a note), shows its state with no change here. A view
reads typed fields (checked once, when the trace was read), so it needs no type checks. The modules
below import the other views so that every one is registered once this module is.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import plotly.graph_objects as go

from specviz.step_state import (
    BetaTSState,
    CaliTSState,
    ControllerState,
    FixedState,
    LengthState,
    SequoiaState,
    ThompsonState,
    UnknownState,
)
from specviz.trace import RunTrace
from specviz.viz import beam_story, beams, theory  # noqa: F401 - they register their views
from specviz.viz.registry import ABSENT, VIEWS, controller_kind, register_view, state_type, view_for
from specviz.viz.style import (
    CURRENT_COLOR,
    MESSAGE_CHARS,
    STATUS_COLORS,
    axis,
    base_layout,
    figure,
    message_figure,
    series_color,
    title_lines,
    titled,
    wrap_html,
)

CONTROLLER_VIEWS = VIEWS  # the registry (``viz.registry``), under its old name
__all__ = [
    "CONTROLLER_VIEWS",
    "column_figure",
    "controller_figure",
    "controller_kind",
    "draft_lengths_figure",
    "generic_view",
    "parameters_figure",
    "posterior_figure",
    "register_view",
    "thompson_figures",
]


def controller_figure(trace: RunTrace | None, step: int, height: int = 280) -> go.Figure | None:
    """The controller view of step ``step`` (0-based), or ``None`` if the trace carries no state."""
    kind = state_type(trace)
    if kind is None:
        return None
    step = max(0, min(step, len(trace.steps) - 1))
    view = view_for(kind, "controller")
    fig = view(trace, step) if view is not ABSENT and view is not None else None
    if fig is None:
        fig = generic_view(trace, step)
    fig.layout.height = fig.layout.height or height
    return fig


def column_figure(trace: RunTrace | None, step: int) -> go.Figure | None:
    """The controller plot of the app's column: the ``"column"`` view, else ``controller_figure``."""
    view = view_for(state_type(trace), "column")
    if view is None:
        return None
    if view is ABSENT:
        return controller_figure(trace, step)
    return view(trace, max(0, min(step, len(trace.steps) - 1)))


def _states(trace: RunTrace) -> list[ControllerState | None]:
    return [s.controller for s in trace.steps]


def _two_panels(layout: dict[str, Any], split: float = 0.5, right_gap: float = 0.04) -> None:
    """Two plots side by side; ``right_gap`` is the room (a fraction of the plots' width) left of the
    right plot for its y axis's tick labels and title."""
    layout["xaxis"] = axis(None, domain=[0, split - 0.07])
    layout["yaxis"] = axis(None)
    layout["xaxis2"] = axis(None, domain=[split + right_gap, 1], anchor="y2")
    layout["yaxis2"] = axis(None, anchor="x2")


def tick_step(n: int, most: int) -> int:
    """The step between whole-number ticks of an axis of ``n`` values that shows at most ``most`` labels
    (1, 2, 5, 10, 20, 50, ...): the labels the narrowest plot holds apart, whatever its width (with a
    step of 1 Sequoia's 32 ranks ran into one another)."""
    step = 1
    while -(-n // step) > most:
        step = next(s * 10**e for e in range(12) for s in (1, 2, 5) if s * 10**e > step)
    return step


def _is_num(v: Any) -> bool:
    """A finite JSON number (the generic view reads a state's untyped JSON object)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# ---- generic ----------------------------------------------------------------------------------------
def generic_view(trace: RunTrace, step: int) -> go.Figure:
    """Numeric scalars of the controller state over steps (left) and numeric lists at ``step`` (right),
    read from each state's JSON object (any kind, known or not); an ``UnknownState`` says why it is
    drawn this way under the title."""
    states = [s.to_json() if s is not None else None for s in _states(trace)]
    cur = states[step] or {}
    scalars = [k for k, v in cur.items() if _is_num(v)]
    for st in states:
        for k, v in (st or {}).items():
            if _is_num(v) and k not in scalars:
                scalars.append(k)
    scalars = scalars[:6]
    lists = [k for k, v in cur.items() if isinstance(v, list) and v and all(_is_num(x) for x in v)][:3]
    data: list[dict[str, Any]] = []
    xs = list(range(1, len(states) + 1))
    for i, k in enumerate(scalars):
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": k,
                "x": xs,
                "y": [(st or {}).get(k) if _is_num((st or {}).get(k)) else None for st in states],
                "line": {"color": series_color(i + 1), "width": 2},
                "marker": {"size": 4},
            }
        )
    for i, k in enumerate(lists):
        data.append(
            {
                "type": "bar",
                "name": f"{k} (step {step + 1})",
                "x": list(range(len(cur[k]))),
                "y": cur[k],
                "xaxis": "x2",
                "yaxis": "y2",
                "marker": {"color": series_color(i + 4)},
            }
        )
    kind = cur.get("kind", controller_kind(trace))
    state = trace.steps[step].controller
    note = [state.note] if isinstance(state, UnknownState) and state.note else []
    if not data:
        return _state_message(cur, kind, note)
    layout = base_layout(f"Controller state: {kind}")
    if lists:
        _two_panels(layout, 0.55)
        layout["xaxis2"]["title"] = {"text": "index", "font": {"size": 11}}
    else:
        layout["xaxis"] = axis("step")
        layout["yaxis"] = axis(None)
    layout["xaxis"]["title"] = {"text": "step", "font": {"size": 11}}
    layout["shapes"] = [
        {
            "type": "line",
            "x0": step + 1,
            "x1": step + 1,
            "y0": 0,
            "y1": 1,
            "yref": "paper",
            "xref": "x",
            "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
        }
    ]
    titled(layout, title_lines(f"Controller state: {kind}", note), data, 210)
    return figure(data, layout)


def _state_message(state: dict[str, Any], kind: Any, note: list[str] = (), limit: int = 200) -> go.Figure:
    """A state with nothing to plot, as text: its first ``limit`` characters of ``key=value`` items on
    lines that fit the narrowest column (a word longer than a line is cut short with "…"), after ``note``."""
    text = ", ".join(f"{k}={v}" for k, v in state.items() if k != "kind") or "no numeric state"
    text = f"controller {kind}: " + (text if len(text) <= limit else text[: limit - 1] + "…")
    words = [w if len(w) < MESSAGE_CHARS else w[: MESSAGE_CHARS - 2] + "…" for w in text.split(" ")]
    lines = wrap_html(" ".join(words), MESSAGE_CHARS)
    said = wrap_html(" ".join(note), MESSAGE_CHARS) if note else ""
    rows = lines.count("<br>") + 1 + (said.count("<br>") + 2 if said else 0)
    fig = message_figure(lines, height=max(240, 100 + 18 * rows), title=f"Controller: {kind}")
    if said:  # why the state is drawn this way, under it
        fig.layout.annotations[0].y = 0.6
        fig.add_annotation(
            text=said, x=0.5, y=0.15, xref="paper", yref="paper", showarrow=False, font={"size": 12, "color": "#6b7280"}
        )
    return fig


# ---- EESD: Thompson sampling ---------------------------------------------------------------------
def beta_pdf(x: float, a: float, b: float) -> float:
    if x <= 0 or x >= 1:
        return 0.0
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    return math.exp(log_norm + (a - 1) * math.log(x) + (b - 1) * math.log1p(-x))


def normal_pdf(x: float, mu: float, sigma: float) -> float:
    return math.exp(-0.5 * ((x - mu) / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))


def _density(st: ControllerState | None) -> tuple[Callable[[float], float], str, float] | None:
    """The round's posterior over theta: Beta(alpha, beta) (Beta-TS) or N(mu, sigma^2) (Cali-TS, the
    Gaussian of the round's first draft step, absent when it drafted nothing); ``(pdf, label, mean)``
    or None."""
    if isinstance(st, BetaTSState):
        a, b = float(st.before.alpha), float(st.before.beta)
        if a <= 0 or b <= 0:
            return None
        return (lambda x: beta_pdf(x, a, b)), f"Beta(α={a:.1f}, β={b:.1f})", a / (a + b)
    if isinstance(st, CaliTSState) and st.mu is not None and st.sigma is not None:
        mu, sigma = float(st.mu), max(float(st.sigma), 1e-6)
        return (lambda x: normal_pdf(x, mu, sigma)), f"N(μ={mu:.3f}, σ={sigma:.3f})", mu
    return None


GRID = [i / 200 for i in range(1, 200)]


def curve(density: Callable[[float], float]) -> list[float]:
    """A density on ``GRID`` to 4 significant digits: a curve drawn some 200 px tall shows no more, and a
    live update sends 13 of them every step (full floats made the controller panel 63 kB a step, issue 34)."""
    return [float(f"{density(x):.4g}") for x in GRID]


def _posterior_traces(
    states: list[ControllerState | None], step: int, history: int, axes: dict[str, str]
) -> list[dict[str, Any]] | None:
    """The selected round's density (filled), the ``history`` rounds before it faded behind it (older
    fainter), and every theta sampled in the round (continue ▲ / stop ✕)."""
    st = states[step]
    cur = _density(st)
    if cur is None:
        return None
    dens, label, _ = cur
    data: list[dict[str, Any]] = []
    earlier = [(i, states[i]) for i in range(max(0, step - history), step) if states[i] is not None]
    for n, (i, prev) in enumerate(earlier):
        d = _density(prev)
        if d is None:
            continue
        alpha = 0.12 + 0.4 * (n + 1) / len(earlier)
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "x": GRID,
                "y": curve(d[0]),
                **axes,
                "name": "past rounds",
                "legendgroup": "earlier",
                "showlegend": n == len(earlier) - 1,
                "line": {"color": f"rgba(107,114,128,{alpha:.2f})", "width": 1.2},
                "hovertemplate": f"round {i + 1}: {d[1]}<extra></extra>",
            }
        )
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "x": GRID,
            "y": curve(dens),
            **axes,
            "name": f"round {step + 1}",
            "line": {"color": "#2563eb", "width": 2.5},
            "fill": "tozeroy",
            "fillcolor": "rgba(37,99,235,0.10)",
            "hovertemplate": "θ=%{x:.2f} density %{y:.2f}<extra>" + label + "</extra>",
        }
    )
    draws = st.draws
    for group, name, sym, color in (
        ([d for d in draws if d.go_on], "θ → continue", "triangle-up", STATUS_COLORS["accepted"]),
        ([d for d in draws if not d.go_on], "θ → stop", "x", STATUS_COLORS["rejected"]),
    ):
        if group:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": name,
                    **axes,
                    "x": [float(d.theta) for d in group],
                    "y": [dens(min(max(float(d.theta), 1e-3), 1 - 1e-3)) for d in group],
                    "marker": {"symbol": sym, "size": 11, "color": color, "line": {"width": 1, "color": "white"}},
                    "customdata": [[d.i, d.u, stop_hover(d.stop)] for d in group],
                    "hovertemplate": "draft token %{customdata[0]}: θ=%{x:.3f}  u=%{customdata[1]}"
                    " %{customdata[2]}<extra>" + name + "</extra>",
                }
            )
    return data


def _posterior_round(states: list[ControllerState | None], step: int) -> int | None:
    """The latest round up to ``step`` that carries a posterior: ``step`` itself, or for a round that
    drafted nothing (Cali-TS records its Gaussian at the first draft step; the last step of a run may
    have no room to draft) the round before it that did."""
    return next((i for i in range(step, -1, -1) if _density(states[i])), None)


# Why a round stopped drafting, in words: the ``stop_reason`` codes of the EESD controllers
# (``specviz.core.thompson.stop_reason``; ``fixed_length`` from the fixed baseline): ``chi0`` the coin
# chi ~ Bernoulli(theta) drawn after a drafted token came up 0, ``k_cap`` the optional safety cap k_max
# ended a round the coin would have continued, ``max_len`` no room left under max new tokens, ``eos`` an
# end-of-text token drafted. The code itself is kept for the hover texts.
STOP_WORDS = {
    "chi0": "a θ coin flip said stop",
    "k_cap": "hit the k_max cap",
    "max_len": "max new tokens reached",
    "eos": "drafted the end of text",
    "fixed_length": "drafted its fixed length",
}


def stop_words(code: Any) -> str:
    """``"stopped: "`` and why, in words, for a ``stop_reason`` code ("" for none; an unknown code as it is)."""
    return f"stopped: {STOP_WORDS.get(str(code), str(code))}" if code else ""


def stop_hover(code: Any) -> str:
    """``stop_words`` with the raw code after it, for a hover text."""
    return f"{stop_words(code)} ({code})" if code else ""


def _round_title(st: ControllerState | None, step: int, label: str, mean: float, shown: int | None = None) -> list[str]:
    """The round on the first line; the posterior (of round ``shown`` when not this one), drafted /
    accepted and why it stopped under it."""
    details = [label, f"mean {mean:.2f}"]
    if shown is not None and shown != step:
        details.insert(0, f"posterior of round {shown + 1} (none drafted)")
    if isinstance(st, LengthState):
        details.append(f"drafted {st.drafted}, accepted {st.accepted}")
        if st.stop_reason:
            details.append(stop_words(st.stop_reason))
    return title_lines(f"Thompson sampling · round {step + 1}", details)


def _mark(layout: dict[str, Any], step: int, xref: str, yref: str) -> None:
    layout.setdefault("shapes", []).append(
        {
            "type": "line",
            "x0": step + 1,
            "x1": step + 1,
            "y0": 0,
            "y1": 1,
            "yref": yref,
            "xref": xref,
            "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
        }
    )


def posterior_figure(trace: RunTrace, step: int, history: int = 12, height: int = 226) -> go.Figure | None:
    """The posterior over theta of round ``step`` with every theta sampled in it marked and the
    ``history`` earlier rounds' densities faded behind it (EESD, arXiv 2406.03853, Algorithms 2-3);
    ``height``: pixels under the title and legend."""
    states = _states(trace)
    shown = _posterior_round(states, step)
    data = None if shown is None else _posterior_traces(states, shown, history, {})
    if data is None:
        return None
    _, label, mean = _density(states[shown])
    layout = base_layout("Thompson sampling")
    layout["xaxis"] = axis("θ = P(draft on)", range=[0, 1])
    layout["yaxis"] = axis("density")
    titled(layout, _round_title(states[step], step, label, mean, shown), data, height)
    return figure(data, layout)


def _series(states: list[ControllerState | None], kind: type, get: Callable[[Any], Any]) -> list[Any]:
    """``get(state)`` of each state of type ``kind``, ``None`` for the others."""
    return [get(s) if isinstance(s, kind) else None for s in states]


def _over_rounds_traces(states: list[ControllerState | None], axes: tuple[str, str, str]) -> list[dict[str, Any]]:
    """Beta-TS: alpha and beta (left axis) and the posterior mean (right axis, [0, 1]) per round;
    Cali-TS: the three estimates theta_M, theta_hat and the blend mu, and the weight w_M, all in [0, 1]."""
    x, y_left, y_right = axes
    xs = list(range(1, len(states) + 1))
    line = lambda name, ys, color, yaxis, dash="solid": {  # noqa: E731
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "x": xs,
        "y": ys,
        "xaxis": x,
        "yaxis": yaxis,
        "line": {"color": color, "width": 2, "dash": dash},
        "marker": {"size": 4},
    }
    if any(isinstance(s, BetaTSState) for s in states):
        a = _series(states, BetaTSState, lambda s: s.before.alpha)
        b = _series(states, BetaTSState, lambda s: s.before.beta)
        mean = [ai / (ai + bi) if ai is not None and bi is not None and ai + bi > 0 else None for ai, bi in zip(a, b)]
        return [
            line("α", a, "#1f9d55", y_left),
            line("β", b, "#d64545", y_left),
            line("mean α/(α+β)", mean, "#2563eb", y_right, "dot"),
        ]
    out = [
        line("θ_M (model)", _series(states, CaliTSState, lambda s: s.theta_m), "#e08a00", y_left),
        line("θ̂ (running)", _series(states, CaliTSState, lambda s: s.before.theta_hat), "#1f9d55", y_left),
        line("μ (blend)", _series(states, CaliTSState, lambda s: s.mu), "#2563eb", y_left),
        line("w_M (weight)", _series(states, CaliTSState, lambda s: s.w_m), "#9ca3af", y_left, "dot"),
    ]
    return [t for t in out if any(v is not None for v in t["y"])]


def parameters_figure(trace: RunTrace, step: int, height: int = 216) -> go.Figure | None:
    """Beta-TS: alpha, beta and the posterior mean over rounds; Cali-TS: theta_M, theta_hat, mu and w_M
    over rounds (the values used in each round, before its update); round ``step`` marked; ``height``:
    pixels under the title and legend."""
    states = _states(trace)
    data = _over_rounds_traces(states, ("x", "y", "y2"))
    if not data:
        return None
    beta = any(t["name"] == "α" for t in data)
    title = "Posterior over rounds" if beta else "Cali-TS estimates over rounds"
    source = next((s.before.theta_m_source for s in states if isinstance(s, CaliTSState)), "")
    layout = base_layout(title)
    layout["xaxis"] = axis("round")
    layout["yaxis"] = axis("α, β" if beta else "θ", **({} if beta else {"range": [0, 1.02]}))
    layout["yaxis2"] = axis("mean", overlaying="y", side="right", range=[0, 1], showgrid=False, tickvals=[0, 0.5, 1])
    layout["margin"]["r"] = 48
    titled(
        layout, title_lines(title, [f"θ_M from an {source}"] if source.startswith("untrained") else []), data, height
    )
    _mark(layout, step, "x", "paper")
    return figure(data, layout)


def draft_lengths_figure(trace: RunTrace, step: int, height: int = 196) -> go.Figure | None:
    """Tokens drafted and accepted per round (the controller's ``drafted`` / ``accepted``), with the stop
    reason of each round on hover; round ``step`` marked; ``height``: pixels under the title and legend."""
    states = _states(trace)
    if not any(isinstance(s, LengthState) for s in states):
        return None
    xs = list(range(1, len(states) + 1))
    reasons = _series(states, LengthState, lambda s: s.stop_reason or "")
    drafted = _series(states, LengthState, lambda s: s.drafted)
    accepted = _series(states, LengthState, lambda s: s.accepted)
    data = [
        {
            "type": "bar",
            "name": name,
            "x": xs,
            "y": ys,
            "marker": {"color": color},
            "customdata": [stop_hover(r) for r in reasons],
            "hovertemplate": "round %{x}: %{y} " + name + "<br>%{customdata}<extra></extra>",
        }
        for name, ys, color in (("drafted", drafted, "#aab2bd"), ("accepted", accepted, STATUS_COLORS["accepted"]))
    ]
    capped = [x for x, r in zip(xs, reasons) if r == "k_cap"]
    if capped:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "hit k_max",
                "x": capped,
                "y": [drafted[x - 1] for x in capped],
                "marker": {"symbol": "line-ew-open", "size": 14, "color": STATUS_COLORS["rejected"]},
            }
        )
    layout = base_layout("Drafted vs accepted per round", barmode="overlay", bargap=0.25)
    layout["xaxis"] = axis("round")
    layout["yaxis"] = axis("tokens")
    titled(layout, title_lines("Drafted vs accepted per round", []), data, height)
    _mark(layout, step, "x", "paper")
    return figure(data, layout)


def thompson_figures(trace: RunTrace, step: int) -> dict[str, go.Figure]:
    """Every EESD view of round ``step`` that the trace has data for: ``posterior``, ``parameters``
    (Beta-TS posterior / Cali-TS estimates over rounds) and ``lengths`` (drafted vs accepted)."""
    step = max(0, min(step, len(trace.steps) - 1))
    figs = {
        "posterior": posterior_figure(trace, step),
        "parameters": parameters_figure(trace, step),
        "lengths": draft_lengths_figure(trace, step),
    }
    return {k: v for k, v in figs.items() if v is not None}


@register_view(ThompsonState)
def thompson_view(trace: RunTrace, step: int) -> go.Figure | None:
    """Left: the round's posterior with its sampled thetas and earlier rounds faded behind it. Right:
    alpha/beta and the posterior mean (Beta-TS) or theta_M / theta_hat / mu / w_M (Cali-TS) over rounds."""
    states = _states(trace)
    shown = _posterior_round(states, step)
    data = None if shown is None else _posterior_traces(states, shown, 12, {"xaxis": "x", "yaxis": "y"})
    if data is None:
        return None
    _, label, mean = _density(states[shown])
    data += _over_rounds_traces(states, ("x2", "y2", "y3"))
    layout = base_layout("Thompson sampling")
    _two_panels(layout, 0.55)
    layout["xaxis"].update(range=[0, 1], title={"text": "θ = P(draft on)", "font": {"size": 11}})
    layout["yaxis"]["title"] = {"text": "density", "font": {"size": 11}}
    layout["xaxis2"]["title"] = {"text": "round", "font": {"size": 11}}
    # the right margin holds the three short ticks of the mean's axis; pushed wider by plotly, it would
    # narrow the plots and the legend's columns
    layout["yaxis3"] = axis(
        None,
        overlaying="y2",
        side="right",
        range=[0, 1],
        showgrid=False,
        anchor="x2",
        tickvals=[0, 0.5, 1],
        automargin=False,
    )
    layout["margin"]["r"] = 30
    _mark(layout, step, "x2", "y2 domain")
    titled(layout, _round_title(states[step], step, label, mean, shown), data, 240)
    return figure(data, layout)


@register_view(FixedState)
def fixed_view(trace: RunTrace, step: int) -> go.Figure | None:
    """The fixed-length baseline has no posterior: drafted vs accepted per round."""
    return draft_lengths_figure(trace, step)


register_view(ThompsonState, "lengths")(draft_lengths_figure)  # beside the posterior, in its own panel


# ---- Sequoia: DP tree and its expected tokens ------------------------------------------------------------
@register_view(SequoiaState)
def sequoia_view(trace: RunTrace, step: int) -> go.Figure | None:
    """Top left: tokens per step, the DP's prediction for the tree used (``predicted_tokens``) against
    what the step produced (``measured_tokens``). Top right: the chosen tree's shape (nodes per level,
    ``tree.level_widths``) or, failing that, the acceptance vector by sibling rank. Bottom row, when the
    state has them: the acceptance vector p_k, and the hardware-aware choice: measured verify time
    t(n) and the best predicted speed-up per tree size that the optimiser maximised (``timing``,
    ``speedup``), the chosen n marked."""
    states = _states(trace)
    st = states[step]
    if not isinstance(st, SequoiaState):
        return None
    xs = list(range(1, len(states) + 1))
    predicted = _series(states, SequoiaState, lambda s: s.predicted_tokens)
    measured = [
        s.measured_tokens if isinstance(s, SequoiaState) else len(trace.steps[i].committed)
        for i, s in enumerate(states)
    ]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": "predicted (DP)",
            "x": xs,
            "y": predicted,
            "line": {"color": "#7c3aed", "width": 2, "dash": "dash", "shape": "hvh"},
        },
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": "measured",
            "x": xs,
            "y": measured,
            "line": {"color": STATUS_COLORS["accepted"], "width": 1.5, "shape": "hvh"},
            "marker": {"size": 4},
        },
    ]
    run = st.run
    widths = list(run.tree.level_widths)
    right_title, right_y = "level (depth)", "nodes"
    if widths:
        data.append(
            {
                "type": "bar",
                "name": "chosen tree: nodes per level",
                "x": list(range(len(widths))),
                "y": widths,
                "xaxis": "x2",
                "yaxis": "y2",
                "marker": {"color": "#c4b5fd"},
                "hovertemplate": "level %{x}: %{y} nodes<extra></extra>",
            }
        )
    else:
        acc = list(run.acceptance)
        if acc:
            data.append(
                {
                    "type": "bar",
                    "name": "acceptance vector p_k",
                    "x": list(range(1, len(acc) + 1)),
                    "y": acc,
                    "xaxis": "x2",
                    "yaxis": "y2",
                    "marker": {"color": "#db2777"},
                }
            )
            right_title, right_y = "sibling rank k", "P(k-th child accepted)"
    bits = [
        f"n={run.n}",
        f"d={run.d}",
        f"E[tokens/step]={float(run.expected_tokens):.2f}",
        f"this step {float(st.predicted_tokens):.2f} → {st.measured_tokens}",
    ]
    layout = base_layout("Sequoia")
    # the right plot's y title and ticks need about 36 px left of it: at phone width (plots about 250 px
    # wide) 0.11 of the width left them over the left plot
    _two_panels(layout, 0.58, right_gap=0.1)
    layout["xaxis"]["title"] = {"text": "step", "font": {"size": 11}}
    layout["yaxis"]["title"] = {"text": "tokens per step", "font": {"size": 11}}
    layout["yaxis"]["rangemode"] = "tozero"
    layout["xaxis2"]["title"] = {"text": right_title, "font": {"size": 11}}
    layout["xaxis2"]["dtick"] = tick_step(len(widths) if widths else len(run.acceptance), 8)
    layout["yaxis2"]["title"] = {"text": right_y, "font": {"size": 11}}
    layout["shapes"] = [
        {
            "type": "line",
            "x0": step + 1,
            "x1": step + 1,
            "y0": 0,
            "y1": 1,
            "yref": "y domain",
            "xref": "x",
            "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
        }
    ]
    tuned = _sequoia_tuning_panels(st, data, layout, with_acceptance=bool(widths))
    if tuned:
        for ax in ("yaxis", "yaxis2"):
            layout[ax]["domain"] = [0.6, 1.0]
    titled(layout, title_lines(f"Sequoia · step {step + 1}", bits), data, 446 if tuned else 206)
    return figure(data, layout)


def _sequoia_tuning_panels(
    st: SequoiaState, data: list[dict[str, Any]], layout: dict[str, Any], with_acceptance: bool
) -> bool:
    """Add the bottom row of ``sequoia_view`` (acceptance vector; t(n) and speed-up vs n)."""
    run = st.run
    acc = list(run.acceptance) if with_acceptance else None
    sizes = list(run.timing.sizes) if run.timing else None
    verify = list(run.timing.verify_ms) if run.timing else None
    best_at = {b.n: b.speedup for b in run.speedup.best_per_size} if run.speedup else {}
    if not acc and not (sizes and verify):
        return False
    if acc:
        data.append(
            {
                "type": "bar",
                "name": "acceptance vector p_k",
                "x": list(range(1, len(acc) + 1)),
                "y": acc,
                "xaxis": "x3",
                "yaxis": "y3",
                "marker": {"color": "#db2777"},
                "hovertemplate": "rank %{x}: P(k-th child accepted) = %{y:.3f}<extra></extra>",
            }
        )
        layout["xaxis3"] = axis("sibling rank k", domain=[0, 0.51], anchor="y3", dtick=tick_step(len(acc), 8))
        layout["yaxis3"] = axis("p_k", domain=[0, 0.4], anchor="x3", rangemode="tozero")
    if sizes and verify:
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "verify time t(n), ms",
                "x": sizes,
                "y": verify,
                "xaxis": "x4",
                "yaxis": "y4",
                "line": {"color": "#0f766e"},
            }
        )
        layout["xaxis4"] = axis("tree size n", domain=[0.68, 1], anchor="y4", type="log")
        layout["yaxis4"] = axis("t(n) ms", domain=[0, 0.4], anchor="x4", rangemode="tozero")
        best_x = [n for n in sizes if n in best_at]
        if best_x:
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines+markers",
                    "name": "best predicted speed-up at n",
                    "x": best_x,
                    "y": [best_at[int(n)] for n in best_x],
                    "xaxis": "x4",
                    "yaxis": "y5",
                    "line": {"color": "#7c3aed", "dash": "dash"},
                }
            )
            layout["yaxis5"] = axis("speed-up", overlaying="y4", side="right", anchor="x4", rangemode="tozero")
        layout.setdefault("shapes", []).append(
            {
                "type": "line",
                "x0": run.n,
                "x1": run.n,
                "y0": 0,
                "y1": 1,
                "xref": "x4",
                "yref": "y4 domain",
                "line": {"color": CURRENT_COLOR, "width": 1.5, "dash": "dot"},
            }
        )
    return True
