"""Serving metrics (issue #24 point 3): the per-position acceptance vector, the per-step latency
timeline and per-token provenance in the export (``RunTrace.drafter``, ``export_tokens.tokens_csv``,
``--tokens-csv``), on hand-built traces whose answer is known and on real tiny runs."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import plotly.graph_objects as go
import pytest

from specviz import metrics
from specviz.errors import TraceFormatError
from specviz.export_tokens import TOKEN_COLUMNS, drafter_name, token_rows, tokens_csv
from specviz.trace import CommittedToken, RunTrace, StepRecord, TreeNode
from specviz.trace_check import check_trace
from specviz.viz.serving import FEW_SAMPLES, acceptance_per_position_figure, step_latency_figure
from specviz.viz.table import comparison_table_html, position_cell

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden"


# ---- hand-built traces -------------------------------------------------------------------------------


def node(i: int, parent: int | None, depth: int, status: str, root: int = 0, tok: int | None = None) -> TreeNode:
    return TreeNode(i, parent, depth, tok if tok is not None else i, f"<{i}>", q=0.5, p=0.5, status=status, root=root)


def trace_of(forests: list[list[TreeNode]], algorithm: str = "sd") -> RunTrace:
    """A trace whose steps have these forests; each step commits its accepted nodes then its resampled
    or bonus node (as the engine does), with step times draft 1 + verify 2 + bookkeeping 0.5 ms."""
    t = RunTrace(
        algorithm,
        {},
        {"target": "t", "draft": "d"},
        {"temperature": 1.0},
        0,
        [1],
        "<1>",
        drafter={"kind": "draft_model", "name": "d"},
    )
    for k, forest in enumerate(forests):
        done = [n for n in forest if n.status == "accepted"] + [n for n in forest if n.status in ("resampled", "bonus")]
        committed = [
            CommittedToken(n.token_id, n.token_text, "draft" if n.status == "accepted" else n.status, n.id)
            for n in done
        ]
        t.steps.append(
            StepRecord(
                k, len(t.output_ids), forest, committed, timings={"draft_ms": 1.0, "verify_ms": 2.0, "total_ms": 3.5}
            )
        )
        t.output_ids += [c.token_id for c in committed]
    return t


def chain(statuses: list[str], end: str) -> list[TreeNode]:
    nodes = [node(i, i - 1 if i else None, i, s) for i, s in enumerate(statuses)]
    last = next((i for i, s in enumerate(statuses) if s != "accepted"), len(statuses))
    return nodes + [node(len(statuses), last - 1 if last else None, last, end)]


def counts(vec: list[metrics.PositionAcceptance]) -> list[tuple[int, int, int, int]]:
    return [(pa.position, pa.drafted, pa.reached, pa.accepted) for pa in vec]


def test_chain_positions_count_what_was_reached_and_accepted():
    t = trace_of(
        [
            chain(["accepted", "accepted", "rejected", "not_reached"], "resampled"),
            chain(["accepted"] * 4, "bonus"),
            chain(["rejected", "not_reached", "not_reached", "not_reached"], "resampled"),
        ]
    )
    vec = metrics.acceptance_per_position(t)
    # position: drafted in 3 steps; reached = tested (step 1 reaches 1-3, step 2 1-4, step 3 only 1)
    assert counts(vec) == [(1, 3, 3, 2), (2, 3, 2, 2), (3, 3, 2, 1), (4, 3, 1, 1)]
    assert [pa.rate for pa in vec] == [2 / 3, 1.0, 0.5, 1.0]
    # vLLM's unconditional per-position rate (accepted / steps) is the running product of these
    assert [pa.accepted / 3 for pa in vec] == pytest.approx([2 / 3, 2 / 3, 1 / 3, 1 / 3])


def test_a_tree_depth_is_reached_once_a_step_and_accepted_if_any_node_there_was():
    two_children = [
        node(0, None, 0, "accepted"),
        node(1, 0, 1, "rejected"),
        node(2, 0, 1, "accepted"),
        node(3, 2, 2, "rejected"),
        node(4, 1, 2, "not_reached"),
        node(5, 2, 2, "resampled"),
    ]
    both_rejected = [
        node(0, None, 0, "accepted"),
        node(1, 0, 1, "rejected"),
        node(2, 0, 1, "rejected"),
        node(3, 2, 2, "not_reached"),
        node(4, 0, 1, "resampled"),
    ]
    vec = metrics.acceptance_per_position(trace_of([two_children, both_rejected], "specinfer"))
    assert counts(vec) == [(1, 2, 2, 2), (2, 2, 2, 1), (3, 2, 1, 0)]
    assert [pa.rate for pa in vec] == [1.0, 0.5, 0.0]


def test_a_forest_counts_a_depth_over_all_its_trees():
    # batch_sd-like: root of tree 0 rejected, tree 1's accepted, then its child; tree 0's child never tested
    batch = [
        node(0, None, 0, "rejected", root=0),
        node(1, None, 0, "accepted", root=1),
        node(2, 0, 1, "not_reached", root=0),
        node(3, 1, 1, "accepted", root=1),
        node(4, 3, 2, "bonus", root=1),
    ]
    # dsbd-like: every beam's depth-1 node tested (and rejected) though only one root was accepted
    beams = [
        node(0, None, 0, "accepted"),
        node(1, None, 0, "not_reached"),
        node(2, 0, 1, "rejected"),
        node(3, 1, 1, "rejected"),
        node(4, 2, 2, "not_reached"),
        node(5, 0, 1, "resampled"),
    ]
    vec = metrics.acceptance_per_position(trace_of([batch, beams], "batch_sd"))
    assert counts(vec) == [(1, 2, 2, 2), (2, 2, 2, 1), (3, 1, 0, 0)]
    assert vec[2].rate is None  # drafted, never reached: no rate


def test_a_run_that_drafts_nothing_has_no_positions():
    ar = trace_of([[node(0, None, 0, "bonus")], [node(0, None, 0, "bonus")]], "ar")
    assert metrics.acceptance_per_position(ar) == []
    assert position_cell([])[0] == "–"
    fig = acceptance_per_position_figure([("ar", ar)])
    assert not fig.data and "draft nothing" in fig.layout.annotations[0].text


def test_the_table_shows_the_first_positions_and_every_count_in_its_tooltip():
    t = trace_of(
        [
            chain(["accepted", "accepted", "rejected", "not_reached"], "resampled"),
            chain(["accepted"] * 4, "bonus"),
            chain(["rejected", "not_reached", "not_reached", "not_reached"], "resampled"),
        ]
    )
    text, tip = position_cell(metrics.acceptance_per_position(t))
    assert text == "67/100/50…"
    assert tip.endswith("position 1: 2/3; position 2: 2/2; position 3: 1/2; position 4: 1/1")
    html = comparison_table_html([("sd", t)])
    assert "67/100/50…" in html and "accept by position" in html
    assert metrics.DEFINITIONS["acceptance_per_position"] in html  # the definition is under the table


def test_the_figure_shows_the_counts_and_marks_few_samples():
    t = trace_of(
        [chain(["accepted", "rejected"], "resampled")] * (FEW_SAMPLES + 2) + [chain(["accepted", "accepted"], "bonus")]
    )
    fig = acceptance_per_position_figure([("sd γ=2", t)])
    go.Figure(fig.to_dict())  # valid plotly
    (line,) = fig.data
    assert list(line.x) == [1, 2] and list(line.y) == [1.0, 1 / (FEW_SAMPLES + 3)]
    assert list(line.marker.symbol) == ["circle", "circle"]
    assert "accepted in 13 of the 13 steps that reached it" in line.text[0]
    few = acceptance_per_position_figure([("short", trace_of([chain(["accepted"], "bonus")]))])
    assert list(few.data[0].marker.symbol) == ["circle-open"] and "few samples" in few.data[0].text[0]


def test_the_latency_timeline_stacks_each_steps_parts_to_its_time():
    a = trace_of([chain(["accepted"], "bonus")] * 3)
    a.steps[1].timings = {"draft_ms": 1.0, "verify_ms": 2.0, "total_ms": 9.0, "bookkeeping_ms": 6.0}
    lat = metrics.step_latencies(a)
    assert lat["step"] == [1, 2, 3] and lat["bookkeeping_ms"] == [0.5, 6.0, 0.5]  # total - draft - verify if absent
    assert lat["total_ms"] == [3.5, 9.0, 3.5]
    fig = step_latency_figure([("sd", a), ("sd", a)], current_step=1)
    go.Figure(fig.to_dict())
    bars = [tr for tr in fig.data if tr.type == "bar"]
    assert len(bars) == 6 and {tr.yaxis for tr in bars} == {"y", "y2"}  # one small plot per run
    first = [tr for tr in bars if tr.yaxis == "y"]
    assert [sum(v) for v in zip(*(tr.y for tr in first))] == lat["total_ms"]
    assert sum(tr.showlegend for tr in bars) == 3  # draft, verify, bookkeeping once
    no_times = trace_of([chain(["accepted"], "bonus")])
    no_times.steps[0].timings = {}
    assert "without step times" in step_latency_figure([("old", no_times)]).layout.annotations[0].text


def test_one_slow_step_does_not_flatten_the_shared_scale():
    t = trace_of([chain(["accepted"], "bonus")] * 12)
    t.steps[0].timings = {"draft_ms": 1.0, "verify_ms": 2.0, "total_ms": 600.0}
    fig = step_latency_figure([("sequoia", t)])
    top = fig.layout.yaxis.range[1]
    assert 3.5 < top < 600
    (marker,) = [tr for tr in fig.data if tr.type == "scatter"]
    assert list(marker.x) == [1] and list(marker.customdata) == [600.0]  # marked, its value in the hover


# ---- real tiny runs ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def same_pair():
    from tests.tiny import tiny_pair

    return tiny_pair("llama", vocab=16, draft="noisy", noise=0.0)  # the draft is the target, weight for weight


@pytest.fixture(scope="module")
def noisy_pair():
    from tests.tiny import tiny_pair

    return tiny_pair("llama", vocab=16, draft="noisy", noise=0.5)


def test_greedy_sd_with_the_target_as_draft_accepts_every_reached_position(same_pair):
    import specviz

    t = specviz.decode(same_pair, "sd", [1, 2, 3], max_new_tokens=30, temperature=0, gamma=4)
    vec = metrics.acceptance_per_position(t)
    assert len(vec) == 4 and all(pa.reached for pa in vec)
    assert all(pa.accepted == pa.reached for pa in vec) and {pa.rate for pa in vec} == {1.0}
    assert t.drafter == {"kind": "draft_model", "name": same_pair.draft_name, "params": t.pair["draft_params"]}


def test_the_drafter_is_recorded_and_survives_the_json_export(noisy_pair):
    import specviz

    for algo, kind in (
        ("sd", "draft_model"),
        ("dsbd", "draft_model"),
        ("pld", "prompt_lookup"),
        ("ar", None),
        ("beam", None),
    ):
        t = specviz.decode(noisy_pair, algo, [1, 2, 3, 1, 2], max_new_tokens=6, temperature=1.0, seed=1)
        assert (t.drafter or {}).get("kind") == kind, algo
        again = RunTrace.from_json(t.to_json())
        assert again.drafter == t.drafter and json.loads(t.to_json())["drafter"] == t.drafter
        check_trace(again)


def test_the_early_exit_drafter_names_its_layer():
    import specviz
    from specviz.trace import describe_drafter

    d = describe_drafter(specviz.ALGORITHMS["eesd"], {"target": "tiny", "early_exit": {"exit_layer": 2}})
    assert d["kind"] == "early_exit" and d["exit_layer"] == 2 and "layer 2" in d["name"]


def parse(text: str) -> list[dict[str, str]]:
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert rows and list(rows[0]) == list(TOKEN_COLUMNS)
    return rows


def test_the_csv_round_trips_the_committed_tokens_exactly(noisy_pair):
    import specviz

    t = specviz.decode(noisy_pair, "sd", [1, 2, 3], max_new_tokens=40, temperature=1.0, seed=4, gamma=4)
    rows = parse(tokens_csv(t))
    committed = [c for s in t.steps for c in s.committed]
    assert [int(r["token_id"]) for r in rows] == t.output_ids
    assert [r["text"] for r in rows] == [c.text for c in committed]
    assert [r["kind"] for r in rows] == [c.kind for c in committed]
    assert {r["kind"] for r in rows} >= {"draft", "resampled"}
    assert [int(r["position"]) for r in rows] == list(range(len(t.output_ids)))
    assert {r["drafter"] for r in rows if r["kind"] == "draft"} == {noisy_pair.draft_name}
    assert {r["drafter"] for r in rows if r["kind"] != "draft"} == {""}  # the target's tokens
    for r, want in zip(rows, token_rows(t)):
        for key in ("p", "q", "accept_prob", "draw"):
            assert (None if r[key] == "" else float(r[key])) == want[key]  # every float exactly


def test_texts_with_separators_quotes_and_newlines_survive():
    texts = [",", '"', "\n", "\r\n", ' a,b "c" ', ""]
    t = trace_of([[TreeNode(0, None, 0, 5, texts[k], status="bonus")] for k in range(len(texts))], "ar")
    for s, text in zip(t.steps, texts):
        s.committed[0].text = text
    assert [r["text"] for r in parse(tokens_csv(t, t))] == texts * 2
    assert [r["run"] for r in parse(tokens_csv(t, t))] == ["0"] * 6 + ["1"] * 6


def test_an_old_trace_without_a_drafter_still_loads_and_exports():
    data = json.loads((GOLDEN / "sd_t1.json").read_text(encoding="utf-8"))
    # as the v4 code wrote it: no drafter (trace or parameter) and no node's q_draft
    data.pop("drafter"), data["params"].pop("drafter")
    for step in data["steps"]:
        for node in step["forest"]:
            node.pop("q_draft")
    data["schema_version"] = 4
    t = RunTrace.from_dict(data)
    check_trace(t)
    assert t.drafter is None and drafter_name(t) == ""
    rows = parse(tokens_csv(t))
    assert [int(r["token_id"]) for r in rows] == t.output_ids and {r["drafter"] for r in rows} == {""}
    assert metrics.acceptance_per_position(t)  # sd drafted: the vector needs no new field
    assert "step times" in step_latency_figure([("old", t)]).layout.annotations[0].text  # the file keeps none


def test_a_malformed_drafter_is_refused_with_its_field_named():
    t = trace_of([chain(["accepted"], "bonus")])
    check_trace(t)
    for bad in ({"kind": 3, "name": "x"}, {"name": "x"}, {"kind": "draft_model", "name": ""}):
        t.drafter = bad
        with pytest.raises(TraceFormatError, match=r"drafter\.(kind|name)"):
            check_trace(RunTrace.from_json(t.to_json()))
    data = json.loads(t.to_json())
    data["drafter"] = "d"
    with pytest.raises(TraceFormatError, match="drafter"):
        RunTrace.from_dict(data)


def test_paced_waits_are_not_in_the_step_times(noisy_pair):
    import specviz

    run = specviz.stream(noisy_pair, "sd", [1, 2, 3], max_new_tokens=8, temperature=1.0, seed=2, gamma=2)
    started = time.perf_counter()
    for _ in run:
        time.sleep(0.25)  # what a paced live column does between steps
    wall = time.perf_counter() - started
    lat = metrics.step_latencies(run.trace)
    assert sum(lat["total_ms"]) / 1000 < wall - 0.25 * len(lat["step"]) + 1e-3
    assert lat["total_ms"] == pytest.approx([s.timings["total_ms"] for s in run.trace.steps])


# ---- the command line --------------------------------------------------------------------------------


@pytest.fixture
def text_pair(monkeypatch):
    from specviz.models.loading import ModelPair
    from tests.tiny import tiny_model, tiny_tokenizer

    tok = tiny_tokenizer()
    pair = ModelPair(
        tiny_model("llama", vocab=len(tok)),
        tiny_model("llama", vocab=len(tok), seed=1),
        tok,
        len(tok),
        target_name="tiny-target",
        draft_name="tiny-draft",
    )
    monkeypatch.setattr("specviz.cli.load_pair_from_args", lambda args: pair)
    return pair


def test_run_and_compare_write_the_tokens_csv(text_pair, tmp_path, capsys):
    from specviz.cli import main

    out, trace_out = tmp_path / "tokens.csv", tmp_path / "t.json"
    assert (
        main(
            [
                "run",
                "--algo",
                "sd",
                "--prompt",
                "def f():",
                "--max-new-tokens",
                "6",
                "--temperature",
                "1",
                "--tokens-csv",
                str(out),
                "--out",
                str(trace_out),
            ]
        )
        == 0
    )
    t = RunTrace.from_json(trace_out.read_text(encoding="utf-8"))
    assert out.read_text(encoding="utf-8") == tokens_csv(t)
    assert "tokens written to" in capsys.readouterr().out
    assert (
        main(
            [
                "compare",
                "--algos",
                "ar",
                "sd",
                "--repeats",
                "1",
                "--prompt",
                "def f():",
                "--max-new-tokens",
                "4",
                "--tokens-csv",
                str(out),
            ]
        )
        == 0
    )
    rows = parse(out.read_text(encoding="utf-8"))
    assert [r["algorithm"] for r in rows] == ["ar"] * 4 + ["sd"] * 4 and {r["run"] for r in rows} == {"0", "1"}


def test_a_bad_tokens_csv_path_is_refused_before_loading(monkeypatch, tmp_path, capsys):
    from specviz.cli import main

    def load(*args, **kwargs):
        raise AssertionError("a pair was loaded before the bad option was refused")

    monkeypatch.setattr("specviz.models.loading.load_pair", load)
    for cmd in (["run"], ["compare", "--algos", "ar", "sd"]):
        for path, why in ((str(tmp_path), "must name a file"), (str(tmp_path / "no" / "t.csv"), "does not exist")):
            code = main([*cmd, "--prompt", "a", "--preset", "bundled-stdlib-pair", "--tokens-csv", path])
            err = capsys.readouterr().err
            assert code == 2 and err.startswith("error: --tokens-csv") and why in err and err.count("\n") == 1, err


def test_the_new_modules_import_without_the_model_stack():
    from tests.test_imports import BLOCK

    code = BLOCK + (
        "import json, sys\n"
        "from specviz import export_tokens, metrics\n"
        "from specviz.trace import RunTrace\n"
        "from specviz.viz import serving\n"
        "d = json.load(open(sys.argv[1])); d['schema_version'] = 4\n"
        "t = RunTrace.from_dict(d)\n"
        "export_tokens.tokens_csv(t); serving.acceptance_per_position_figure([('sd', t)])\n"
        "serving.step_latency_figure([('sd', t)])\n"
        "assert not [m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')]\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(GOLDEN / "sd_t1.json")], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
