"""EESD controller views (``specviz.viz.controller``) driven by REAL ``eesd`` traces: what each figure
shows must be what the controller recorded, step by step."""
import math

import plotly.graph_objects as go
import pytest
from tiny import tiny_pair

import specviz
from specviz.models.loading import attach_early_exit
from specviz.viz.controller import (controller_figure, draft_lengths_figure, parameters_figure, posterior_figure,
                                    thompson_figures)


def validated(fig: go.Figure) -> go.Figure:
    assert isinstance(fig, go.Figure)
    return go.Figure(fig.to_dict())  # plotly's validation on


@pytest.fixture(scope="module")
def traces():
    pair = attach_early_exit(tiny_pair("llama", vocab=64, draft="noisy", init_range=0.05, hidden=32, layers=3), 1)
    return {c: specviz.decode(pair, "eesd", [5, 9, 2, 7], max_new_tokens=60, temperature=1.0, seed=2, controller=c)
            for c in ("beta_ts", "cali_ts", "fixed")}


def by_name(fig, name):
    return [t for t in fig.data if t.name == name]


@pytest.mark.parametrize("controller", ["beta_ts", "cali_ts"])
def test_posterior_shows_the_round_its_thetas_and_earlier_rounds_faded(traces, controller):
    trace = traces[controller]
    for step in (0, 1, 5, len(trace.steps) - 2):
        st = trace.steps[step].controller
        fig = validated(posterior_figure(trace, step, history=4))
        cur = by_name(fig, f"round {step + 1}")[0]
        xs, ys = list(cur.x), list(cur.y)
        area = sum((xs[i + 1] - xs[i]) * (ys[i] + ys[i + 1]) / 2 for i in range(len(xs) - 1))
        if controller == "beta_ts":
            assert area == pytest.approx(1.0, abs=0.03)  # a density on [0, 1]
            assert f"α={st['alpha']:.1f}" in fig.layout.title.text
        else:  # the Gaussian of the round's first draft step; mass outside [0, 1] is clipped off
            mu, s = st["mu"], st["sigma"]
            inside = 0.5 * (math.erf((1 - mu) / (s * 2 ** 0.5)) - math.erf(-mu / (s * 2 ** 0.5)))
            assert area == pytest.approx(inside, abs=0.03)
        faded = by_name(fig, "earlier rounds")
        assert len(faded) == min(step, 4)
        opacities = [float(t.line.color.split(",")[-1].rstrip(")")) for t in faded]
        assert opacities == sorted(opacities)  # older rounds fainter
        marked = [x for name in ("θ → continue", "θ → stop") for t in by_name(fig, name) for x in t.x]
        assert sorted(marked) == sorted(d["theta"] for d in st["draws"])
        stops = [x for t in by_name(fig, "θ → stop") for x in t.x]
        assert stops == [d["theta"] for d in st["draws"] if not d["continue"]]
        assert f"drafted {st['drafted']}, accepted {st['accepted']}" in fig.layout.title.text


def test_the_posterior_figure_moves_with_each_update(traces):
    trace = traces["beta_ts"]
    for step in range(4):
        st, nxt = trace.steps[step].controller, trace.steps[step + 1].controller
        assert (nxt["alpha"], nxt["beta"]) == (st["after"]["alpha"], st["after"]["beta"])
        a, b = posterior_figure(trace, step), posterior_figure(trace, step + 1)
        assert by_name(a, f"round {step + 1}")[0].y != by_name(b, f"round {step + 2}")[0].y  # every update moves it
        assert list(by_name(b, "earlier rounds")[-1].y) == list(by_name(a, f"round {step + 1}")[0].y)


def test_parameters_over_rounds_are_the_recorded_posterior(traces):
    trace = traces["beta_ts"]
    fig = validated(parameters_figure(trace, 3))
    alphas = [s.controller["alpha"] for s in trace.steps]
    betas = [s.controller["beta"] for s in trace.steps]
    assert list(by_name(fig, "α")[0].y) == alphas and list(by_name(fig, "β")[0].y) == betas
    assert list(by_name(fig, "posterior mean")[0].y) == pytest.approx([a / (a + b) for a, b in zip(alphas, betas)])
    assert fig.layout.shapes[0].x0 == 4  # the selected round


def test_cali_ts_shows_its_three_estimates(traces):
    trace = traces["cali_ts"]
    fig = validated(parameters_figure(trace, 2))
    for name, key in (("θ_M (model)", "theta_m"), ("θ̂ (running)", "theta_hat"), ("μ (blend)", "mu"),
                      ("w_M (model weight)", "w_m")):
        assert list(by_name(fig, name)[0].y) == [s.controller.get(key) for s in trace.steps]
    assert "untrained" in fig.layout.title.text  # the tiny pair has no calibration head: theta_M = 0.5
    w = [s.controller.get("w_m") for s in trace.steps if s.controller.get("w_m") is not None]
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
    trace = specviz.decode(pair, "eesd", [5, 9, 2, 7], max_new_tokens=30, temperature=0, controller="fixed",
                           fixed_length=8, k_max=3)
    fig = draft_lengths_figure(trace, 0)
    capped = [i + 1 for i, s in enumerate(trace.steps) if s.controller["stop_reason"] == "k_cap"]
    assert capped and list(by_name(fig, "k_max cap bit")[0].x) == capped


def test_controller_figure_picks_the_eesd_views(traces):
    for controller, text in (("beta_ts", "Beta(α="), ("cali_ts", "N(μ="), ("fixed", "Drafted vs accepted")):
        trace = traces[controller]
        fig = validated(controller_figure(trace, 3))
        assert text in fig.layout.title.text
        figs = thompson_figures(trace, 3)
        assert set(figs) == ({"lengths"} if controller == "fixed" else {"posterior", "parameters", "lengths"})
