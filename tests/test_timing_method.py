"""Issue 34, points 3 and 4: one way to time a method (``bench.timing``: warm-up, interleaved rounds,
median and spread, one scoped thread setting, the conditions stated) shared by Measure, ``compare``
and ``bench``; and the verdict in words (``bench.verdict``). Time is driven by injected clocks: no
assertion here depends on the machine's speed."""

from __future__ import annotations

import re

import pytest
import torch

import specviz
from specviz.bench import costs, timing
from specviz.bench.verdict import VerdictRow, verdict
from specviz.cli import main as cli_main
from specviz.models.loading import ModelPair
from specviz.trace import RunTrace, StepRecord
from specviz.ui import measure as m
from tests.tiny import tiny_model, tiny_tokenizer


class Clock:
    """A perf_counter that moves only when told (``advance``)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def loads(*values):
    it = iter(values)
    return lambda: next(it)


# ---- the routine ------------------------------------------------------------------------------------


def test_rounds_warm_up_then_interleave_and_keep_every_timed_round():
    clock, log = Clock(), []
    cost = {"a": iter([9.0, 1.0, 3.0, 2.0]), "b": iter([9.0, 0.5, 0.7, 0.6])}  # a warm-up, then 3 rounds

    def call(name):
        def run():
            log.append(name)
            clock.advance(next(cost[name]))
            return f"{name}{len(log)}"

        return run

    timings, cond, skipped = timing.time_calls(
        {"a": call("a"), "b": call("b")}, 3, clock=clock, loadavg=loads(1.5, 2.5), device="cpu", dtype="torch.float32"
    )
    assert log == ["a", "b"] * 4  # every round runs each method once, in the order given
    assert timings["a"].seconds == [1.0, 3.0, 2.0]  # the warm-up's 9 s left out
    assert timings["b"].seconds == pytest.approx([0.5, 0.7, 0.6])
    assert (timings["a"].median, timings["a"].fastest, timings["a"].slowest) == (2.0, 1.0, 3.0)
    assert timings["a"].result == "a7" and timings["b"].result == "b8"  # the last timed round's
    assert (cond.load_before, cond.load_after, cond.device, cond.dtype) == (1.5, 2.5, "cpu", "float32")
    assert (
        cond.sentence().startswith(f"{cond.threads} torch thread")
        and "load average 1.50 before, 2.50 after" in cond.sentence()
    )
    assert not skipped


def test_a_pausable_call_is_timed_without_its_pauses():
    """A call that returns a generator hands control back at each yield; the routine yields a tick
    and the time until it is resumed is not the call's."""
    clock = Clock()

    def decode():
        clock.advance(1.0)
        yield
        clock.advance(2.0)
        return "trace"

    events = timing.rounds({"x": decode}, 1, warmup=0, clock=clock, loadavg=lambda: None)
    kinds = []
    for event in events:
        kinds.append(event.kind)
        if event.kind == "tick":
            clock.advance(100.0)  # the caller's pause: the page drawing, say
        if event.kind == "done":
            assert (event.seconds, event.result, event.timed) == (3.0, "trace", True)
    assert kinds == ["start", "tick", "done", "end"]


def test_the_routine_runs_the_timed_function_with_the_asked_threads_and_restores_them():
    before = torch.get_num_threads()
    asked = before + 1  # never what is set now
    seen = []
    timings, cond, _ = timing.time_calls({"f": lambda: seen.append(torch.get_num_threads())}, 2, threads=asked)
    assert seen == [asked] * 3 and cond.threads == asked  # the warm-up and both timed rounds
    assert torch.get_num_threads() == before


def test_threads_are_restored_when_a_measurement_is_abandoned_or_fails():
    before = torch.get_num_threads()
    events = timing.rounds({"f": lambda: None}, 5, threads=before + 1)
    next(events)  # inside the measurement
    assert torch.get_num_threads() == before + 1
    events.close()  # what Gradio does when the page has gone
    assert torch.get_num_threads() == before

    def boom():
        raise RuntimeError("out of memory")

    with pytest.raises(RuntimeError):
        timing.time_calls({"f": boom}, 1, threads=before + 1)
    assert torch.get_num_threads() == before


def test_a_method_that_fails_its_warm_up_is_skipped_and_the_others_timed():
    from specviz.errors import SpecvizError

    def needs_head():
        raise SpecvizError("eesd needs an early-exit head")

    timings, _, skipped = timing.time_calls({"ok": lambda: 1, "eesd": needs_head}, 2, skip=(SpecvizError,))
    assert list(timings) == ["ok"] and len(timings["ok"].seconds) == 2
    assert "early-exit head" in str(skipped["eesd"])


