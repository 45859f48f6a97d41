"""Columns are configurations (issue #22 point 5): one algorithm in several columns with other settings,
each labelled by what differs and drawn in its own colour; the table, the figures, Measure, export and
replay all per column. In-process, on the tiny real pair of test_ui."""

from __future__ import annotations

import csv
import json
import re

import gradio as gr
import pytest
from test_ui import screen
from test_ui_support import run_inputs, save_tiny_pair

import specviz
from specviz.ui import AppConfig, Explorer, Session
from specviz.ui import columns as cfg
from specviz.ui.pairs import PairChoice
from specviz.viz import algorithm_color

SD2, SD8 = {"algorithm": "sd", "params": {"gamma": 2}}, {"algorithm": "sd", "params": {"gamma": 8}}


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    target, draft = save_tiny_pair(tmp_path_factory.mktemp("pair"))
    ex = Explorer(
        AppConfig(max_columns=6, measure_repeats=1),
        presets=[PairChoice("tiny", target, draft)],
        pause=lambda control, seconds: control.stopped(),
    )
    ex.demo = ex.build()
    return ex


# ---- the columns value, checked on the server ----------------------------------------------------------------
def test_columns_are_checked_whoever_sends_them():
    algos = specviz.ALGORITHMS
    chosen, problem = cfg.check_columns([SD2, SD8, "ar"], algos, 6)
    assert problem is None and [a for a, _ in chosen] == ["sd", "sd", "ar"]
    assert chosen[0][1] == {**algos["sd"].defaults, "gamma": 2} and chosen[2][1] == {}
    assert cfg.check_columns([{"algorithm": "sd", "params": {"gamma": 3.0}}], algos, 6)[0][0][1]["gamma"] == 3
    refusals = {
        "Select at least one": [],
        "must be a list": "sd",
        "At most 6 columns": ["ar"] * 7,
        "unknown algorithm": [{"algorithm": "nope"}],
        "has no setting 'gama'": [{"algorithm": "sd", "params": {"gama": 2}}],
        "must be an algorithm's name": [{"algorithm": "sd", "extra": 1}],
        "its params must be": [{"algorithm": "sd", "params": [1]}],
    }
    for words, raw in refusals.items():
        got, problem = cfg.check_columns(raw, algos, 6)
        assert got == [] and problem and words in problem, (raw, problem)
    assert cfg.check_columns([None], algos, 6)[1] and cfg.check_columns([{1: 2}], algos, 6)[1]


def test_labels_show_only_what_differs_and_colours_follow_the_column():
    labels = cfg.column_labels([("sd", {"gamma": 2}), ("sd", {"gamma": 8}), ("ar", {}), ("mcsd", {})])
    assert labels == ["sd · gamma 2", "sd · gamma 8", "ar", "mcsd"]  # nothing extra for a lone algorithm
    assert cfg.column_labels([("dsbd", {"threshold": 0.5}), ("dsbd", {"threshold": 0.9})]) == [
        "dsbd · threshold 0.5",
        "dsbd · threshold 0.9",
    ]
    assert cfg.column_labels([("sd", {}), ("sd", {})]) == ["sd #1", "sd #2"]  # the same settings: numbered
    ts, fixed = cfg.column_labels([("sd", {"controller": "beta_ts"}), ("sd", {})])
    assert ts.startswith("sd · controller beta_ts") and fixed.startswith("sd · controller static")
    colors = cfg.column_colors(["sd", "sd", "ar", "sd"])
    assert len(set(colors)) == 4 and colors[0] == algorithm_color("sd")
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colors)


def test_a_label_names_every_setting_that_differs_and_nothing_else():
    """Issue 35 point 3: same-algorithm columns are told apart by what differs, every differing setting
    shown (the confidence threshold too), each where it has an effect; a lone column is its name."""
    ts, conf = cfg.column_labels(
        [("sd", {"controller": "beta_ts"}), ("sd", {"controller": "confidence", "confidence_threshold": 0.3})]
    )
    assert (ts, conf) == ("sd · controller beta_ts", "sd · controller confidence, confidence_threshold 0.3")
    assert cfg.column_labels([("sd", {"controller": "beta_ts"}), ("sd", {"controller": "confidence"})]) == [
        "sd · controller beta_ts",
        "sd · controller confidence",
    ]  # each controller's defaults: not named
    many = {"gamma": 2, "fixed_length": 3, "drafter": "model", "controller": "static"}
    assert cfg.column_labels([("sd", many), ("sd", {}), ("ar", {})]) == [
        "sd · gamma 2, drafter model",
        f"sd · gamma {specviz.ALGORITHMS['sd'].defaults['gamma']}, drafter auto",
        "ar",
    ]  # fixed_length: no effect
    assert cfg.column_labels([("sd", {"alpha0": 2.0}), ("sd", {})]) == ["sd #1", "sd #2"]  # no effect: same
    assert cfg.differing_settings([({"a": 1, "b": 2}, {"a": 1}), ({"a": 1, "b": 2}, {"a": 1, "b": 3})]) == [
        [],
        ["b"],
    ]  # b has no effect in the first column: its default 2 there, 3 in the second


