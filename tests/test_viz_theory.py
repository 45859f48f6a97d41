"""The theory overlays (``specviz.metrics`` theory section, ``specviz.viz.theory``) on real traces.

The statistical check: along one run, ``sum_n Pr(R_n = 1 | history)`` (Thm 1's TVs for ``sd``, Thm 3's
``prod_m TV(p^m, q)`` at batch roots) minus the measured rejection count is a martingale with mean 0,
so over R independent runs the mean of ``measured - expected`` must lie within its standard error
band. With R = 300 runs of 24 tokens on an 8-token pair whose draft is an independent model, the
band is about ±0.3 rejections (on ~8 per run); forgetting the batch improvement (predicting ``batch_sd``
with Thm 1's sum of TVs) is off by about 1 rejection per run and is flagged by the same test.
"""

import math

import plotly.graph_objects as go
import pytest
from tiny import tiny_pair

import specviz
from specviz import metrics
from specviz.core.theory import rejection_band
from specviz.trace import DRAFTED
from specviz.viz import theory as vt
from specviz.viz.controller import controller_figure
from specviz.viz.style import LEGEND_CHARS

PROMPT = [1, 2, 3]
RUNS = 300


@pytest.fixture(scope="module")
def pair():
    return tiny_pair("llama", vocab=8, draft="different")


def mean_gap(pair, algorithm, key, **params):
    """Mean over RUNS of (measured rejections - predicted) and its standard error (from the runs)."""
    gaps = []
    for seed in range(RUNS):
        trace = specviz.decode(pair, algorithm, PROMPT, max_new_tokens=24, seed=seed, temperature=1.0, **params)
        ov = metrics.rejection_overlay(trace)
        gaps.append(ov["measured"][-1] - ov[key][-1])
    mean = sum(gaps) / RUNS
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (RUNS - 1))
    return mean, sd / math.sqrt(RUNS)


@pytest.mark.parametrize(
    "algorithm,params",
    [("sd", {"gamma": 3}), ("batch_sd", {"num_drafts": 3, "gamma": 3})],
    ids=["sd-thm1", "batch-thm3"],
)
@pytest.mark.slow
def test_expected_rejections_match_the_empirical_mean(pair, algorithm, params):
    mean, se = mean_gap(pair, algorithm, "expected", **params)
    assert abs(mean) < 3.3 * se, (mean, se)  # two-sided p ~ 1e-3


@pytest.mark.slow
def test_the_test_sees_a_missing_batch_improvement(pair):
    mean, se = mean_gap(pair, "batch_sd", "tv_sum", num_drafts=3, gamma=3)
    assert mean < -3.3 * se, (mean, se)


def test_overlay_counts_what_the_trace_shows(pair):
    trace = specviz.decode(pair, "batch_sd", PROMPT, max_new_tokens=40, seed=7, num_drafts=3, gamma=3, temperature=1.0)
    ov = metrics.rejection_overlay(trace)
    resampled = sum(1 for s in trace.steps for n in s.forest if n.status == "resampled")
    assert ov["measured"][-1] == resampled
    assert len(ov["tv"]) == sum(1 for s in trace.steps for r in s.positions if r.q is not None)
    assert all(lo <= e <= hi for lo, e, hi in zip(ov["low"], ov["expected"], ov["high"]))
    probs = [d.reject_prob for d in metrics.drafted_positions(trace)]
    assert (ov["expected"][-1], ov["low"][-1], ov["high"][-1]) == pytest.approx(rejection_band(probs))
    assert ov["expected"][-1] < ov["tv_sum"][-1]  # the batch helps
    bi = metrics.batch_improvement_overlay(trace)
    assert bi["theory"][-1] == pytest.approx(ov["tv_sum"][-1] - ov["expected"][-1])
    assert bi["measured"][-1] == pytest.approx(ov["tv_sum"][-1] - resampled)
    sd = specviz.decode(pair, "sd", PROMPT, max_new_tokens=40, seed=7, gamma=3, temperature=1.0)
    sd_ov = metrics.rejection_overlay(sd)
    assert sd_ov["expected"] == pytest.approx(sd_ov["tv_sum"])  # Thm 1: P(reject) = TV at every position
    assert metrics.batch_improvement_overlay(sd) is None
    # a tree without a probe cannot tell its per-position probability: no overlay rather than a wrong one
    assert (
        metrics.rejection_overlay(specviz.decode(pair, "mcsd", PROMPT, max_new_tokens=20, seed=1, temperature=1.0))[
            "tv"
        ]
        == []
    )