def test_a_speedup_is_the_ratio_of_median_rates_with_its_range_round_by_round():
    base = timing.Timing([0.3, 0.1, 0.2])
    fast = timing.Timing([0.15, 0.05, 0.1])
    up = timing.speedup(fast, base, 8, 8)
    assert up.median == pytest.approx(2.0) and up.lo == pytest.approx(2.0) and up.hi == pytest.approx(2.0)
    drift = timing.speedup(timing.Timing([0.1, 0.1, 0.1]), base, 8, 8)  # ar drifted, the method did not
    assert (drift.median, drift.lo, drift.hi) == pytest.approx((2.0, 1.0, 3.0))
    assert timing.speedup(fast, timing.Timing([]), 8, 8) is None
    assert timing.rate(base, 8) == timing.Spread(40.0, 8 / 0.3, 80.0)


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5", "", str(timing.cpu_count() + 1), "True"])
def test_a_bad_thread_count_is_refused_in_a_sentence(bad):
    with pytest.raises(
        specviz.SpecvizError,
        match=r"--threads must be a whole number of torch threads from 1 to "
        rf"{timing.cpu_count()} \(this machine's CPUs\), got '",
    ):
        timing.check_threads(bad)
    assert timing.check_threads("1") == 1 and timing.check_threads(timing.cpu_count()) == timing.cpu_count()


