"""Replay checks values, not only types (``specviz.trace_check``; issue #21 point 5, issue #23).

Every exported trace of every registered algorithm round-trips through JSON and passes; each known
bad value (and a hypothesis mutation fuzz) is refused with a ``TraceFormatError`` naming the field,
never another exception; the replay handlers answer with a message, leave the session as it was,
recompute the metrics and mark a replayed column as read from a file."""

from __future__ import annotations

import copy
import functools
import html
import json
import math

import orjson
import plotly.graph_objects as go
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_engine import V1_TRACE
from test_hardening_trace import _paths
from tiny import tiny_pair

import specviz
from specviz import metrics, trace_check
from specviz.errors import TraceFormatError
from specviz.metrics import read_metrics as replay_metrics  # what a replay shows (RunTrace.from_json's reading)
from specviz.models.loading import attach_early_exit
from specviz.step_state import BeamStepState
from specviz.trace import RunTrace
from specviz.trace_check import check_trace
from specviz.ui import AppConfig, Explorer, Session, render
from specviz.ui.pairs import PairChoice, PairRegistry
from specviz.ui.runner import Column, columns_from_traces
from specviz.ui.trace_files import load_trace_file

VOCAB = 16
PROMPT = [1, 2, 3, 1, 2]
EXTRA = {"sequoia": {"acceptance": "0.5,0.2,0.1"}}  # a given acceptance vector: no calibration run
GENUINE = [(name, t) for name in specviz.ALGORITHMS for t in (0.0, 1.0)]


@functools.lru_cache(maxsize=None)
def pair():
    return attach_early_exit(tiny_pair("llama", vocab=VOCAB, draft="noisy", noise=0.5), 1)  # eesd drafts with it


@functools.lru_cache(maxsize=None)
def exported(name: str, temperature: float) -> str:
    """The JSON an export of this run writes (decoded once per module)."""
    return specviz.decode(
        pair(), name, PROMPT, max_new_tokens=6, temperature=temperature, seed=1, **EXTRA.get(name, {})
    ).to_json()


def data(name: str = "sd", temperature: float = 1.0) -> dict:
    return json.loads(exported(name, temperature))


def dump(d: dict) -> str:
    return json.dumps(d, allow_nan=True)


def refused(text: str) -> str:
    """The message replaying ``text`` gives (parse, then content check); fails if it is accepted."""
    with pytest.raises(TraceFormatError) as info:
        check_trace(RunTrace.from_json(text))
    return str(info.value)


@functools.lru_cache(maxsize=None)
def replayer() -> Explorer:
    return Explorer(
        AppConfig(), registry=PairRegistry(), presets=[PairChoice("none", "/nonexistent", None)], preload=False
    )


def render_replay(trace: RunTrace, step: int) -> None:
    """Everything the page draws for a replayed column at ``step``, a node's distribution included,
    serialised as Gradio sends it (a figure by plotly's ``to_json``, the rest by orjson)."""
    session = Session(columns=columns_from_traces([trace]), source="replay")
    col = session.columns[0]
    if trace.steps and trace.steps[step].forest:
        col.selected = trace.steps[step].forest[-1].id
    shown = [
        *vars(render.slot_view(col, 0, step)).values(),
        *render.comparison(session, step).values(),
        render.status_html(session),
    ]
    for value in shown:
        value.to_json() if isinstance(value, go.Figure) else orjson.dumps(value)


# ---- genuine traces ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name,temperature", GENUINE)
def test_every_algorithm_s_export_replays(name, temperature, tmp_path):
    text = exported(name, temperature)
    trace = RunTrace.from_json(text)
    check_trace(trace)
    path = tmp_path / "run.json"
    path.write_text(text)
    again = load_trace_file(str(path), 10**7)
    assert again.steps == trace.steps and again.output_ids == trace.output_ids
    counts = ("new_tokens", "steps", "target_calls", "draft_calls", "tau", "drafted", "accepted", "acceptance_rate")
    assert {k: again.metrics[k] for k in counts} == {k: trace.metrics[k] for k in counts}
    render_replay(again, len(again.steps) - 1)


def test_older_schema_versions_still_replay():
    check_trace(RunTrace.from_dict(V1_TRACE))
    v2 = data("sd")
    for key in ("chat", "user_text"):
        v2.pop(key)
    v2["schema_version"] = 2
    check_trace(RunTrace.from_dict(v2))