def test_tradeoff_point_is_on_thm5_line_and_uno_above(pair):
    for kind in ("opt", "target"):
        trace = specviz.decode(
            pair, "biased_sd", PROMPT, max_new_tokens=40, seed=3, eps=0.05, residual=kind, temperature=1.0
        )
        pt = metrics.tradeoff_point(trace)
        assert pt["rejection"] + pt["bias_opt"] == pytest.approx(pt["tv"], abs=1e-5)
        assert pt["bias_uno"] > pt["bias_opt"]
        assert pt["measured_low"] <= pt["measured_rejection"] <= pt["measured_high"]
        fig = vt.tradeoff_figure(trace)
        line, opt, uno = fig.data[0], fig.data[1], fig.data[2]
        assert (
            list(line.x) == [0, pytest.approx(pt["tv"])] and opt.x[0] == pt["bias_opt"] and uno.x[0] == pt["bias_uno"]
        )
        assert (opt.marker.size > uno.marker.size) == (kind == "opt")  # the run's own rule is emphasised
    assert metrics.tradeoff_point(specviz.decode(pair, "sd", PROMPT, max_new_tokens=10, temperature=1.0)) is None


def test_theory_view_per_algorithm(pair, tmp_path):
    runs = {
        "sd": specviz.decode(pair, "sd", PROMPT, max_new_tokens=30, seed=1, temperature=1.0),
        "batch_sd": specviz.decode(pair, "batch_sd", PROMPT, max_new_tokens=30, seed=1, temperature=1.0),
        "biased_sd": specviz.decode(pair, "biased_sd", PROMPT, max_new_tokens=30, seed=1, temperature=1.0),
        "sequoia": specviz.decode(
            pair, "sequoia", PROMPT, max_new_tokens=30, seed=1, size=8, depth=3, calibration_steps=16, temperature=1.0
        ),
    }
    assert set(vt.theory_figures(runs["sd"])) == {"rejections"}
    assert set(vt.theory_figures(runs["batch_sd"])) == {"rejections", "batch_improvement"}
    assert set(vt.theory_figures(runs["biased_sd"])) == {"rejections", "tradeoff"}
    assert set(vt.theory_figures(runs["sequoia"])) == {"sequoia", "first_drafts"}
    seq = vt.sequoia_figure(runs["sequoia"])
    assert list(seq.data[1].y) == [s.controller.to_json()["predicted_tokens"] for s in runs["sequoia"].steps]
    assert list(seq.data[0].y) == [s.controller.to_json()["measured_tokens"] for s in runs["sequoia"].steps]
    for name, trace in runs.items():
        fig = vt.theory_view(trace, step=1)
        assert len(fig.data) >= 2
        go.Figure(fig.to_dict())  # built without validation for speed: validate here
        fig.write_html(tmp_path / f"{name}.html")
        assert (tmp_path / f"{name}.html").stat().st_size > 10_000
    # the app's controller view for these traces is the theory view, with the step marked
    fig = controller_figure(runs["batch_sd"], 1)
    assert [a.text for a in fig.layout.annotations][:2] == [
        "TV(p, q) per drafted position",
        "Rejections: theory vs measured",
    ]
    assert len(fig.layout.shapes) == 2  # the step is marked on the TV and rejection panels
    assert vt.theory_panel(runs["sd"], 0) is not None
    greedy = specviz.decode(pair, "batch_sd", PROMPT, max_new_tokens=10, temperature=0)
    assert vt.theory_figures(greedy) == {}  # exact match: M copies of the argmax, no probabilities
    assert len(vt.theory_view(greedy).data) == 0


