"""``bench``: the report's structure on a tiny real pair with a tokenizer; lossless methods reproduce
``ar``'s greedy text; the cost model's arithmetic. No speed is asserted."""

from __future__ import annotations

import json

import pytest
import torch

import specviz
from specviz.bench import costs
from specviz.bench.goals import goals, goals_markdown
from specviz.bench.run import algorithm_variants, run_all, sd_rows, to_markdown, write_report
from specviz.models.loading import ModelPair
from specviz.trace import RunTrace, StepRecord, TreeNode
from tests.tiny import tiny_model, tiny_tokenizer

ONE_WORKER = True  # the report fixture (every method on a tiny pair) is built once (tests/conftest.py)
ROW_FIELDS = {
    "method",
    "category",
    "tokens_per_s",
    "speedup_vs_ar",
    "tau",
    "target_calls",
    "greedy_equal",
    "predicted_speedup",
}


EXTRA_SD = sd_rows(controllers=("beta_ts",))  # a controller's row, checked like any other


@pytest.fixture(scope="module")
def report():
    tok = tiny_tokenizer()
    target = tiny_model("llama", vocab=len(tok), seed=0, hidden=32, layers=2, init_range=0.2)
    draft = tiny_model("llama", vocab=len(tok), seed=1, hidden=16, layers=1, init_range=0.2)
    for m in (target, draft):
        m.generation_config.eos_token_id = None
    pair = ModelPair(target, draft, tok, len(tok), target_name="tiny-target", draft_name="tiny-draft")
    prompts = {"code": ["def add(a, b):\n"], "repetition": ["for i in range(10):\n    print(i)\nfor i in"]}
    return run_all(pair, prompts, max_new_tokens=8, repeat=1, sizes=(1, 2, 4), extra_sd=EXTRA_SD)


def test_extra_sd_rows_are_named_by_what_they_change():
    assert algorithm_variants(["ar", "sd"], 4, sd_rows((2,), ("beta_ts",))) == [
        ("ar", "ar", {}),
        ("sd_g2", "sd", {"gamma": 2}),
        ("sd_beta_ts", "sd", {"controller": "beta_ts"}),
        ("sd", "sd", {}),
    ]


def test_report_structure(report, tmp_path):
    variants = {name for name, _, _ in algorithm_variants(list(specviz.ALGORITHMS), 4, EXTRA_SD)}  # dsbd twice
    assert "sd_beta_ts" in variants
    assert variants | {"hf_generate", "hf_assisted", "hf_prompt_lookup"} == (
        {r["method"] for r in report["rows"]} | set(report["skipped"])
    )
    for key in (
        "trace_overhead",
        "target_call_ms",
        "draft_call_ms",
        "bare_matmul_ms",
        "stock_target_call_ms",
        "stock_draft_call_ms",
    ):
        assert isinstance(report[key], float), key
    assert report["target_call_ms"] > 0 and report["bare_matmul_ms"] > 0
    over = report["trace_overhead_detail"]  # 9 pairs of runs of the first category's one prompt
    assert over["pairs"] == 9 and len(over["spread"]) == 2  # one pair a round: the overhead is their median
    assert over["recording_share"] > 0 and 0 <= over["gc_share"] < 1
    assert {r["category"] for r in report["rows"]} == {"code", "repetition"}
    assert len(report["goals"]) == 9 and all(g["met"] in (True, False, None) for g in report["goals"])
    for row in report["rows"]:
        assert ROW_FIELDS <= set(row), row
        assert row["new_tokens"] == 8  # one prompt per category, no EOS
    write_report(report, str(tmp_path))
    data = json.loads((tmp_path / "bench.json").read_text())
    assert data["rows"][0].keys() >= ROW_FIELDS
    assert "| code | sd |" in (tmp_path / "bench.md").read_text()
    assert "plotly" in (tmp_path / "bench.html").read_text()


