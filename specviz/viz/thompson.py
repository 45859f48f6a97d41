"""The EESD controllers' views (arXiv 2406.03853, Algorithms 2-3): the round's posterior over theta with
every theta sampled in it, the posterior (Beta-TS) or the estimates (Cali-TS) over rounds, and tokens
drafted vs accepted per round; registered for ``ThompsonState`` (and ``FixedState``, the fixed-length
baseline: its lengths only)."""

from __future__ import annotations

import math
from typing import Any, Callable

import plotly.graph_objects as go

from specviz.step_state import BetaTSState, CaliTSState, ControllerState, FixedState, LengthState, ThompsonState
from specviz.trace import RunTrace
from specviz.viz.registry import register_view
from specviz.viz.state_plots import mark, series, states_of, two_panels
from specviz.viz.style import STATUS_COLORS, axis, base_layout, figure, title_lines, titled


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


GRID_DX = 1 / 200
GRID = [i / 200 for i in range(1, 200)]
GRID_X0 = GRID[0]  # a curve on GRID is sent as Plotly's x0 / dx, not its 199 x values again (issue 34)


def curve(density: Callable[[float], float]) -> list[float]:
    """A density on ``GRID`` to 4 significant digits: a curve drawn some 200 px tall shows no more, and a
    live update sends 13 of them every step (full floats made the controller panel 63 kB a step, issue 34)."""
    return [float(f"{density(x):.4g}") for x in GRID]


def _past_round_traces(
    states: list[ControllerState | None], step: int, history: int, axes: dict[str, str]
) -> list[dict[str, Any]]:
    """The densities of the ``history`` rounds before ``step``, grey, the older the fainter; one legend
    entry (the last) for them all."""
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
                "x0": GRID_X0,
                "dx": GRID_DX,
                "y": curve(d[0]),
                **axes,
                "name": "past rounds",
                "legendgroup": "earlier",
                "showlegend": n == len(earlier) - 1,
                "line": {"color": f"rgba(107,114,128,{alpha:.2f})", "width": 1.2},
                "hovertemplate": f"round {i + 1}: {d[1]}<extra></extra>",
            }
        )
    return data


def _round_trace(dens: Callable[[float], float], label: str, step: int, axes: dict[str, str]) -> dict[str, Any]:
    """Round ``step``'s density, filled, its law (``label``) on hover."""
    return {
        "type": "scatter",
        "mode": "lines",
        "x0": GRID_X0,
        "dx": GRID_DX,
        "y": curve(dens),
        **axes,
        "name": f"round {step + 1}",
        "line": {"color": "#2563eb", "width": 2.5},
        "fill": "tozeroy",
        "fillcolor": "rgba(37,99,235,0.10)",
        "hovertemplate": "θ=%{x:.2f} density %{y:.2f}<extra>" + label + "</extra>",
    }


def _draw_traces(draws: list[Any], dens: Callable[[float], float], axes: dict[str, str]) -> list[dict[str, Any]]:
    """Every theta sampled in the round on its density: continue ▲ and stop ✕, the draft token, its
    uniform u and why it stopped on hover."""
    data: list[dict[str, Any]] = []
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
    data = _past_round_traces(states, step, history, axes)
    data.append(_round_trace(dens, label, step, axes))
    return data + _draw_traces(st.draws, dens, axes)


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


def posterior_figure(trace: RunTrace, step: int, history: int = 12, height: int = 226) -> go.Figure | None:
    """The posterior over theta of round ``step`` with every theta sampled in it marked and the
    ``history`` earlier rounds' densities faded behind it (EESD, arXiv 2406.03853, Algorithms 2-3);
    ``height``: pixels under the title and legend."""
    states = states_of(trace)
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
        a = series(states, BetaTSState, lambda s: s.before.alpha)
        b = series(states, BetaTSState, lambda s: s.before.beta)
        mean = [ai / (ai + bi) if ai is not None and bi is not None and ai + bi > 0 else None for ai, bi in zip(a, b)]
        return [
            line("α", a, "#1f9d55", y_left),
            line("β", b, "#d64545", y_left),
            line("mean α/(α+β)", mean, "#2563eb", y_right, "dot"),
        ]
    out = [
        line("θ_M (model)", series(states, CaliTSState, lambda s: s.theta_m), "#e08a00", y_left),
        line("θ̂ (running)", series(states, CaliTSState, lambda s: s.before.theta_hat), "#1f9d55", y_left),
        line("μ (blend)", series(states, CaliTSState, lambda s: s.mu), "#2563eb", y_left),
        line("w_M (weight)", series(states, CaliTSState, lambda s: s.w_m), "#9ca3af", y_left, "dot"),
    ]
    return [t for t in out if any(v is not None for v in t["y"])]


def parameters_figure(trace: RunTrace, step: int, height: int = 216) -> go.Figure | None:
    """Beta-TS: alpha, beta and the posterior mean over rounds; Cali-TS: theta_M, theta_hat, mu and w_M
    over rounds (the values used in each round, before its update); round ``step`` marked; ``height``:
    pixels under the title and legend."""
    states = states_of(trace)
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
    mark(layout, step, "x", "paper")
    return figure(data, layout)


def draft_lengths_figure(trace: RunTrace, step: int, height: int = 196) -> go.Figure | None:
    """Tokens drafted and accepted per round (the controller's ``drafted`` / ``accepted``), with the stop
    reason of each round on hover; round ``step`` marked; ``height``: pixels under the title and legend."""
    states = states_of(trace)
    if not any(isinstance(s, LengthState) for s in states):
        return None
    xs = list(range(1, len(states) + 1))
    reasons = series(states, LengthState, lambda s: s.stop_reason or "")
    drafted = series(states, LengthState, lambda s: s.drafted)
    accepted = series(states, LengthState, lambda s: s.accepted)
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
    mark(layout, step, "x", "paper")
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
    states = states_of(trace)
    shown = _posterior_round(states, step)
    data = None if shown is None else _posterior_traces(states, shown, 12, {"xaxis": "x", "yaxis": "y"})
    if data is None:
        return None
    _, label, mean = _density(states[shown])
    data += _over_rounds_traces(states, ("x2", "y2", "y3"))
    layout = base_layout("Thompson sampling")
    two_panels(layout, 0.55)
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
    mark(layout, step, "x2", "y2 domain")
    titled(layout, _round_title(states[step], step, label, mean, shown), data, 240)
    return figure(data, layout)


@register_view(FixedState)
def fixed_view(trace: RunTrace, step: int) -> go.Figure | None:
    """The fixed-length baseline has no posterior: drafted vs accepted per round."""
    return draft_lengths_figure(trace, step)


register_view(ThompsonState, "lengths")(draft_lengths_figure)  # beside the posterior, in its own panel