def test_a_residual_over_one_from_float_noise_is_genuine():
    """eesd records residual = max(0, p - q) / TV with TV = 0.5 sum |p - q|: at float-noise TV (a draft
    equal to the target up to rounding) an entry can exceed 1 in a real export (seen: 1.54)."""
    d = data("sd")
    pos = next(r for s in d["steps"] for r in s["positions"] if r["residual"])
    pos["residual"][0] = 1.54
    check_trace(RunTrace.from_json(dump(d)))


# ---- known bad values: refused with the field named ------------------------------------------------------


def _set(path: tuple, value):
    def mutate(d):
        node = d
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _steps(d, at: int) -> list:
    return d["steps"][at]


def _first_step_with(d, what: str) -> int:
    return next(i for i, s in enumerate(d["steps"]) if s[what])


MUTATIONS = [  # (id, trace, mutate, the field the message names)
    ("parent-999", ("sd", 1.0), _set(("steps", 0, "forest", 1, "parent"), 999), "steps[0].forest[1].parent"),
    ("parent-negative", ("sd", 1.0), _set(("steps", 0, "forest", 1, "parent"), -1), "steps[0].forest[1].parent"),
    ("parent-itself", ("sd", 1.0), _set(("steps", 0, "forest", 1, "parent"), 1), "steps[0].forest[1].depth"),
    (
        "residual-mass-minus-inf",
        ("sd", 1.0),
        _set(("steps", 0, "positions", 0, "residual_mass"), -math.inf),
        "steps[0].positions[0].residual_mass",
    ),
    ("timing-text", ("sd", 1.0), _set(("steps", 0, "timings", "total_ms"), "soon"), "steps[0].timings.total_ms"),
    ("timing-negative", ("sd", 1.0), _set(("steps", 0, "timings", "verify_ms"), -1.0), "steps[0].timings.verify_ms"),
    ("timing-inf", ("sd", 1.0), _set(("steps", 0, "timings", "draft_ms"), math.inf), "steps[0].timings.draft_ms"),
    ("temperature-text", ("sd", 1.0), _set(("sampling", "temperature"), "hot"), "sampling.temperature"),
    ("temperature-nan", ("sd", 1.0), _set(("sampling", "temperature"), math.nan), "sampling.temperature"),
    ("top-p-zero", ("sd", 1.0), _set(("sampling", "top_p"), 0), "sampling.top_p"),
    ("top-k-fraction", ("sd", 1.0), _set(("sampling", "top_k"), 2.5), "sampling.top_k"),
    ("node-p-nan", ("sd", 1.0), _set(("steps", 0, "forest", 0, "p"), math.nan), "steps[0].forest[0].p"),
    ("node-q-over-one", ("sd", 1.0), _set(("steps", 0, "forest", 0, "q"), 1.5), "steps[0].forest[0].q"),
    (
        "accept-prob-negative",
        ("sd", 1.0),
        _set(("steps", 0, "forest", 0, "accept_prob"), -0.1),
        "steps[0].forest[0].accept_prob",
    ),
    ("draw-inf", ("sd", 1.0), _set(("steps", 0, "forest", 0, "draw"), math.inf), "steps[0].forest[0].draw"),
    ("p-residual-two", ("sd", 1.0), _set(("steps", 0, "forest", 0, "p_residual"), 2), "steps[0].forest[0].p_residual"),
    ("position-p-nan", ("sd", 1.0), _set(("steps", 0, "positions", 0, "p", 0), math.nan), "steps[0].positions[0].p[0]"),
    (
        "position-q-negative",
        ("sd", 1.0),
        _set(("steps", 0, "positions", 0, "q", 0), -0.5),
        "steps[0].positions[0].q[0]",
    ),
    (
        "residual-nan",
        ("sd", 1.0),
        _set(("steps", 0, "positions", 0, "residual", 0), math.nan),
        "steps[0].positions[0].residual[0]",
    ),
    ("tv-two", ("sd", 1.0), _set(("steps", 0, "tv", 0), 2.0), "steps[0].tv[0]"),
    ("token-negative", ("sd", 1.0), _set(("steps", 0, "forest", 0, "token_id"), -1), "steps[0].forest[0].token_id"),
    (
        "token-past-vocab",
        ("sd", 1.0),
        _set(("steps", 0, "forest", 0, "token_id"), VOCAB),
        "steps[0].forest[0].token_id",
    ),
    (
        "committed-past-vocab",
        ("sd", 1.0),
        _set(("steps", 0, "committed", 0, "token_id"), 10**6),
        "steps[0].committed[0].token_id",
    ),
    (
        "position-id-past-vocab",
        ("sd", 1.0),
        _set(("steps", 0, "positions", 0, "ids", 0), VOCAB),
        "steps[0].positions[0].ids[0]",
    ),
    ("prompt-id-negative", ("sd", 1.0), _set(("prompt_ids", 0), -3), "prompt_ids[0]"),
    (
        "output-id-other",
        ("sd", 1.0),
        lambda d: d["output_ids"].__setitem__(0, (d["output_ids"][0] + 1) % VOCAB),
        "output_ids[0]",
    ),
    ("vocab-zero", ("sd", 1.0), _set(("pair", "shared_vocab_size"), 0), "pair.shared_vocab_size"),
    (
        "duplicate-id",
        ("sd", 1.0),
        lambda d: d["steps"][0]["forest"][1].update(id=d["steps"][0]["forest"][0]["id"]),
        "steps[0].forest[1].id",
    ),
    ("root-depth", ("sd", 1.0), _set(("steps", 0, "forest", 0, "depth"), 3), "steps[0].forest[0].depth"),
    ("root-huge", ("sd", 1.0), _set(("steps", 0, "forest", 0, "root"), 10**9), "steps[0].forest[0].root"),
    ("status", ("sd", 1.0), _set(("steps", 0, "forest", 0, "status"), "maybe"), "steps[0].forest[0].status"),
    ("kind", ("sd", 1.0), _set(("steps", 0, "committed", 0, "kind"), "gift"), "steps[0].committed[0].kind"),
    (
        "committed-node",
        ("sd", 1.0),
        _set(("steps", 0, "committed", 0, "node_id"), 999),
        "steps[0].committed[0].node_id",
    ),
    ("position-parent", ("sd", 1.0), _set(("steps", 0, "positions", 0, "parent"), 999), "steps[0].positions[0].parent"),
    ("position-p-short", ("sd", 1.0), lambda d: d["steps"][0]["positions"][0]["p"].pop(), "steps[0].positions[0].p"),
    (
        "position-texts-short",
        ("sd", 1.0),
        lambda d: d["steps"][0]["positions"][0]["texts"].pop(),
        "steps[0].positions[0].texts",
    ),
    ("output-longer", ("sd", 1.0), lambda d: d["output_ids"].append(1), "output_ids"),
    ("index", ("sd", 1.0), _set(("steps", 1, "index"), 5), "steps[1].index"),
    (
        "n-before",
        ("sd", 1.0),
        lambda d: d["steps"][1].update(n_before=d["steps"][1]["n_before"] + 1),
        "steps[1].n_before",
    ),
    ("target-calls", ("sd", 1.0), _set(("steps", 0, "target_calls"), 7), "steps[0].target_calls"),
    ("seed-negative", ("sd", 1.0), _set(("seed",), -1), "seed"),
    ("seed-too-large", ("sd", 1.0), _set(("seed",), 2**63), "seed"),
    ("param-out-of-range", ("sd", 1.0), _set(("params", "gamma"), 0), "params.gamma"),
    ("param-nested", ("ar", 1.0), _set(("params", "future"), {"a": [1]}), "params.future"),
    ("algorithm-empty", ("sd", 1.0), _set(("algorithm",), ""), "algorithm"),
    (
        "lone-surrogate",
        ("sd", 1.0),
        _set(("steps", 0, "forest", 0, "token_text"), "\ud800"),
        "steps[0].forest[0].token_text",
    ),
    (
        "theory-probe-nan",
        ("batch_sd", 1.0),
        _set(("steps", 0, "controller", "positions", 0, "tv"), math.nan),
        "steps[0].controller.positions[0].tv",
    ),
    (
        "beam-loglik-text",
        ("beam", 1.0),
        _set(("steps", 0, "controller", "beams", 0, "loglik"), "high"),
        "steps[0].controller.beams[0].loglik",
    ),
    ("beam-kept-number", ("dsbd", 1.0), _set(("steps", 0, "controller", "kept"), 3), "steps[0].controller.kept"),
    (
        "sequoia-prediction",
        ("sequoia", 1.0),
        _set(("steps", 0, "controller", "predicted_tokens"), "many"),
        "steps[0].controller.predicted_tokens",
    ),
]


