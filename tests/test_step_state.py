"""Typed step state (issue #22 point 2, ``specviz.step_state``): every stored golden trace (written by the
dict-based controllers, schema 5) reads into its kind's typed state, never the fallback, and writes back
the very object it was read from; its views draw; an unknown kind replays with the generic view and a
note; a field of the wrong type is refused with a sentence naming it; the app's panels follow the state's
type, with no kind or algorithm name in ``ui.render``."""

from __future__ import annotations

import ast
import dataclasses
import json
from functools import lru_cache
from pathlib import Path

import plotly.graph_objects as go
import pytest

from specviz import step_state as ss
from specviz.errors import TraceFormatError
from specviz.trace import SCHEMA_VERSION, RunTrace
from specviz.trace_check import check_trace
from specviz.viz import controller as viz_controller
from specviz.viz import registry
from tests.test_golden_traces import CASES, GENERATED, GOLDEN, TEMPERATURES, path_of, strip

# the typed state each golden case's steps carry (None: its controller records nothing); a case generated
# for an algorithm at its defaults (``GENERATED``) is held to reading into a typed state, never the fallback
EXPECTED: dict[str, type[ss.ControllerState] | None] = {
    "ar": None,
    "sd": None,
    "mcsd": None,
    "mcsd_replacement": None,
    "specinfer": None,
    "pld": None,
    "sd_beta_ts": ss.BetaTSState,
    "eesd": ss.BetaTSState,
    "sd_cali_ts": ss.CaliTSState,
    "eesd_cali_ts": ss.CaliTSState,
    "sd_fixed": ss.FixedState,
    "sd_heuristic": ss.HeuristicState,
    "sd_confidence": ss.ConfidenceState,
    "sd_adaptive": ss.AdaptiveState,
    "sequoia": ss.SequoiaState,
    "sequoia_auto": ss.SequoiaState,
    "dyntree": ss.DynTreeState,
    "biased_sd": ss.TheoryState,
    "biased_sd_uno": ss.TheoryState,
    "batch_sd": ss.TheoryState,
    "beam": ss.BeamSearchState,
    "beam_eos": ss.BeamSearchState,
    "dsbd": ss.DsbdState,
    "dsbd_eos": ss.DsbdState,
    "dsbd_fixed": ss.DsbdState,
    "dsbd_single": ss.DsbdState,
    "dsbd_literal": ss.DsbdState,
}
GOLDEN_FILES = [(name, t) for name in sorted(CASES) for t in TEMPERATURES]


@lru_cache(maxsize=None)
def stored(name: str, temperature: float) -> str:
    return path_of(name, temperature).read_text(encoding="utf-8")


def golden_trace(name: str, temperature: float) -> RunTrace:
    """The stored trace as a replay reads it: the files leave out the format's version (written by
    schema 5), the wall-clock fields and the metrics, which a replay recomputes."""
    data = json.loads(stored(name, temperature))
    data["schema_version"] = 5
    return RunTrace.from_dict(data)


def test_every_case_has_an_expected_state():
    assert set(EXPECTED) == set(CASES) - set(GENERATED)
    assert len(list(GOLDEN.glob("*.json"))) == len(GOLDEN_FILES)


@pytest.mark.parametrize("name,temperature", GOLDEN_FILES)
def test_a_stored_trace_reads_into_its_typed_state_and_writes_it_back(name, temperature):
    data = json.loads(stored(name, temperature))
    trace = golden_trace(name, temperature)
    states = [s.controller for s in trace.steps]
    if name in GENERATED:
        assert not any(isinstance(s, ss.UnknownState) for s in states), name
        want = next((type(s) for s in states if s is not None), None)
    else:
        want = EXPECTED[name]
    if want is None:
        assert states == [None] * len(states)
        return
    found = {type(s) for s in states if s is not None}
    probe_at_t0 = want is ss.TheoryState and temperature == 0  # exact match: the probe is never asked
    assert found == (set() if probe_at_t0 else {want}), name  # never ss.UnknownState
    for i, (s, raw) in enumerate(zip(states, (s["controller"] for s in data["steps"]))):
        if s is None:
            assert raw is None
            continue
        out = s.to_json()
        assert strip(out) == raw and list(strip(out)) == list(raw), (name, i)  # same values, same key order
        assert ss.read_state(out, "again") == s
    current = dataclasses.replace(trace, schema_version=SCHEMA_VERSION)
    again = RunTrace.from_json(current.to_json())  # the current format (schema 6) reads it back exactly
    assert again.steps == trace.steps
    check_trace(again)


