"""The draft-length race view (``viz.race``) on real tiny runs."""

from __future__ import annotations

import plotly.graph_objects as go
import pytest
from tiny import tiny_pair

import specviz
from specviz.viz.race import race, race_figure


@pytest.fixture(scope="module")
def pair():
    return tiny_pair(vocab=8, seed=1)


def run(pair, algorithm="sd", temperature=1.0, **params):
    return specviz.decode(
        pair, algorithm, prompt=[1, 2, 3], max_new_tokens=24, temperature=temperature, seed=3, **params
    )


def test_a_chain_race_counts_each_step_from_its_nodes(pair):
    trace = run(pair, gamma=3)
    r = race(trace)
    assert r.drafted == [s.n_drafted for s in trace.steps]  # a chain's depth is its length
    assert r.ideal == [s.n_accepted + 1 for s in trace.steps]
    assert r.wasted[-1] == sum(s.n_drafted - s.n_accepted for s in trace.steps)
    assert all(b >= a for a, b in zip(r.wasted, r.wasted[1:]))
    assert any(s.n_drafted > s.n_accepted for s in trace.steps)  # the noisy draft wastes some


def test_a_draft_equal_to_the_target_wastes_nothing_at_temperature_0():
    same = tiny_pair(vocab=8, seed=1, draft="noisy", noise=0.0)  # the draft is the target
    r = race(run(same, temperature=0.0, gamma=3))
    assert r.wasted[-1] == 0
    assert all(ideal == drafted + 1 for drafted, ideal in zip(r.drafted, r.ideal))


def test_a_tree_drafts_to_its_depth_not_its_size(pair):
    trace = run(pair, "mcsd", k_config="2x2")
    r = race(trace)
    assert max(r.drafted) == 2 and max(s.n_drafted for s in trace.steps) > 2


def test_the_figure_draws_each_drafting_run_once_and_skips_ar(pair):
    runs = [("ar", run(pair, "ar")), ("sd · gamma 2", run(pair, gamma=2)), ("sd · gamma 5", run(pair, gamma=5))]
    fig = race_figure(runs, current_step=1)
    go.Figure(fig.to_dict())  # valid for plotly
    shown = [tr.name for tr in fig.data if tr.showlegend is not False]
    assert shown == ["sd · gamma 2", "sd · gamma 5"]
    assert len(fig.data) == 6  # drafted line, ideal rings and waste per run
    assert race_figure([("ar", runs[0][1])]).layout.annotations[0].text.startswith("The draft-length race appears")
