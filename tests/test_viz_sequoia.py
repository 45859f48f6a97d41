"""The Sequoia panel draws what the hardware-aware optimiser measured and maximised: the acceptance
vector, t(n) and the speed-up curve with the chosen n, next to predicted vs measured tokens."""

import plotly.graph_objects as go
from tiny import tiny_pair

import specviz
from specviz.viz.controller import controller_figure, tick_step


def test_sequoia_panel_shows_acceptance_timing_and_speedup():
    pair = tiny_pair("llama", vocab=16)
    trace = specviz.decode(
        pair,
        "sequoia",
        [1, 2, 3],
        max_new_tokens=6,
        temperature=1.0,
        size=8,
        depth=4,
        hardware_aware=True,
        calibration_steps=8,
    )
    state = trace.steps[0].controller.to_json()
    fig = go.Figure(controller_figure(trace, 0).to_dict())  # validated by plotly
    names = {t.name for t in fig.data}
    assert {
        "predicted (DP)",
        "measured",
        "acceptance vector p_k",
        "verify time t(n), ms",
        "best predicted speed-up at n",
    } <= names
    timing = next(t for t in fig.data if t.name == "verify time t(n), ms")
    assert list(timing.x) == state["timing"]["sizes"]
    acc = next(t for t in fig.data if t.name == "acceptance vector p_k")
    assert list(acc.y) == state["acceptance"]
    assert any(s.x0 == state["n"] and s.xref == "x4" for s in fig.layout.shapes)


def test_sequoia_panel_without_timing_keeps_two_panels():
    pair = tiny_pair("llama", vocab=16)
    trace = specviz.decode(
        pair, "sequoia", [1, 2, 3], max_new_tokens=4, temperature=1.0, size=6, depth=3, acceptance="0.6,0.2,0.1"
    )
    fig = go.Figure(controller_figure(trace, 0).to_dict())
    names = {t.name for t in fig.data}
    assert "measured" in names and "verify time t(n), ms" not in names


def test_tick_labels_are_few_enough_to_stay_apart():
    """Issue #23 point 4: a whole-number axis shows at most ``most`` labels, in steps of 1, 2, 5, 10...,
    whatever the plot's width (Sequoia's 32 sibling ranks, one label each, ran into one another)."""
    assert [tick_step(n, 8) for n in (0, 1, 8, 9, 16, 17, 32, 40, 41, 400)] == [1, 1, 1, 2, 2, 5, 5, 5, 10, 50]
    for n in range(1, 500):
        step = tick_step(n, 8)
        assert -(-n // step) <= 8 and (step == 1 or -(-n // smaller(step)) > 8)
    pair = tiny_pair("llama", vocab=16)
    trace = specviz.decode(
        pair,
        "sequoia",
        [1, 2, 3],
        max_new_tokens=4,
        temperature=1.0,
        size=32,
        depth=4,
        acceptance=",".join(["0.02"] * 32),
    )
    lay = controller_figure(trace, 0).layout
    acc = trace.steps[0].controller.to_json()["acceptance"]
    ranks = [lay[name] for name in ("xaxis2", "xaxis3") if lay[name] and lay[name].title.text == "sibling rank k"]
    assert ranks and len(acc) >= 17 and all(-(-len(acc) // ax.dtick) <= 8 for ax in ranks), (len(acc), ranks)


def smaller(step: int) -> int:
    """The tick step before ``step`` in 1, 2, 5, 10, 20, 50, ..."""
    digits = len(str(step)) - 1
    lead = step // 10**digits
    return {1: 5 * 10 ** (digits - 1), 2: 10**digits, 5: 2 * 10**digits}[lead]