def test_the_app_column_shows_the_theory_panel(pair):
    from specviz.ui import render
    from specviz.ui.layout import Slot
    from specviz.ui.runner import Column

    assert "theory" in Slot.panels()
    batch = specviz.decode(pair, "batch_sd", PROMPT, max_new_tokens=20, seed=1, temperature=1.0)
    v = render.slot_view(Column("batch_sd", "batch_sd", trace=batch, done=True), 0, 2)
    assert v.theory is not None and v.controller is None  # the probe state is drawn once, as theory
    seq = specviz.decode(
        pair, "sequoia", PROMPT, max_new_tokens=20, seed=1, size=8, depth=3, calibration_steps=16, temperature=1.0
    )
    v = render.slot_view(Column("sequoia", "sequoia", trace=seq, done=True), 0, 1)
    assert v.theory is not None and v.controller is not None  # Sequoia keeps its own view too
    ar = specviz.decode(pair, "ar", PROMPT, max_new_tokens=5, seed=1, temperature=1.0)
    assert render.slot_view(Column("ar", "ar", trace=ar, done=True), 0, 0).theory is None


def test_the_panel_shows_only_what_chance_left_open(pair):
    """At T = 0 p and q are one-hot: every TV is 0 or 1 and the expected rejections are the measured
    ones, so a greedy ``sd`` column gets no theory panel; sampled, it does. Sequoia's predicted tokens
    per step say something at any temperature: at T = 0 its panel is that one alone."""
    from specviz.ui import render
    from specviz.ui.runner import Column

    greedy = specviz.decode(pair, "sd", PROMPT, max_new_tokens=20, temperature=0)
    ov = metrics.rejection_overlay(greedy)
    assert ov["tv"] and set(ov["tv"]) <= {0.0, 1.0} and ov["expected"] == ov["measured"]  # nothing to compare
    assert not vt.left_to_chance(greedy) and vt.theory_panel(greedy, 0) is None
    assert render.slot_view(Column("sd", "sd", trace=greedy, done=True), 0, 0).theory is None
    assert len(vt.theory_view(greedy).data) == 0  # the controller view says why, in words
    sampled = specviz.decode(pair, "sd", PROMPT, max_new_tokens=20, seed=1, temperature=1.0)
    assert vt.left_to_chance(sampled)
    titles = [a.text for a in vt.theory_panel(sampled, 0).layout.annotations]
    assert titles == ["TV(p, q) per drafted position", "Rejections: theory vs measured"]
    seq = specviz.decode(
        pair, "sequoia", PROMPT, max_new_tokens=20, temperature=0, size=8, depth=3, calibration_steps=16
    )
    assert vt.theory_panel(seq, 0) is None  # its predicted tokens per step are in its controller view
    assert [a.text for a in vt.theory_view(seq, 0).layout.annotations] == ["Sequoia: tokens per step"]


TREES = [
    ("specinfer", {}),
    ("mcsd", {}),
    ("mcsd", {"replacement": True}),
    ("sequoia", {"size": 8, "depth": 3, "calibration_steps": 16}),
]


@pytest.mark.parametrize("algorithm,params", TREES, ids=["specinfer", "mcsd", "mcsd-iid", "sequoia"])
def test_every_sampled_lossless_run_has_a_theory_panel(pair, algorithm, params):
    """Issue #23: a theory panel for every sampled run of every lossless algorithm. A multi-draft tree
    gets Thm 1 on each verified position's first draft (drawn from q, rejected with chance TV(p, q)
    exactly), the rejected first drafts and the all-rejected positions measured; each figure once."""
    from specviz.algorithms.registry import ALGORITHMS
    from specviz.ui import render
    from specviz.ui.runner import Column

    trace = specviz.decode(pair, algorithm, PROMPT, max_new_tokens=16, seed=3, temperature=1.0, **params)
    ov = metrics.first_draft_overlay(trace)
    ds = [d for d in metrics.drafted_positions(trace) if d.candidates]
    assert ov is not None and len(ov["tv"]) == len(ds) and any(d.candidates > 1 for d in ds)
    assert ov["expected"][-1] == pytest.approx(sum(d.tv for d in ds))
    first = sum(
        1
        for s in trace.steps
        for r in s.positions
        if r.q is not None
        and next(n for n in s.forest if n.parent == r.parent and n.root == r.root and n.status in DRAFTED).status
        == "rejected"
    )
    assert ov["measured"][-1] == first and ov["measured_all"][-1] <= first
    view = render.slot_view(Column(algorithm, algorithm, trace=trace, done=True), 0, 1)
    titles = [a.text for a in view.theory.layout.annotations]
    assert titles == ["TV(p, q) per drafted position", "First drafts: Thm 1 vs measured"]
    go.Figure(view.theory.to_dict())
    assert all(t.name and len(t.name) <= 20 for t in view.theory.data if t.showlegend is not False)  # two a row
    if algorithm == "sequoia":  # drawn by its controller view, not again in the theory panel
        assert "Sequoia" in view.controller.layout.title.text
    for name in ("sd", "pld", "batch_sd"):  # the chains: Thm 1 (batch_sd: Thm 3 too)
        chain = specviz.decode(pair, name, PROMPT, max_new_tokens=12, seed=3, temperature=1.0)
        assert ALGORITHMS[name].lossless and vt.theory_panel(chain, 0) is not None, name