@pytest.mark.parametrize("command", ["run", "compare"])
def test_run_and_compare_refuse_bad_threads_in_one_line_before_loading(monkeypatch, capsys, command):
    monkeypatch.setattr("specviz.models.loading.load_pair", lambda *a, **k: pytest.fail("a pair was loaded"))
    with pytest.raises(SystemExit) as exc:
        cli_main([command, "--threads", "0", "--prompt", "a", "--preset", "bundled-stdlib-pair"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert "--threads" in err and "a whole number of torch threads from 1 to" in err and "got '0'" in err


def test_the_app_shares_the_cores_between_its_runs_by_the_same_rule():
    assert timing.default_threads(1, cpus=8) == 8 and timing.default_threads(2, cpus=8) == 4
    assert timing.default_threads(4, cpus=2) == 1  # at least one


# ---- the verdict ------------------------------------------------------------------------------------


def row(
    label,
    tps,
    up=None,
    lo=None,
    hi=None,
    pred=None,
    gpu=None,
    cost=None,
    algorithm=None,
    tau=None,
    target_ms=None,
    draft_ms=None,
):
    return VerdictRow(label, algorithm or label.split()[0], tps, up, lo, hi, pred, gpu, tau, cost, target_ms, draft_ms)


def test_the_verdict_names_the_fastest_its_gain_and_both_predictions():
    rows = [
        row("ar", 10.0, 1.0, pred=1.0, gpu=1.0),
        row("sd", 15.0, 1.5, 1.4, 1.6, pred=1.6, gpu=2.5, cost=0.06, tau=2.1, target_ms=63.6, draft_ms=4.3),
        row("dyntree", 12.0, 1.2, 1.1, 1.3, pred=1.1, gpu=3.0, cost=0.06, tau=3.0),
    ]
    said = verdict(rows)
    assert said.startswith("Fastest: sd, 1.50x ar (1.40–1.60 over the timed rounds).")
    assert (
        "The cost model predicted 1.60x for sd on this machine (its run priced call by call at t(n) timed here: "
        "tau 2.10, a one-token target call 63.6 ms, a draft call 4.3 ms)"
    ) in said
    assert "measured over predicted 0.94" in said
    assert "On a GPU the same cost model predicts 2.50x for sd, and most for dyntree (3.00x)" in said
    assert "That is a prediction, not a measurement" in said and "a draft call costs 0.06 of a target call" in said
    assert "Slower" not in said


def test_the_verdict_says_which_columns_were_slower_than_ar():
    rows = [
        row("ar", 10.0, 1.0),
        row("sd", 5.9, 0.59, 0.55, 0.63, pred=0.9, gpu=2.0, cost=0.3),
        row("dyntree", 4.8, 0.48, 0.45, 0.5),
    ]
    said = verdict(rows)
    assert said.startswith("ar (plain decoding) was fastest: no other column beat it here.")
    assert "Slower than ar here: dyntree 0.48x ar (0.45–0.50 over the timed rounds); sd 0.59x ar (0.55–0.63" in said
    assert "predicted 0.90x for sd" in said  # the predictions are of the fastest column other than ar


def test_the_verdict_calls_equal_speeds_a_tie():
    said = verdict(
        [row("ar", 10.0, 1.0), row("sd (gamma=2)", 14.0, 1.4, 1.3, 1.5), row("sd (gamma=3)", 14.0, 1.4, 1.35, 1.45)]
    )
    assert said.startswith("Fastest: sd (gamma=2) and sd (gamma=3), tied at 14.0 tokens/s.")
    tie_with_ar = verdict([row("ar", 10.0, 1.0), row("pld", 10.0, 1.0, 0.9, 1.1)])
    assert "tied at 10.0 tokens/s (as fast as plain decoding)" in tie_with_ar and "Slower" not in tie_with_ar
    shown_equal = verdict([row("ar", 10.0, 1.0), row("sd", 9.98, 0.998, 0.97, 1.02)])  # 1.00x as shown
    assert "Slower" not in shown_equal
    slower = verdict([row("ar", 10.0, 1.0), row("sd", 9.94, 0.994, 0.97, 1.02)])  # 0.99x as shown
    assert "Slower than ar here: sd 0.99x ar" in slower


def test_without_an_ar_column_the_verdict_says_there_is_no_speedup():
    said = verdict([row("sd", 12.0, pred=1.4, gpu=2.0, cost=0.3), row("pld", 14.0, pred=1.2, gpu=1.8)])
    assert said.startswith(
        "Fastest: pld at 14.0 tokens/s. There is no ar column, so no speed-up over plain "
        "decoding was measured: add ar to get one."
    )
    assert "measured over predicted" not in said and "predicted 1.20x for pld" in said
    assert "its drafting calls no model" in said


def test_the_verdict_warns_when_the_order_or_the_gain_may_not_hold():
    said = verdict([row("ar", 10.0, 1.0), row("sd", 12.0, 1.2, 0.95, 1.4), row("pld", 11.5, 1.15, 1.1, 1.3)])
    assert "Its range reaches 1x, so in some rounds it was no faster than ar." in said
    assert "pld's range (1.10–1.30x, median 1.15x) overlaps it, so their order may not hold." in said
    assert verdict([]) == "" and "Only ar was measured" in verdict([row("ar", 10.0, 1.0)])


# ---- the cost model on a GPU ------------------------------------------------------------------------


def _trace(steps: list[tuple[list[int], list[int], int]]) -> RunTrace:
    t = RunTrace("x", {}, {}, {}, 0, [1], "")
    for i, (target_fed, draft_fed, committed) in enumerate(steps):
        t.steps.append(
            StepRecord(
                i,
                len(t.output_ids) + 1,
                target_fed=target_fed,
                draft_fed=draft_fed,
                target_calls=len(target_fed),
                draft_calls=len(draft_fed),
            )
        )
        t.output_ids += [1] * committed
    return t


def test_on_a_gpu_every_call_costs_a_one_token_call_and_a_draft_call_its_share():
    sd = _trace([([5], [1, 1, 1, 1], 3), ([5], [1, 1, 1, 1], 5)])  # 8 tokens in 2 verifies and 8 draft calls
    assert costs.gpu_speedup([sd], 0.25) == pytest.approx(8 / (2 * (1 + 4 * 0.25)))
    assert costs.gpu_speedup([sd], None) == pytest.approx(4.0)  # prompt lookup: no drafter forwards
    assert costs.call_sizes(5) == (1, 2, 4, 5) and costs.call_sizes(1) == (1,) and costs.call_sizes(500)[-1] == 128


def test_a_draft_calls_assumed_gpu_cost_is_its_larger_share_of_layers_or_weights():
    tok = tiny_tokenizer()
    target = tiny_model("llama", vocab=len(tok), hidden=32, layers=4)
    draft = tiny_model("llama", vocab=len(tok), hidden=16, layers=1, seed=1)
    pair = ModelPair(target, draft, tok, len(tok))
    weights = sum(p.numel() for p in draft.parameters()) / sum(p.numel() for p in target.parameters())
    assert costs.gpu_draft_cost(pair, "draft") == pytest.approx(max(1 / 4, weights))
    assert costs.gpu_draft_cost(pair, None) is None and costs.gpu_draft_cost(pair, "feature") is None


# ---- Measure and compare use the routine, state the conditions and give the verdict -----------------


@pytest.fixture(scope="module")
def tiny_pair():
    tok = tiny_tokenizer()
    return ModelPair(tiny_model("llama", vocab=len(tok)), tiny_model("llama", vocab=len(tok), seed=1), tok, len(tok))


def test_measure_interleaves_the_columns_and_reports_medians_paired_speedups_and_conditions(tiny_pair, monkeypatch):
    clock = Clock()
    traces = {a: specviz.decode(tiny_pair, a, "def f(x):\n", max_new_tokens=8, temperature=0.0) for a in ("ar", "sd")}
    seconds = {"ar": iter([9.0, 0.3, 0.1, 0.2]), "sd": iter([9.0, 0.15, 0.05, 0.1])}  # a warm-up round, then 3
    order = []

    def decode(pair, algo, *args):
        order.append(algo)
        clock.advance(next(seconds[algo]))
        return traces[algo]
        yield  # a pausable call that never pauses

    monkeypatch.setattr(m, "_decode", decode)
    *_, (note, rows) = m.measure(
        tiny_pair,
        "def f(x):\n",
        [("ar", {}), ("sd", {})],
        repeats=3,
        timer=clock,
        threads=1,
        loadavg=loads(0.5, 0.75),
        predict=False,
        max_new_tokens=8,
    )
    assert order == ["ar", "sd"] * 4
    ar, sd = rows
    assert (ar.wall_s, ar.wall_s_min, ar.wall_s_max) == pytest.approx((0.2, 0.1, 0.3))
    assert (sd.wall_s, sd.wall_s_min, sd.wall_s_max) == pytest.approx((0.1, 0.05, 0.15))
    assert sd.speedup == pytest.approx(2.0) and (sd.speedup_min, sd.speedup_max) == pytest.approx((2.0, 2.0))
    assert ar.speedup == 1.0 and ar.speedup_min is None
    assert sd.conditions.threads == 1 and sd.conditions.load_before == 0.5
    html = m.measurements_html(rows, note)
    assert "Timed on 1 torch thread, cpu, float32; load average 0.50 before, 0.75 after" in html
    assert "Fastest: sd, 2.00x ar." in html and "interleaved" in note


def test_measure_stopped_midway_keeps_only_complete_rounds(tiny_pair, monkeypatch):
    clock, calls = Clock(), []
    trace = specviz.decode(tiny_pair, "ar", "x", max_new_tokens=2, temperature=0.0)

    def decode(pair, algo, *args):
        calls.append(algo)
        clock.advance(1.0)
        return trace
        yield

    monkeypatch.setattr(m, "_decode", decode)
    stop = lambda: len(calls) >= 5  # noqa: E731 - inside the second timed round
    *_, (note, rows) = m.measure(
        tiny_pair,
        "x",
        [("ar", {}), ("pld", {})],
        repeats=3,
        timer=clock,
        should_stop=stop,
        predict=False,
        max_new_tokens=2,
    )
    assert note == "stopped after 1 of 3 timed rounds"
    assert [r.repeats for r in rows] == [1, 1] and rows[0].conditions is None  # no verdict on a partial table
    assert "Verdict" not in m.measurements_html(rows, note)


def test_measure_gives_the_cost_models_predictions_for_the_verdict(tiny_pair):
    *_, (note, rows) = m.measure(
        tiny_pair, "def f(x):\n", [("ar", {}), ("sd", {})], repeats=1, threads=1, max_new_tokens=6, temperature=0.0
    )
    ar, sd = rows
    assert ar.predicted == pytest.approx(1.0) and sd.predicted > 0 and sd.predicted_gpu > 0
    assert 0 < sd.gpu_draft_cost <= 1
    html = m.measurements_html(rows, note)
    assert "Verdict." in html and "On a GPU the same cost model predicts" in html and "a prediction" in html


def test_compare_states_its_threads_and_conditions_and_gives_the_verdict(tiny_pair, monkeypatch, capsys):
    monkeypatch.setattr("specviz.cli.load_pair_from_args", lambda args: tiny_pair)
    before = torch.get_num_threads()
    seen = []
    from specviz.decoding import decode

    monkeypatch.setattr(
        "specviz.decoding.decode", lambda *a, **k: (seen.append(torch.get_num_threads()), decode(*a, **k))[1]
    )
    asked = 2 if timing.cpu_count() >= 2 and before != 2 else 1
    assert (
        cli_main(
            [
                "compare",
                "--algos",
                "ar",
                "sd",
                "--repeats",
                "2",
                "--prompt",
                "def f():",
                "--max-new-tokens",
                "4",
                "--threads",
                str(asked),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert seen == [asked] * 6 and torch.get_num_threads() == before
    assert re.search(rf"timed on {asked} torch threads?, cpu, float32; load average \d+\.\d\d before", out), out
    verdict_line = next(line for line in out.splitlines() if line.startswith("verdict: "))
    assert "x ar" in verdict_line and "On a GPU the same cost model predicts" in verdict_line
