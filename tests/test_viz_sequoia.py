"""The Sequoia panel draws what the hardware-aware optimiser measured and maximised: the acceptance
vector, t(n) and the speed-up curve with the chosen n, next to predicted vs measured tokens."""
import plotly.graph_objects as go
from tiny import tiny_pair

import specviz
from specviz.viz.controller import controller_figure


def test_sequoia_panel_shows_acceptance_timing_and_speedup():
    pair = tiny_pair("llama", vocab=16)
    trace = specviz.decode(pair, "sequoia", [1, 2, 3], max_new_tokens=6, temperature=1.0, size=8, depth=4,
                           hardware_aware=True, calibration_steps=8)
    state = trace.steps[0].controller
    fig = go.Figure(controller_figure(trace, 0).to_dict())  # validated by plotly
    names = {t.name for t in fig.data}
    assert {"predicted (DP)", "measured", "acceptance vector p_k", "verify time t(n), ms",
            "best predicted speed-up at n"} <= names
    timing = next(t for t in fig.data if t.name == "verify time t(n), ms")
    assert list(timing.x) == state["timing"]["sizes"]
    acc = next(t for t in fig.data if t.name == "acceptance vector p_k")
    assert list(acc.y) == state["acceptance"]
    assert any(s.x0 == state["n"] and s.xref == "x4" for s in fig.layout.shapes)


def test_sequoia_panel_without_timing_keeps_two_panels():
    pair = tiny_pair("llama", vocab=16)
    trace = specviz.decode(pair, "sequoia", [1, 2, 3], max_new_tokens=4, temperature=1.0, size=6, depth=3,
                           acceptance="0.6,0.2,0.1")
    fig = go.Figure(controller_figure(trace, 0).to_dict())
    names = {t.name for t in fig.data}
    assert "measured" in names and "verify time t(n), ms" not in names
