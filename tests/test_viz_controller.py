"""EESD controller views (``specviz.viz.controller``) driven by REAL ``eesd`` traces: what each figure
shows must be what the controller recorded, step by step."""

import copy
import dataclasses
import html
import math

import plotly.graph_objects as go
import pytest
from tiny import tiny_pair

import specviz
from specviz.models.loading import attach_early_exit
from specviz.viz.controller import (
    STOP_WORDS,
    controller_figure,
    draft_lengths_figure,
    parameters_figure,
    posterior_figure,
    thompson_figures,
)
from specviz.viz.style import LEGEND_PAD_PX, LEGEND_ROW_PX, SUBTITLE_LINE_PX, TITLE_PX


def validated(fig: go.Figure) -> go.Figure:
    assert isinstance(fig, go.Figure)
    return go.Figure(fig.to_dict())  # plotly's validation on


@pytest.fixture(scope="module")
def traces():
    pair = attach_early_exit(tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32, layers=3), 1)
    return {
        c: specviz.decode(pair, "eesd", [5, 9, 2, 7], max_new_tokens=60, temperature=1.0, seed=2, controller=c)
        for c in ("beta_ts", "cali_ts", "fixed")
    }


# The narrowest a figure is drawn: a column at phone width, 316 px in chromium (456 px at two columns on
# a 1400-px page). At the title's 13 px a character takes about 7.2 px, and the title starts 3 px in.
NARROWEST_PX, CHAR_PX, TITLE_X_PX = 316, 7.2, 3


def cut_title_lines(fig) -> list[str]:
    """The lines of ``fig``'s title and subtitle that would be cut off in the narrowest column."""
    t = fig.layout.title
    lines = [t.text, *(t.subtitle.text or "").split("<br>")]
    return [line for line in lines if TITLE_X_PX + CHAR_PX * len(html.unescape(line)) > NARROWEST_PX]


# A legend entry at phone width: its symbol and the gap before its text take 40 px; a character of its
# name about 0.58 of the legend's font size (DejaVu Sans, chromium's fallback for the app's fonts).
LEGEND_SYMBOL_PX, LEGEND_CHAR_EM = 40, 0.58