@pytest.mark.slow
@pytest.mark.parametrize("algorithm,params", TREES, ids=["specinfer", "mcsd", "mcsd-iid", "sequoia"])
def test_first_draft_rejections_match_thm1(pair, algorithm, params):
    """The first-draft count minus the sum of TVs is a martingale: mean 0 over independent runs."""
    gaps = []
    for seed in range(RUNS // 2):
        ov = metrics.first_draft_overlay(
            specviz.decode(pair, algorithm, PROMPT, max_new_tokens=16, seed=seed, temperature=1.0, **params)
        )
        gaps.append(ov["measured"][-1] - ov["expected"][-1] if ov else 0.0)
    n = len(gaps)
    mean = sum(gaps) / n
    se = math.sqrt(sum((g - mean) ** 2 for g in gaps) / (n - 1) / n)
    assert abs(mean) < 3.3 * se, (mean, se)


def test_stacked_panels_do_not_overlap(pair):
    """In pixels (independent of the column's width): each panel's title, then its own legend, then
    its plot, then room for the x ticks and title before the next panel's title."""
    trace = specviz.decode(pair, "biased_sd", PROMPT, max_new_tokens=30, seed=1, temperature=1.0)
    fig = vt.theory_panel(trace, 1)
    lay = fig.layout
    inner = lay.height - lay.margin.t - lay.margin.b
    px = lambda y: round((1 - y) * inner, 6)  # noqa: E731 - paper y -> pixels from the top of the plotting area
    names = ["", "2", "3"]
    assert [a.text for a in lay.annotations] == [
        "TV(p, q) per drafted position",
        "Rejections: theory vs measured",
        "Rejection vs bias (Thms 4-5)",
    ]
    for r, (note, sfx) in enumerate(zip(lay.annotations, names)):
        legend, dom = lay[f"legend{sfx}"], lay[f"yaxis{sfx}"].domain
        shown = [t for t in fig.data if t.legend == f"legend{sfx}" and t.showlegend is not False]
        # two entries a row where every name fits half a phone's plot, else one (from the names, not the width)
        columns = vt.LEGEND_COLUMNS if all(len(t.name) <= LEGEND_CHARS for t in shown) else 1
        rows = -(-len(shown) // columns)
        assert legend.entrywidthmode == "fraction" and legend.entrywidth == 1 / columns
        assert px(legend.y) - px(note.y) >= vt.TITLE_PX  # the legend starts under the title
        assert px(dom[1]) - px(legend.y) >= (rows * 19 + 10 if rows else 0)  # and ends above the plot (as drawn)
        assert all(t.xaxis == f"x{sfx}" for t in fig.data if t.legend == f"legend{sfx}")
        if r + 1 < len(lay.annotations):  # the next title sits below this x axis's ticks and title
            assert px(lay.annotations[r + 1].y) - px(dom[0]) >= 40
    assert all(t.name and len(t.name) <= 20 for t in fig.data if t.showlegend is not False)  # one fits a row