@pytest.mark.parametrize("source,mutate,field", [m[1:] for m in MUTATIONS], ids=[m[0] for m in MUTATIONS])
def test_a_bad_value_is_refused_naming_its_field(source, mutate, field, tmp_path):
    d = data(*source)
    mutate(d)
    assert field in refused(dump(d))
    path = tmp_path / "bad.json"
    path.write_text(dump(d))
    with pytest.raises(TraceFormatError, match=r"^bad\.json: ") as info:
        load_trace_file(str(path), 10**7)
    assert field in str(info.value)


def test_the_upload_handler_answers_in_words_and_keeps_the_session(tmp_path):
    """The handler path: a refused file is a status line naming the field; the replay already on the
    page stays (before, the metrics case raised a bare "Error" and left the session half-replaced)."""
    ex = replayer()
    good = tmp_path / "good.json"
    good.write_text(exported("sd", 1.0))
    session = Session()
    ex.upload([str(good)], session)
    shown = session.columns
    for name, source, mutate, field in MUTATIONS[:12]:
        d = data(*source)
        mutate(d)
        bad = tmp_path / f"{name}.json"
        bad.write_text(dump(d))
        out = ex.upload([str(bad)], session)
        status = html.unescape(out["status"])
        assert "Could not replay" in status and f"{name}.json" in status and field in status
        assert session.columns is shown