def legend_problems(fig) -> list[str]:
    """Why ``fig``'s legend could cover its title or be cut off at some column width, down to the
    narrowest: its rows depending on the width (entries not a fixed fraction of the plot's width), a
    name wider than its entry in the narrowest column, the title not placed from the figure's top, or
    the title lines and the legend's rows taller than the top margin that holds them."""
    lay = fig.layout
    names = [t.name or "" for t in fig.data if t.showlegend is not False and (t.showlegend or t.type != "heatmap")]
    if not names or lay.showlegend is False:
        return []
    out = []
    legend = lay.legend
    if legend.entrywidthmode != "fraction" or not legend.entrywidth:
        return ["legend entries a row depend on the width"]
    columns = round(1 / legend.entrywidth)
    entry_px = (NARROWEST_PX - lay.margin.l - lay.margin.r) * legend.entrywidth
    char_px = LEGEND_CHAR_EM * (legend.font.size or 12)
    out += [
        f"legend name too wide for its entry: {n}"
        for n in names
        if LEGEND_SYMBOL_PX + char_px * len(html.unescape(n)) > entry_px
    ]
    t = lay.title
    if (t.yref, t.y, t.yanchor) != ("container", 1, "top") or legend.y != 1 or legend.yanchor != "bottom":
        out.append("title or legend not placed from the top")
    sub = len((t.subtitle.text or "").split("<br>")) if t.subtitle.text else 0
    rows = -(-len(names) // columns)
    top = (t.pad.t or 0) + TITLE_PX + SUBTITLE_LINE_PX * sub + rows * LEGEND_ROW_PX + LEGEND_PAD_PX
    if top > lay.margin.t:
        out.append(f"title and legend need {top} px, the top margin is {lay.margin.t}")
    return out


def by_name(fig, name):
    return [t for t in fig.data if t.name == name]


def title(fig) -> str:
    """The title and its subtitle, one line each."""
    return "<br>".join(filter(None, [fig.layout.title.text, fig.layout.title.subtitle.text]))


@pytest.mark.parametrize("controller", ["beta_ts", "cali_ts"])
def test_posterior_shows_the_round_its_thetas_and_earlier_rounds_faded(traces, controller):
    trace = traces[controller]
    for step in (0, 1, 5, len(trace.steps) - 2):
        st = trace.steps[step].controller.to_json()
        fig = validated(posterior_figure(trace, step, history=4))
        cur = by_name(fig, f"round {step + 1}")[0]
        assert cur.x is None  # on the shared grid, sent as x0 / dx (issue 34)
        ys = list(cur.y)
        xs = [cur.x0 + i * cur.dx for i in range(len(ys))]
        area = sum((xs[i + 1] - xs[i]) * (ys[i] + ys[i + 1]) / 2 for i in range(len(xs) - 1))
        if controller == "beta_ts":
            assert area == pytest.approx(1.0, abs=0.03)  # a density on [0, 1]
            assert f"α={st['alpha']:.1f}" in title(fig)
        else:  # the Gaussian of the round's first draft step; mass outside [0, 1] is clipped off
            mu, s = st["mu"], st["sigma"]
            inside = 0.5 * (math.erf((1 - mu) / (s * 2**0.5)) - math.erf(-mu / (s * 2**0.5)))
            assert area == pytest.approx(inside, abs=0.03)
        faded = by_name(fig, "past rounds")
        assert len(faded) == min(step, 4)
        opacities = [float(t.line.color.split(",")[-1].rstrip(")")) for t in faded]
        assert opacities == sorted(opacities)  # older rounds fainter
        marked = [x for name in ("θ → continue", "θ → stop") for t in by_name(fig, name) for x in t.x]
        assert sorted(marked) == sorted(d["theta"] for d in st["draws"])
        stops = [x for t in by_name(fig, "θ → stop") for x in t.x]
        assert stops == [d["theta"] for d in st["draws"] if not d["continue"]]
        assert f"drafted {st['drafted']}, accepted {st['accepted']}" in title(fig)


def test_the_posterior_figure_moves_with_each_update(traces):
    trace = traces["beta_ts"]
    for step in range(4):
        st, nxt = trace.steps[step].controller.to_json(), trace.steps[step + 1].controller.to_json()
        assert (nxt["alpha"], nxt["beta"]) == (st["after"]["alpha"], st["after"]["beta"])
        a, b = posterior_figure(trace, step), posterior_figure(trace, step + 1)
        assert by_name(a, f"round {step + 1}")[0].y != by_name(b, f"round {step + 2}")[0].y  # every update moves it
        assert list(by_name(b, "past rounds")[-1].y) == list(by_name(a, f"round {step + 1}")[0].y)


def test_parameters_over_rounds_are_the_recorded_posterior(traces):
    trace = traces["beta_ts"]
    fig = validated(parameters_figure(trace, 3))
    alphas = [s.controller.to_json()["alpha"] for s in trace.steps]
    betas = [s.controller.to_json()["beta"] for s in trace.steps]
    assert list(by_name(fig, "α")[0].y) == alphas and list(by_name(fig, "β")[0].y) == betas
    assert list(by_name(fig, "mean α/(α+β)")[0].y) == pytest.approx([a / (a + b) for a, b in zip(alphas, betas)])
    assert fig.layout.shapes[0].x0 == 4  # the selected round


def test_cali_ts_shows_its_three_estimates(traces):
    trace = traces["cali_ts"]
    fig = validated(parameters_figure(trace, 2))
    for name, key in (
        ("θ_M (model)", "theta_m"),
        ("θ̂ (running)", "theta_hat"),
        ("μ (blend)", "mu"),
        ("w_M (weight)", "w_m"),
    ):
        assert list(by_name(fig, name)[0].y) == [s.controller.to_json().get(key) for s in trace.steps]
    assert "untrained" in title(fig)  # the tiny pair has no calibration head: theta_M = 0.5
    w = [s.controller.to_json().get("w_m") for s in trace.steps if s.controller.to_json().get("w_m") is not None]
    assert w[0] == 1.0 and w == sorted(w, reverse=True)  # the model's weight falls as verifications accrue


@pytest.mark.parametrize("controller", ["beta_ts", "cali_ts", "fixed"])
def test_drafted_vs_accepted_per_round(traces, controller):
    trace = traces[controller]
    fig = validated(draft_lengths_figure(trace, 0))
    drafted, accepted = by_name(fig, "drafted")[0].y, by_name(fig, "accepted")[0].y
    assert list(drafted) == [len(s.forest) - 1 for s in trace.steps]
    assert list(accepted) == [sum(c.kind == "draft" for c in s.committed) for s in trace.steps]


def test_the_cap_is_marked_when_it_bites():
    pair = attach_early_exit(tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32, layers=3), 1)
    trace = specviz.decode(
        pair, "eesd", [5, 9, 2, 7], max_new_tokens=30, temperature=0, controller="fixed", fixed_length=8, k_max=3
    )
    fig = draft_lengths_figure(trace, 0)
    capped = [i + 1 for i, s in enumerate(trace.steps) if s.controller.to_json()["stop_reason"] == "k_cap"]
    assert capped and list(by_name(fig, "hit k_max")[0].x) == capped