@pytest.mark.parametrize("name,temperature", GOLDEN_FILES)
def test_its_views_draw(name, temperature):
    trace = golden_trace(name, temperature)
    kind = registry.state_type(trace)
    for k in sorted({0, len(trace.steps) // 2, len(trace.steps) - 1}):
        fig = viz_controller.controller_figure(trace, k)
        assert (fig is None) == (kind is None)
        if fig is not None:
            go.Figure(fig.to_dict())  # plotly's validation
        for panel in ("column", "lengths", "tree", "beams"):
            view = registry.panel_view(trace, panel)
            if view is not None:
                assert view(trace, k) is not None, (name, panel)
        story = registry.panel_view(trace, "narrative")
        if story is not None:
            node = trace.steps[k].forest[0].id if trace.steps[k].forest else None
            assert story(trace, k, None) and story(trace, k, node)


def _json(trace: RunTrace) -> dict:
    """``trace`` as the current version writes it (schema 6: a state of a known kind must be typed)."""
    return json.loads(dataclasses.replace(trace, schema_version=SCHEMA_VERSION).to_json())


def test_an_unknown_kind_replays_with_the_generic_view_and_a_note():
    data = _json(golden_trace("dyntree", 1.0))
    for i, s in enumerate(data["steps"]):
        s["controller"] = {"kind": "from_the_future", "budget": i, "scores": [0.5, 0.25]}
    trace = RunTrace.from_json(json.dumps(data))
    check_trace(trace)
    state = trace.steps[1].controller
    assert isinstance(state, ss.UnknownState) and state.note == "a kind unknown here"
    assert state.to_json() == data["steps"][1]["controller"]
    fig = viz_controller.controller_figure(trace, 1)
    assert "Controller state: from_the_future" in fig.layout.title.text
    assert "a kind unknown here" in fig.layout.title.subtitle.text
    assert json.loads(trace.to_json())["steps"] == data["steps"]


def test_an_older_trace_whose_state_cannot_be_typed_still_replays():
    """Schema 5 and before: a state of a known kind in a layout this version cannot type (an older
    specviz's) is kept raw and drawn by the generic view; in the current schema it is refused."""
    data = _json(golden_trace("sd_beta_ts", 1.0))
    for s in data["steps"]:
        s["controller"]["alpha"] = [1.0]  # not this version's layout
    data["schema_version"] = 5
    trace = RunTrace.from_json(json.dumps(data))
    assert all(isinstance(s.controller, ss.UnknownState) for s in trace.steps)
    state = trace.steps[0].controller
    assert state.note == "an older layout, as stored" and "steps[0].controller.alpha should be a number" in state.detail
    assert viz_controller.controller_figure(trace, 0) is not None
    data["schema_version"] = SCHEMA_VERSION
    with pytest.raises(TraceFormatError, match=r"steps\[0\]\.controller\.alpha should be a number"):
        RunTrace.from_json(json.dumps(data))


BAD = [  # (case, path under steps[0].controller, bad value, the field named)
    ("sd_beta_ts", ("draws", 0, "theta"), "high", "steps[0].controller.draws[0].theta"),
    ("sd_beta_ts", ("draws", 0, "continue"), 1, "steps[0].controller.draws[0].continue"),
    ("sd_cali_ts", ("theta_hat",), None, "steps[0].controller.theta_hat"),
    ("sd_fixed", ("k_cap_hit",), "no", "steps[0].controller.k_cap_hit"),
    ("sd_adaptive", ("after", "samples"), 1.5, "steps[0].controller.after.samples"),
    ("dsbd", ("levels", 0, "p_accept"), [0.5, "x"], "steps[0].controller.levels[0].p_accept[1]"),
    ("dsbd", ("beams", 0, "tokens"), "abc", "steps[0].controller.beams[0].tokens"),
    ("beam", ("best",), 0.5, "steps[0].controller.best"),
    ("sequoia", ("tree", "level_widths"), {"a": 1}, "steps[0].controller.tree.level_widths"),
    ("dyntree", ("cum_q",), [True], "steps[0].controller.cum_q[0]"),
    ("batch_sd", ("positions", 0, "roots"), "3", "steps[0].controller.positions[0].roots"),
]


@pytest.mark.parametrize("name,path,value,field", BAD, ids=[b[3] for b in BAD])
def test_a_malformed_field_is_refused_naming_it(name, path, value, field):
    data = _json(golden_trace(name, 1.0))
    target = data["steps"][0]["controller"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(TraceFormatError) as err:
        RunTrace.from_json(json.dumps(data))
    assert field in str(err.value)


def test_a_missing_or_unknown_field_is_refused_naming_it():
    data = _json(golden_trace("dyntree", 1.0))
    data["steps"][0]["controller"].pop("drafted")
    with pytest.raises(TraceFormatError, match=r"required field 'drafted' of steps\[0\]\.controller is missing"):
        RunTrace.from_json(json.dumps(data))
    data = _json(golden_trace("dyntree", 1.0))
    data["steps"][0]["controller"]["surprise"] = 1
    with pytest.raises(TraceFormatError, match=r"unknown field 'surprise' of steps\[0\]\.controller"):
        RunTrace.from_json(json.dumps(data))


def test_every_kind_is_registered_once_with_a_frozen_type():
    kinds = {
        "fixed",
        "beta_ts",
        "cali_ts",
        "heuristic",
        "confidence",
        "adaptive",
        "sequoia",
        "theory",
        "beam",
        "dsbd",
        "dyntree",
    }
    assert set(ss.STATE_TYPES) == kinds
    for kind, cls in ss.STATE_TYPES.items():
        assert cls.kind == kind and dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


def test_a_view_is_found_by_the_state_type_and_a_subclass_inherits_it():
    class Custom(ss.UnknownState):
        pass

    trace = golden_trace("dyntree", 1.0)
    for s in trace.steps:
        s.controller = Custom({"kind": "custom", "x": s.index})

    @registry.register_view(Custom)
    def view(t, step):
        return go.Figure(layout={"title": {"text": f"custom view at {step}"}})

    try:
        assert viz_controller.controller_figure(trace, 2).layout.title.text == "custom view at 2"
    finally:
        registry.VIEWS.pop((Custom, "controller"))
    assert "Controller state: custom" in viz_controller.controller_figure(trace, 2).layout.title.text


def test_a_view_is_registered_for_a_type_not_a_kind_name():
    with pytest.raises(TypeError, match="state type"):
        registry.register_view("beta_ts")
    with pytest.raises(ValueError, match="unknown panel"):
        registry.register_view(ss.BetaTSState, "sidebar")


def test_the_app_chooses_panels_by_state_type_not_by_name():
    """``ui.render`` names no kind and no algorithm: its panels come from the view registry."""
    import specviz.ui.render as render

    tree = ast.parse(Path(render.__file__).read_text(encoding="utf-8"))
    slot_view = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "slot_view")
    text = {n.value for n in ast.walk(slot_view) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    names = set(ss.STATE_TYPES) | set(CASES) | {"eesd", "theory", "dsbd", "beam"}
    assert not text & names