def test_metrics_from_the_file_are_never_read(tmp_path):
    d = data("sd")
    real = {k: d["metrics"][k] for k in ("new_tokens", "tau", "target_calls")}
    d["metrics"] = {"tau": "NaN", "new_tokens": -5, "junk": [1, {"x": None}]}
    path = tmp_path / "lying.json"
    path.write_text(dump(d))
    trace = load_trace_file(str(path), 10**7)
    assert {k: trace.metrics[k] for k in real} == real and "junk" not in trace.metrics
    out = replayer().upload([str(path)], Session())
    assert "Replaying 1 uploaded trace" in out["status"] and f"{real['tau']:.2f}" in out["table"]


def test_without_step_times_the_wall_time_is_unknown():
    d = data("ar")
    for s in d["steps"]:
        s["timings"] = {}
    assert RunTrace.from_dict(d).metrics["wall_time_s"] == d["metrics"]["wall_time_s"]  # the file's own, if valid
    d["metrics"]["wall_time_s"] = None
    trace = RunTrace.from_dict(d)
    check_trace(trace)
    m = replay_metrics(trace)
    assert m["wall_time_s"] is None and m["tokens_per_s"] is None and m["new_tokens"] == len(trace.output_ids)
    trace.metrics = m
    baseline = RunTrace.from_json(exported("ar", 1.0))
    assert metrics.speedup(trace, baseline) is None
    table = render.table_html(Session(columns=columns_from_traces([baseline, trace]), source="replay"))
    assert "–" in table


def test_a_replayed_column_says_so_and_an_unknown_algorithm_replays(tmp_path):
    d = data("sd")
    d["algorithm"] = "my_own_sd"
    path = tmp_path / "mine.json"
    path.write_text(dump(d))
    sd = tmp_path / "sd.json"
    sd.write_text(exported("sd", 1.0))
    out = replayer().upload([str(sd), str(path)], Session())
    assert "replayed from file" in out["header", 0] and "unknown algorithm" not in out["header", 0]
    assert "replayed from file" in out["header", 1] and "unknown algorithm" in out["header", 1]
    live = Column("sd", "sd", trace=RunTrace.from_dict(data("sd")), done=True)
    assert "replayed" not in render.column_header(live, 0, 0, False)


def test_a_beam_forest_deeper_than_its_layout_recursion_is_refused():
    d = data("beam")
    forest = d["steps"][0]["forest"]
    first = len(forest)
    forest += [
        {
            "id": 100 + k,
            "parent": None if k == 0 else 99 + k,
            "depth": k,
            "token_id": 1,
            "token_text": "a",
            "status": "bonus",
        }
        for k in range(trace_check.MAX_BEAM_DEPTH + 2)
    ]
    message = refused(dump(d))
    assert f"steps[0].forest[{first + trace_check.MAX_BEAM_DEPTH + 1}].depth" in message and "beam forest" in message


def test_the_work_is_bounded(monkeypatch):
    d = data("sd")
    monkeypatch.setattr(trace_check, "MAX_STEPS", 2)
    assert "a replay reads at most 2" in refused(dump(d))
    monkeypatch.setattr(trace_check, "MAX_STEPS", 100)
    monkeypatch.setattr(trace_check, "MAX_ITEMS", 2)
    assert "steps[0].forest has" in refused(dump(d))