def test_lossless_methods_reproduce_ar(report):
    ar = {r["category"]: r for r in report["rows"] if r["method"] == "ar"}
    for row in report["rows"]:
        if row["kind"] == "specviz" and row["lossless"]:
            assert row["greedy_equal"] is True, row["method"]
        if row["method"] == "ar":
            assert row["tau"] == 1.0 and row["speedup_vs_ar"] == 1.0
            assert row["predicted_speedup"] == pytest.approx(1.0)
        if row["method"] == "hf_generate":
            assert row["target_calls"] == ar[row["category"]]["target_calls"]  # one call per token, as ar
    assert "| repetition | ar |" in to_markdown(report)


def test_the_report_states_what_it_ran_under_and_each_speedups_range(report):
    """Issue 34: bench times with the shared routine (``bench.timing``) and says under what: torch
    threads, device, dtype, load before and after; each speed-up has its pass-by-pass range."""
    cond = report["conditions"]
    assert cond["threads"] == torch.get_num_threads() and (cond["device"], cond["dtype"]) == ("cpu", "float32")
    assert {"load_before", "load_after", "cpus"} <= set(cond)
    for row in report["rows"]:
        if row["speedup_vs_ar"] is not None:
            assert row["speedup_vs_ar_min"] <= row["speedup_vs_ar"] * (1 + 1e-9) or row["method"] == "ar"
    assert f"- timed on {cond['threads']} torch thread" in to_markdown(report)


def _trace(steps: list[tuple[int, int, int]]) -> RunTrace:
    """A trace whose steps drafted ``n`` nodes in ``d`` draft calls and committed ``c`` tokens."""
    t = RunTrace("x", {}, {}, {}, 0, [1], "")
    for i, (n, d, c) in enumerate(steps):
        s = StepRecord(i, 0, forest=[TreeNode(j, None, 0, 1, "", status="rejected") for j in range(n)], draft_calls=d)
        t.steps.append(s)
        t.output_ids += [1] * c
    return t


def test_predicted_speedup_is_tokens_times_t1_over_step_costs():
    t_target = {1: 1.0, 2: 1.5, 4: 2.0, 8: 4.0}
    t_draft = {1: 0.25, 2: 0.3, 4: 0.5, 8: 1.0}
    # one step: 3 drafted nodes in 3 draft calls, verify 4 tokens (2.0), drafts 3 x 0.25; 4 tokens out
    assert costs.predicted_speedup([_trace([(3, 3, 4)])], t_target, t_draft) == pytest.approx(4 * 1.0 / 2.75)
    # ar: nothing drafted, one token per step: exactly 1
    assert costs.predicted_speedup([_trace([(0, 0, 1)] * 5)], t_target, t_draft) == pytest.approx(1.0)
    assert costs.interpolate(t_target, 3) == pytest.approx(1.75)
    assert costs.interpolate(t_target, 16) == pytest.approx(8.0)  # linear beyond the last size