# ---- a run, its table and figures, Measure, export and replay ------------------------------------------------
def test_two_sd_columns_run_export_and_replay_as_two_configurations(explorer, tmp_path):
    session = Session(pair_key=explorer.default_key)
    out = screen(explorer.run(session, **run_inputs(max_new_tokens=10, columns=[SD2, SD8])))
    assert "Done · 2 runs" in out["status"]
    a, b = session.columns
    assert (a.params["gamma"], b.params["gamma"]) == (2, 8)
    assert a.trace.params["gamma"] == 2 and b.trace.params["gamma"] == 8
    assert (a.label, b.label) == ("sd · gamma 2", "sd · gamma 8")
    assert a.color != b.color and a.color == algorithm_color("sd")
    for i, col in enumerate((a, b)):  # the header names the column and wears its colour
        head = out["header", i]
        assert col.label in head and f"background:{col.color}" in head
    table = out["table"]
    assert table.count("<tr") - table.count("<thead") >= 2 and "sd · gamma 2" in table and "sd · gamma 8" in table
    for fig in ("per_step", "cumulative", "race"):  # the race: one drafted-length line per column
        lines = {
            t.name: t.line.color for t in out[fig].data if str(t.name).startswith("sd") and t.showlegend is not False
        }
        assert lines == {"sd · gamma 2": a.color, "sd · gamma 8": b.color}, fig
    # export: two files, each its own configuration
    assert a.path and b.path and a.path != b.path
    assert "gamma_2" in a.path and "gamma_8" in b.path
    saved = [json.loads(open(c.path).read()) for c in (a, b)]
    assert [s["params"]["gamma"] for s in saved] == [2, 8]
    # each column's tokens with their provenance, as CSV beside the JSON, offered in its column
    for i, col in enumerate((a, b)):
        with open(col.csv_path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert [int(r["token_id"]) for r in rows] == col.trace.output_ids
        assert {r["kind"] for r in rows} <= {"draft", "resampled", "bonus"} and rows[0]["algorithm"] == "sd"
        assert out["download_csv", i].visible and out["download_csv", i].value
    # replay both: two columns, the same labels and colours, no model needed
    replayed = Session()
    view = explorer.upload([a.path, b.path], replayed)
    assert [c.label for c in replayed.columns] == ["sd · gamma 2", "sd · gamma 8"]
    assert [c.color for c in replayed.columns] == [a.color, b.color]
    assert all(c.replayed and c.trace.steps for c in replayed.columns)
    assert "sd · gamma 2" in view["table"] and "sd · gamma 8" in view["table"]
    assert [c.trace.output_ids for c in replayed.columns] == [a.trace.output_ids, b.trace.output_ids]
    assert [open(c.csv_path).read() for c in replayed.columns] == [open(c.csv_path).read() for c in (a, b)]
    # the page's replay sets the column editor to the replayed configurations, so Run runs them again
    ed = explorer.editor
    replay = next(f.fn for f in explorer.demo.fns.values() if f.name == "replay")
    bound = replay([a.path, b.path], Session())
    assert [(c["algorithm"], c["params"]["gamma"]) for c in bound[ed.value]] == [("sd", 2), ("sd", 8)]
    assert [label for label, _ in bound[ed.pick].choices] == ["1 · sd · gamma 2", "2 · sd · gamma 8"]
    assert bound[explorer.page.table] == view["table"] or "sd · gamma 8" in bound[explorer.page.table]


def test_measure_gives_a_row_per_column(explorer):
    session = Session(pair_key=explorer.default_key)
    out = screen(explorer.measure(session, **run_inputs(max_new_tokens=4, columns=[SD2, SD8, SD8])))
    html = out["measurements"]
    assert html.count('<th scope="row">') == 3
    names = [row.split("<br>")[0] for row in html.split('<th scope="row">')[1:]]
    assert names == ["sd · gamma 2", "sd · gamma 8 #1", "sd · gamma 8 #2"]  # named as the columns are
    assert html.count('<span class="sv-params">gamma=8, controller=static, drafter=auto</span>') == 2


def test_over_six_columns_and_each_columns_cost_are_refused(explorer):
    session = Session(pair_key=explorer.default_key)
    (out,) = explorer.run(session, **run_inputs(prompt="x", max_new_tokens=4, columns=[SD2] * 7))
    assert "At most 6 columns" in out["status"]
    costly = {"algorithm": "sd", "params": {"gamma": 99}}
    out = screen(explorer.run(session, **run_inputs(prompt="x", max_new_tokens=4, columns=[SD2, costly])))
    assert "sv-error" in out["header", 1] and "gamma" in out["header", 1]  # refused by name, in its column
    assert "sv-error" not in out["header", 0]


# ---- the page's column editor -------------------------------------------------------------------------------
def test_duplicate_a_column_then_change_its_gamma(explorer):
    ed = explorer.editor
    g = specviz.ALGORITHMS["sd"].defaults["gamma"]
    value = ed.value.value
    assert [c["algorithm"] for c in value] == explorer.default_algorithms()
    v = ed.on_algorithms(value, 0, ["sd"])
    cols = v[ed.value]
    assert [c["algorithm"] for c in cols] == ["sd"] and v[ed.pick].value == 0
    v = ed.on_duplicate(cols, 0)
    cols = v[ed.value]
    assert [c["algorithm"] for c in cols] == ["sd", "sd"] and v[ed.pick].value == 1
    v = ed.on_setting("sd", "gamma", cols, 1, 8.0)  # a slider sends a float
    cols = v[ed.value]
    assert [c["params"]["gamma"] for c in cols] == [g, 8]
    assert [label for label, _ in v[ed.pick].choices] == [f"1 · sd · gamma {g}", "2 · sd · gamma 8"]
    # picking column 1 loads its values into the shared controls
    v = ed.on_pick(cols, 0)
    assert v[ed.controls["sd", "gamma"]] == g and v[ed.groups["sd"]].visible is True
    assert v[ed.groups["dsbd"]].visible is False
    # the run takes the editor's value as it is
    chosen, problem = cfg.check_columns(cols, specviz.ALGORITHMS, explorer.n_slots)
    assert problem is None and [p["gamma"] for _, p in chosen] == [g, 8]
    # remove; at most n columns; unchecking an algorithm removes all its columns
    assert [c["params"]["gamma"] for c in ed.on_remove(cols, 0)[ed.value]] == [8]
    full = cols
    for _ in range(10):
        full = ed.on_duplicate(full, 0)[ed.value]
    assert len(full) == explorer.n_slots
    assert ed.on_duplicate(full, 0)[ed.duplicate].interactive is False
    assert ed.on_algorithms(full, 0, ["ar"])[ed.value] == [cfg.default_column(specviz.ALGORITHMS["ar"])]


def test_the_algorithm_boxes_are_written_back_only_when_the_columns_disagree(explorer):
    """A box the user clicks is theirs: echoing the boxes back from an earlier click's event would
    re-check one unchecked meanwhile (seen in a browser under load); only a refusal is written back."""
    ed = explorer.editor
    v = ed.on_algorithms(ed.value.value, 0, ["ar", "sd"])
    assert ed.algos not in v and [c["algorithm"] for c in v[ed.value]] == ["ar", "sd"]
    many = [a for a in specviz.ALGORITHMS if a != "eesd"][: explorer.n_slots + 1]  # one more than fits
    v = ed.on_algorithms(None, 0, many)
    assert len(v[ed.value]) == explorer.n_slots and v[ed.algos] == many[: explorer.n_slots]


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "sd",
        3,
        [None, 1, "x"],
        [{"algorithm": 5}],
        {"algorithm": "sd"},
        [{"algorithm": "sd", "params": {"gamma": 10**30, "controller": float("nan")}}],
    ],
)
def test_editor_handlers_take_anything(explorer, bad):
    ed = explorer.editor
    for v in (
        ed.on_pick(bad, bad),
        ed.on_duplicate(bad, 99),
        ed.on_remove(bad, -1),
        ed.on_algorithms(bad, 0, bad),
        ed.on_setting("sd", "gamma", bad, 0, bad),
    ):
        cols = v[ed.value]
        assert isinstance(cols, list) and len(cols) <= explorer.n_slots
        json.dumps(cols, allow_nan=False)  # the page can hold it
        gr.JSON().postprocess(cols)


def test_editor_actions_in_quick_succession_all_count(explorer):
    """Every editor event runs after a pending one of its kind, on the values it left (``always_last``):
    with Gradio's default for ``.input`` and clicks (``once``) a second box unchecked while the first
    was pending was dropped, and the run had a column too many (seen in test_e2e_app)."""
    names = {"on_algorithms", "on_pick", "on_duplicate", "on_remove", "on_setting"}
    modes = {f.name: f.trigger_mode for f in explorer.demo.fns.values() if f.name in names}
    assert set(modes) == names and set(modes.values()) == {"always_last"}, modes