# ---- fuzz ---------------------------------------------------------------------------------------------------

BAD_PROB = st.one_of(
    st.floats(min_value=1.01, allow_infinity=True), st.floats(max_value=-1e-6, allow_infinity=True), st.just(math.nan)
)
BAD_TOKEN = st.one_of(st.integers(max_value=-1, min_value=-(10**20)), st.integers(min_value=VOCAB, max_value=10**20))
BAD_ID = st.one_of(st.integers(max_value=-1, min_value=-(10**20)), st.integers(min_value=10**4, max_value=10**20))
BAD_TIME = st.one_of(
    st.floats(max_value=-1e-9, allow_infinity=True),
    st.just(math.nan),
    st.just(math.inf),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
)
SOURCES = [("sd", 1.0), ("mcsd", 1.0), ("specinfer", 1.0), ("batch_sd", 1.0), ("dsbd", 1.0), ("eesd", 1.0)]


def _sites(d: dict, target: str) -> list[tuple[tuple, str]]:
    """(path to mutate, the field path a refusal must name) for every place ``target`` exists."""
    out = []
    for i, s in enumerate(d["steps"]):
        at = f"steps[{i}]"
        for j, n in enumerate(s["forest"]):
            for key in ("q", "p", "accept_prob", "draw", "p_residual"):
                if target == "prob":
                    out.append((("steps", i, "forest", j, key), f"{at}.forest[{j}].{key}"))
            if target == "token":
                out.append((("steps", i, "forest", j, "token_id"), f"{at}.forest[{j}].token_id"))
            if target == "id" and n["parent"] is not None:
                out.append((("steps", i, "forest", j, "parent"), f"{at}.forest[{j}].parent"))
        for j, c in enumerate(s["committed"]):
            if target == "token":
                out.append((("steps", i, "committed", j, "token_id"), f"{at}.committed[{j}].token_id"))
            if target == "id" and c["node_id"] is not None:
                out.append((("steps", i, "committed", j, "node_id"), f"{at}.committed[{j}].node_id"))
        for j, r in enumerate(s["positions"]):
            where = f"{at}.positions[{j}]"
            if target == "prob":
                out.append((("steps", i, "positions", j, "residual_mass"), f"{where}.residual_mass"))
                for key in ("p", "q", "final_residual"):
                    out += [
                        (("steps", i, "positions", j, key, k), f"{where}.{key}[{k}]") for k in range(len(r[key] or []))
                    ]
            if target == "token":
                out += [(("steps", i, "positions", j, "ids", k), f"{where}.ids[{k}]") for k in range(len(r["ids"]))]
            if target == "id" and r["parent"] is not None:
                out.append((("steps", i, "positions", j, "parent"), f"{where}.parent"))
        if target == "prob":
            out += [(("steps", i, "tv", k), f"{at}.tv[{k}]") for k in range(len(s["tv"] or []))]
        if target == "time":
            out += [(("steps", i, "timings", key), f"{at}.timings.{key}") for key in s["timings"]]
    return out


VALUES = {"prob": BAD_PROB, "token": BAD_TOKEN, "id": BAD_ID, "time": BAD_TIME}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SOURCES), st.sampled_from(sorted(VALUES)), st.data())
def test_fuzz_a_bad_value_anywhere_is_refused_naming_it(source, target, draw):
    d = data(*source)
    sites = _sites(d, target)
    path, field = draw.draw(st.sampled_from(sites), label="site")
    _set(path, draw.draw(VALUES[target], label="value"))(d)
    message = refused(dump(d))
    assert field in message, message


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.just(10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.just("\udfff"),
    st.lists(st.integers(-2, 20), max_size=3),
    st.just({"kind": "beam"}),
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SOURCES + [("beam", 1.0), ("sequoia", 1.0), ("ar", 0.0)]), st.data())
def test_fuzz_any_field_replays_or_is_refused_in_words(source, draw):
    """Whatever one value becomes, the replay is refused in words or draws without an exception."""
    d = data(*source)
    paths = [p for p, _ in _paths(d) if p and p[0] != "metrics"]
    path = draw.draw(st.sampled_from(paths), label="path")
    _set(path, draw.draw(HOSTILE, label="value"))(d)
    try:
        trace = RunTrace.from_json(dump(d))
        check_trace(trace)
    except TraceFormatError as exc:
        assert str(exc).strip()
        return
    trace.metrics = replay_metrics(trace)
    step = path[1] if path[0] == "steps" and isinstance(path[1], int) and path[1] < len(trace.steps) else 0
    render_replay(copy.deepcopy(trace), step)