def test_cli_quick_on_the_tiny_random_pair(tmp_path):
    """``bench --quick --random-pair tiny``: the command the GPU runs use, end to end on a CPU."""
    from specviz.cli import main

    assert (
        main(
            [
                "bench",
                "--quick",
                "--random-pair",
                "tiny",
                "--device",
                "cpu",
                "--algos",
                "ar",
                "sd",
                "--prompts-per-category",
                "1",
                "--max-new-tokens",
                "6",
                "--sizes",
                "8",
                "1",
                "3",
                "3",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    data = json.loads((tmp_path / "bench.json").read_text())
    assert {r["method"] for r in data["rows"]} == {"ar", "sd", "hf_generate", "hf_assisted", "hf_prompt_lookup"}
    assert all(r["greedy_equal"] for r in data["rows"] if r["method"] in ("ar", "sd"))
    assert set(data["t_target_ms"]) == {"1", "3", "8"}  # --sizes: the sizes timed, each once
    with pytest.raises(SystemExit):  # a size the cost model cannot use is refused before anything loads
        main(["bench", "--random-pair", "tiny", "--sizes", "0"])


def _row(category, method, tokens_per_s, tau=1.0, efficiency=None, kind="specviz", greedy_equal=True):
    return {
        "category": category,
        "method": method,
        "tokens_per_s": tokens_per_s,
        "tau": tau,
        "kind": kind,
        "lossless": True,
        "efficiency": efficiency,
        "greedy_equal": greedy_equal,
    }


def test_goals_report_each_target_per_category():
    report = {
        "target_call_over_bare": 1.4,
        "draft_call_over_target": 0.3,
        "trace_overhead": 0.01,
        "rows": [
            _row("code", "ar", 100, efficiency=1.0),
            _row("code", "sd", 160, 3.0, 0.95),
            _row("code", "sequoia", 120, 4.0, 0.8),
            _row("code", "hf_assisted", 100, kind="peer"),
            _row("code", "hf_generate", 90, kind="peer"),
            _row("prose", "ar", 100, efficiency=1.0),
            _row("prose", "sd", 125, 3.0, 0.92),
            _row("prose", "sequoia", 130, 2.5, 0.91),
            _row("prose", "hf_assisted", 100, kind="peer"),
            _row("prose", "hf_generate", 110, kind="peer"),
        ],
    }

    def by_name():
        return {g["goal"].split(" (")[0]: g for g in goals(report)}

    over_ar = by_name()["sd tokens/s over ar"]
    assert over_ar["measured"] == {"code": 1.6, "prose": 1.25} and over_ar["met"] is True  # 1.25 is the goal
    sd = by_name()["sd tokens/s over HF assisted generation"]
    assert sd["measured"] == {"code": 1.6, "prose": 1.25} and sd["met"] is False  # prose falls short of 1.3
    assert by_name()["ar tokens/s over HF plain generate"]["met"] is False  # 100 < 110 on prose
    assert by_name()["one-token target call over bare matmuls"]["met"] is True
    assert by_name()["one-token draft call over target call"]["met"] is False  # 0.3 > 0.2
    eff = by_name()["measured / predicted speedup, lowest lossless specviz row"]
    assert eff["measured"] == {"code": 0.8, "prose": 0.91} and eff["met"] is False
    tree = by_name()["best tree tau over sd tau"]
    assert tree["measured"]["code"] == pytest.approx(4 / 3) and tree["met"] is False  # 2.5 < 3 on prose
    assert by_name()["trace_overhead"]["met"] is True
    report["rows"][6]["tokens_per_s"] = 160
    assert by_name()["sd tokens/s over HF assisted generation"]["met"] is True
    report["rows"][3]["greedy_equal"] = False  # a peer whose text differs cannot meet the sd goals
    assert by_name()["sd tokens/s over HF assisted generation"]["met"] is False
    assert by_name()["sd tokens/s over ar"]["met"] is False
    assert "| trace_overhead | <= 0.05 |" in "\n".join(goals_markdown(goals(report)))


def test_predicted_speedup_prices_each_recorded_call_at_the_tokens_it_fed():
    t_target = {1: 1.0, 2: 1.5, 4: 2.0, 8: 4.0}
    t_draft = {1: 0.25, 2: 0.3, 4: 0.5, 8: 1.0}
    trace = RunTrace("x", {}, {}, {}, 0, [7, 7, 7, 7], "")  # a 4-token prompt
    # step 0: the prompt (4) + 3 nodes in one target call, the prompt then 2 single tokens in the draft;
    # the prefill's 3 extra prompt tokens are left out of each model's first call
    trace.steps.append(StepRecord(0, 0, target_fed=[7], draft_fed=[5, 1, 1], target_calls=1, draft_calls=3))
    # step 1: a beam-like step: two target calls of 2 tokens, no draft; the recorded sizes win over n_drafted
    trace.steps.append(
        StepRecord(1, 4, forest=[TreeNode(0, None, 0, 1, "", status="rejected")], target_fed=[2, 2], target_calls=2)
    )
    trace.output_ids = [1] * 6
    cost = (2.0 + 0.3 + 0.25 + 0.25) + (1.5 + 1.5)
    assert costs.step_cost(trace.steps[1], t_target, t_draft) == pytest.approx(3.0)
    assert costs.predicted_speedup([trace], t_target, t_draft) == pytest.approx(6 * 1.0 / cost)


def test_a_step_that_alternates_models_pays_the_switch_once_each_way():
    t_target, t_draft = {1: 1.0, 8: 8.0}, {1: 0.25, 8: 2.0}
    switch = {"draft_after_target": 0.1, "target_after_draft": 0.2}
    sd_step = StepRecord(1, 3, target_fed=[4], draft_fed=[1, 1, 1], target_calls=1, draft_calls=3)
    ar_step = StepRecord(2, 7, target_fed=[1], target_calls=1)
    assert costs.step_cost(sd_step, t_target, t_draft, switch=switch) == pytest.approx(4.0 + 0.75 + 0.3)
    assert costs.step_cost(ar_step, t_target, t_draft, switch=switch) == pytest.approx(1.0)


def test_round_robin_times_each_call_after_its_untimed_predecessor():
    """``costs.round_robin_ms``: every round runs each call once untimed (``before`` where given, else
    itself) and then timed, in the same order; ``switch_ms`` relies on it to time one model's call
    right after the other's."""
    log: list[str] = []
    call = {name: (lambda name=name: log.append(name)) for name in ("t", "d")}
    ms = costs.round_robin_ms(
        {"tt": call["t"], "dt": call["t"], "td": call["d"]},
        torch.device("cpu"),
        2,
        before={"dt": call["d"], "td": call["t"]},
    )
    assert set(ms) == {"tt", "dt", "td"} and all(v >= 0 for v in ms.values())
    assert log == ["t", "t", "d", "t", "t", "d"] * 3  # a warm-up round, then two timed rounds


def test_the_ceiling_is_a_draft_always_right_at_its_best_length():
    flat = {n: 10.0 for n in range(1, 20)}
    assert costs.chain_speedup(flat, {1: 1.0}, 4, 5) == pytest.approx(5 * 10 / (4 + 10))
    top = costs.ceiling(flat, {1: 1.0}, gammas=range(1, 9))
    assert top["gamma"] == 8 and top["speedup"] == pytest.approx(90 / 18)
    assert costs.chain_speedup(flat, {1: 1.0}, 4, 5, {"a": 0.5, "b": 0.5}) == pytest.approx(50 / 15)
    linear = {n: 10.0 * n for n in range(1, 20)}  # verifying n tokens costs n decodes: nothing to gain
    assert costs.ceiling(linear, {1: 1.0})["gamma"] == 1 and costs.ceiling(linear, {1: 1.0})["speedup"] < 1


def test_a_pair_with_a_feature_head_gets_rows_per_drafter_and_the_heads_own_costs():
    """``--drafters model``: each algorithm that takes a drafter runs at its default (the feature head here)
    and with the draft model; the feature rows are priced with the head's own t(n)."""
    from tests.tiny import with_feature_head

    tok = tiny_tokenizer()
    target = tiny_model("llama", vocab=len(tok), seed=0, hidden=32, layers=2, init_range=0.2)
    draft = tiny_model("llama", vocab=len(tok), seed=1, hidden=16, layers=1, init_range=0.2)
    for m in (target, draft):
        m.generation_config.eos_token_id = None
    pair = with_feature_head(ModelPair(target, draft, tok, len(tok), target_name="t", draft_name="d"), keep=200)
    rep = run_all(
        pair,
        {"code": ["def add(a, b):\n"]},
        algos=["ar", "sd"],
        max_new_tokens=6,
        repeat=1,
        sizes=(1, 2, 4),
        with_peers=False,
        drafters=("model",),
    )
    rows = {r["method"]: r for r in rep["rows"]}
    assert set(rows) == {"ar", "sd", "sd@model"}
    assert rows["sd"]["greedy_equal"] and rows["sd@model"]["greedy_equal"]
    assert rep["t_feature_ms"] and 0 < rep["feature_call_over_target"]
    assert rows["sd"]["predicted_speedup"] != rows["sd@model"]["predicted_speedup"]
    assert "feature-head draft call" in to_markdown(rep)