def test_controller_figure_picks_the_eesd_views(traces):
    for controller, text in (("beta_ts", "Beta(α="), ("cali_ts", "N(μ="), ("fixed", "Drafted vs accepted")):
        trace = traces[controller]
        fig = validated(controller_figure(trace, 3))
        assert text in title(fig)
        figs = thompson_figures(trace, 3)
        assert set(figs) == ({"lengths"} if controller == "fixed" else {"posterior", "parameters", "lengths"})


@pytest.mark.parametrize("controller", ["beta_ts", "cali_ts", "fixed"])
def test_every_title_line_fits_the_narrowest_column(traces, controller):
    """Round, posterior, mean, drafted/accepted and stop reason are all shown, on lines that a column
    at phone width (and so at two columns) shows whole."""
    trace = traces[controller]
    for step in range(len(trace.steps)):
        for fig in (controller_figure(trace, step), *thompson_figures(trace, step).values()):
            assert cut_title_lines(fig) == [], step
        for fig in (controller_figure(trace, step), draft_lengths_figure(trace, step)):  # the app's two
            assert legend_problems(fig) == [], step
    st = trace.steps[-1].controller.to_json()
    shown = title(controller_figure(trace, len(trace.steps) - 1))
    if controller != "fixed":
        assert (
            f"round {len(trace.steps)}" in shown
            and "mean " in shown
            and f"stopped: {STOP_WORDS[st['stop_reason']]}" in shown
        )


@pytest.mark.parametrize("controller", ["beta_ts", "cali_ts"])
def test_why_a_round_stopped_is_said_in_words(traces, controller):
    """The subtitle says why the round stopped in words, never the controller's code ("chi0"); the
    hover over the stop marker and the drafted bars keeps the code next to the words."""
    trace = traces[controller]
    seen = set()
    for step, s in enumerate(trace.steps):
        code = s.controller.to_json()["stop_reason"]
        fig = controller_figure(trace, step)
        if not fig.layout.title.text.startswith("Thompson sampling"):
            continue
        seen.add(code)
        assert f"stopped: {STOP_WORDS[code]}" in title(fig) and code not in title(fig), step
        stops = by_name(fig, "θ → stop")  # the round's own draws (a round that drafted none shows an earlier one's)
        if stops and "(none drafted)" not in title(fig):
            assert stops[0].customdata[-1][2] == f"stopped: {STOP_WORDS[code]} ({code})"
    assert "chi0" in seen
    bars = by_name(draft_lengths_figure(trace, 0), "drafted")[0]
    assert [c.split(" (")[-1].rstrip(")") for c in bars.customdata] == [s.controller.stop_reason for s in trace.steps]


def test_a_round_that_drafted_nothing_shows_the_last_posterior(traces):
    """The last step of a run may have no room to draft: Cali-TS then records no Gaussian for the
    round. Its figure stays the Thompson view, showing the latest posterior and saying whose it is."""
    trace = copy.deepcopy(traces["cali_ts"])
    last = trace.steps[-1]
    last.controller = dataclasses.replace(last.controller, mu=None, sigma=None, drafted=0, accepted=0, draws=())
    n = len(trace.steps)
    for fig in (controller_figure(trace, n - 1), thompson_figures(trace, n - 1)["posterior"]):
        assert f"Thompson sampling · round {n}" in title(fig)
        assert f"posterior of round {n - 1} (none drafted)" in title(fig)
        assert cut_title_lines(fig) == []