# ---- the bulk check (issue #23: a 12,000-step replay) agrees with the step-by-step one ---------------------


def _agree(d: dict) -> None:
    """The bulk paths pass only what the step-by-step ones pass: ``RunTrace``'s bulk build
    (``trace._steps_in_bulk``) and ``trace_check._steps_pass`` against ``_step_from_dict`` / ``_check_steps``."""
    from specviz import trace as trace_mod

    rows = copy.deepcopy(d.get("steps"))
    built = trace_mod._steps_in_bulk(copy.deepcopy(rows), own=True)
    try:
        slow = [trace_mod._step_from_dict(s, f"steps[{i}]") for i, s in enumerate(rows)]
    except TraceFormatError:
        assert built is None
        return
    except Exception:  # steps not a list of objects: refused by the run's own schema check before this
        assert built is None
        return
    assert built is None or built == slow
    vocab = d.get("pair", {}).get("shared_vocab_size")
    beam = bool(slow) and isinstance(slow[0].controller, BeamStepState)
    depth = trace_check.MAX_BEAM_DEPTH if beam else None
    try:
        trace_check._check_steps(slow, vocab, depth)
        trace_check._check_free_form(slow)
    except TraceFormatError:
        if trace_check._steps_pass(slow, vocab, depth):  # then only a controller or rule is wrong
            with pytest.raises(TraceFormatError):
                trace_check._check_free_form(slow)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SOURCES + [("beam", 1.0), ("sequoia", 1.0), ("ar", 0.0)]), st.data())
def test_fuzz_the_bulk_checks_pass_only_what_the_step_by_step_ones_pass(source, draw):
    d = data(*source)
    paths = [p for p, _ in _paths(d) if len(p) > 1 and p[0] == "steps"]
    path = draw.draw(st.sampled_from(paths), label="path")
    _set(path, draw.draw(HOSTILE, label="value"))(d)
    _agree(d)


@pytest.mark.parametrize("source,mutate,field", [m[1:] for m in MUTATIONS], ids=[m[0] for m in MUTATIONS])
def test_the_bulk_checks_refuse_every_known_bad_value(source, mutate, field):
    d = data(*source)
    mutate(d)
    _agree(d)


def _long(n: int) -> dict:
    """An sd export's steps repeated until it has ``n`` (more than one ``trace_check.BLOCK``), renumbered."""
    d = data("sd", 1.0)
    base, steps, produced = d["steps"], [], 0
    for i in range(n):
        s = copy.deepcopy(base[i % len(base)])
        s["index"], s["n_before"] = i, produced
        produced += len(s["committed"])
        steps.append(s)
    d["steps"] = steps
    d["output_ids"] = [c["token_id"] for s in steps for c in s["committed"]]
    return d


def test_a_long_trace_is_checked_in_bulk_and_a_bad_value_past_the_first_block_named():
    n = 2 * trace_check.BLOCK + 7
    d = _long(n)
    good = RunTrace.from_json(dump(d))
    check_trace(good)
    assert trace_check._steps_pass(good.steps, VOCAB, None)
    last = n - 3
    j = next(j for j, node in enumerate(d["steps"][last]["forest"]) if node["p"] is not None)
    for path, value, field in [
        (("steps", last, "forest", j, "p"), 1.5, f"steps[{last}].forest[{j}].p"),
        (("steps", last, "n_before"), 0, f"steps[{last}].n_before"),
        (("steps", last, "index"), 3, f"steps[{last}].index"),
        (("steps", last, "timings", "total_ms"), math.nan, f"steps[{last}].timings.total_ms"),
        (("steps", last, "rule", "name"), 7, f"steps[{last}].rule"),
    ]:
        bad = copy.deepcopy(d)
        _set(path, value)(bad)
        assert field in refused(dump(bad))


def test_the_collector_is_paused_while_reading_and_enabled_after():
    import gc

    from specviz.fast_json import gc_paused

    assert gc.isenabled()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    RunTrace.from_json(exported("sd", 1.0))
    with pytest.raises(TraceFormatError):
        RunTrace.from_json("{")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()
