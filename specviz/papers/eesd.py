"""EESD's rows (Liu et al. 2024, "Speculative Decoding via Early-exiting for Faster LLM Inference with
Thompson Sampling Control Mechanism", arXiv 2406.03853): Table 4's ablations (Thompson sampling
against a fixed K = 10; the trained exit layer against none), Table 5 (Beta-TS bolted onto vanilla
SD), the paper's draft measures v_d, r_d and HM (Sec. 5.1), and its speed model (Eqs. 13-14) against
the speed measured in the same runs. Greedy decoding as in the paper (Sec. 5.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from specviz.papers.measure import Budget, PairRun, Runs, load_average, ratio, run_configs
from specviz.papers.rows import Claim, above, covers, mean_ci, pm

PAPER = "EESD (arXiv 2406.03853)"
# the figures' diamonds: the paper's LLaMA-2-13B Gsm8k numbers on each row's scale
GSM8K = {
    "ts_over_fixed": round(1.91 / 1.66, 2),
    "trained_over_untrained": round(1.91 / 1.18, 2),
    "sd_ts": round(0.99 / 0.96, 2),
}
PAPER_SETTING = "LLaMA-2-13B (exit after layer 3 of 40), Gsm8k and XSum 1-shot, greedy, 512 new tokens, A100 (Table 4)"
CONFIGS: list[tuple[str, str, dict[str, Any]]] = [
    ("ar", "ar", {}),
    ("eesd beta_ts", "eesd", {"controller": "beta_ts"}),
    ("eesd fixed K=10", "eesd", {"controller": "fixed", "fixed_length": 10}),
    ("sd K=10", "sd", {"gamma": 10, "drafter": "model"}),
    ("sd beta_ts", "sd", {"controller": "beta_ts", "drafter": "model"}),
]


def draft_measures(trace: Any) -> tuple[float, float, float]:
    """(v_d, r_d, HM) of one run (Sec. 5.1): v_d = accepted / all drafted tokens, r_d = accepted /
    output tokens, HM = their harmonic mean x 100."""
    right = sum(s.n_accepted for s in trace.steps)
    drafted = sum(s.n_drafted for s in trace.steps)
    v = right / drafted if drafted else 0.0
    r = right / max(trace.metrics["new_tokens"], 1)
    return v, r, (200 * v * r / (v + r) if v + r else 0.0)


def speed_model(trace: Any, ar_trace: Any, ar_wall: float) -> float:
    """Eq. 14's speed-up v_d / ((alpha - v_d) r_d + v_d), alpha = T_d / T_t: T_d the run's draft time per
    drafted token, T_t the plain run's time per token on the same prompt."""
    v, r, _ = draft_measures(trace)
    drafted = sum(s.n_drafted for s in trace.steps)
    t_d = sum(s.timings.get("draft_ms", 0.0) for s in trace.steps) / max(drafted, 1)
    t_t = 1000 * ar_wall / max(ar_trace.metrics["new_tokens"], 1)
    alpha = t_d / t_t
    return v / ((alpha - v) * r + v) if v > 0 else 1.0


def _hm(runs: Runs) -> tuple[float, float]:
    return mean_ci([draft_measures(t)[2] for t in runs.traces])


def _untrained(pr: PairRun, budget: Budget, tokens: int) -> dict[str, Runs]:
    """eesd with a fresh head at the same exit layer (the target's own last layer, norm and LM head over
    H^N, untrained), swapped onto the pair for these runs only."""
    from specviz.models.loading import attach_early_exit

    saved = pr.pair.heads
    try:
        attach_early_exit(pr.pair, int(saved.early_exit.exit_layer))
        return run_configs(
            pr, [("ar", "ar", {}), ("eesd untrained", "eesd", {"controller": "beta_ts"})], 0.0, budget.seeds, tokens
        )
    finally:
        pr.pair.heads = saved


@dataclass(frozen=True)
class _Measured:
    """One pair's runs: ``CONFIGS`` (``runs``), the untrained-head ablation (``bare``), the setting in
    words (``ours``) and the exit layer."""

    pr: PairRun
    runs: dict[str, Runs]
    bare: dict[str, Runs]
    ours: str
    n_exit: int


SPREAD = "1.96 s.e. over prompts of the per-prompt ratio"


def _measure(pr: PairRun, budget: Budget) -> _Measured:
    """Decode ``CONFIGS`` and the untrained-head ablation on ``pr`` (greedy, round-robin)."""
    pb = budget.for_pair(pr.name)
    tokens = budget.tokens_for(pr.name)
    load = load_average()
    runs = run_configs(pr, CONFIGS, 0.0, pb.seeds, tokens)
    bare = _untrained(pr, pb, tokens)
    n_exit = pr.pair.early_exit.exit_layer
    ours = (
        f"{pr.label}, exit after layer {n_exit}, greedy, {len(pr.prompts)} prompts x {tokens} tokens, "
        f"configurations round-robin; {load} at the start (shared, loaded machine)"
    )
    return _Measured(pr, runs, bare, ours, n_exit)


def _ts_vs_fixed(ms: _Measured) -> Claim:
    """Table 4 (w/o TS): Beta-TS against a fixed draft length K = 10."""
    runs = ms.runs
    ts, fixed = runs["eesd beta_ts"], runs["eesd fixed K=10"]
    r, r_ci = ratio(ts, fixed)
    (hm_ts, _), (hm_fx, _) = _hm(ts), _hm(fixed)
    return Claim(
        PAPER,
        "Thompson sampling (Beta-TS) beats a fixed draft length K = 10",
        "Table 4 (w/o TS)",
        "1.91x vs 1.66x (Gsm8k), 1.84x vs 1.58x (XSum); HM 57.22 vs 44.76",
        PAPER_SETTING,
        ms.ours,
        r,
        r_ci,
        SPREAD,
        f"Beta-TS {r:.2f}{pm(r_ci)}x the tokens/s of fixed K = 10; HM {hm_ts:.1f} vs {hm_fx:.1f}; vs ar "
        f"{ratio(ts, runs['ar'])[0]:.2f}x and {ratio(fixed, runs['ar'])[0]:.2f}x",
        f"paper 1.15x; here {r:.2f}x"
        + (": a head this weak makes a fixed K = 10 draft far past what is accepted" if hm_ts < 30 else ""),
        above(r, r_ci, 1.0),
        {"hm": [hm_ts, hm_fx], "pair": ms.pr.name, "paper": GSM8K["ts_over_fixed"]},
    )


def _trained_exit(ms: _Measured) -> Claim:
    """Table 4 (w/o early-exiting layer): the speed-up vs ar with the trained head over that with an
    untrained one at the same layer."""
    ts, untr = ms.runs["eesd beta_ts"], ms.bare["eesd untrained"]
    r2, r2_ci = mean_ci(
        [
            a / b
            for a, b in zip(
                [x / y for x, y in zip(ts.speeds(), ms.runs["ar"].speeds())],
                [x / y for x, y in zip(untr.speeds(), ms.bare["ar"].speeds())],
            )
        ]
    )
    hm_ts, hm_un = _hm(ts)[0], _hm(untr)[0]
    return Claim(
        PAPER,
        "the trained early-exit layer matters: without it drafting collapses",
        "Table 4 (w/o early-exiting layer)",
        "1.91x vs 1.18x (Gsm8k), 1.84x vs 1.15x (XSum); HM 57.22 vs 23.69",
        PAPER_SETTING,
        ms.ours + "; without: an untrained head at the same layer (a copy of the target's last layer, norm and LM "
        "head over H^N), the paper's ablation trains a head with no exit layer",
        r2,
        r2_ci,
        "1.96 s.e. over prompts of the ratio of speed-ups vs ar",
        f"speed-up vs ar with the trained head {r2:.2f}{pm(r2_ci)}x that with the untrained one; "
        f"HM {hm_ts:.1f} vs {hm_un:.1f}",
        "the paper's ablation head is trained, ours is not, so ours bounds the effect from above",
        above(r2, r2_ci, 1.0),
        {"hm": [hm_ts, hm_un], "pair": ms.pr.name, "paper": GSM8K["trained_over_untrained"]},
    )


def _sd_beta_ts(ms: _Measured) -> Claim:
    """Table 5: Beta-TS on vanilla SD (the draft model) against SD with gamma 10."""
    runs = ms.runs
    r3, r3_ci = ratio(runs["sd beta_ts"], runs["sd K=10"])
    return Claim(
        PAPER,
        "Beta-TS bolted onto vanilla SD speeds it up",
        "Table 5",
        "+0.03 to +0.21 speed-up (LLaMA-2-13B Gsm8k 0.96x → 0.99x; 70B XSum 1.46x → 1.67x)",
        "LLaMA-2-7B / TinyLLaMA drafts for LLaMA-2-13B/70B, Gsm8k and XSum, greedy (Table 5)",
        ms.ours.replace(f"exit after layer {ms.n_exit}", "the draft model")
        + "; sd with gamma 10 against sd with Beta-TS",
        r3,
        r3_ci,
        SPREAD,
        f"sd + Beta-TS {r3:.2f}{pm(r3_ci)}x the tokens/s of sd K = 10; tau "
        f"{runs['sd beta_ts'].tau()[0]:.2f} vs {runs['sd K=10'].tau()[0]:.2f}",
        "paper 1.03x-1.14x; here " + f"{r3:.2f}x",
        above(r3, r3_ci, 1.0),
        {"pair": ms.pr.name, "paper": GSM8K["sd_ts"]},
    )


def _draft_measures_row(ms: _Measured) -> Claim:
    """Table 1 (Tables 10-11): v_d, r_d and HM of eesd with Beta-TS (Sec. 5.1)."""
    measures = [draft_measures(t) for t in ms.runs["eesd beta_ts"].traces]
    (v, v_ci), (rd, rd_ci), (hm, hm_ci) = (mean_ci([m[i] for m in measures]) for i in range(3))
    return Claim(
        PAPER,
        "EESD's draft measures: v_d (accepted / drafted), r_d (drafted share of the output), their harmonic mean HM",
        "Table 1 (Tables 10-11)",
        "LLaMA-2-13B Gsm8k Beta-TS: v_d 0.50, r_d 0.67, HM 57.22",
        PAPER_SETTING,
        ms.ours + "; eesd Beta-TS",
        hm,
        hm_ci,
        "1.96 s.e. over prompts",
        f"v_d {v:.2f}{pm(v_ci)}, r_d {rd:.2f}{pm(rd_ci)}, HM {hm:.1f}{pm(hm_ci, 1)}",
        f"a {ms.n_exit}-layer exit of a small target agrees with the target far less often than the paper's "
        "exit after layer 3 of a 13B model; the measures depend on the pair, not on the method alone",
        "not comparable",
        {"v_d": v, "r_d": rd, "pair": ms.pr.name, "paper": 57.22},
    )


def _speed_model_row(ms: _Measured) -> Claim:
    """Eqs. 13-14: the speed model's predicted speed-up (``speed_model``) against the measured one."""
    ts, ar = ms.runs["eesd beta_ts"], ms.runs["ar"]
    p, p_ci = mean_ci([speed_model(t, a, w) for t, a, w in zip(ts.traces, ar.traces, ar.walls)])
    m, m_ci = ratio(ts, ar)
    agree = p_ci is not None and m_ci is not None and covers(p, p_ci + m_ci, m)
    return Claim(
        PAPER,
        "Eqs. 13-14: the speed-up is v_d / ((alpha − v_d) r_d + v_d), alpha = T_d / T_t",
        "Eqs. 13-14",
        "LLaMA-2-13B Gsm8k: v_d 0.50, r_d 0.67, 1.91x (so alpha ≈ 0.14)",
        PAPER_SETTING,
        ms.ours + "; alpha from the run's draft time per drafted token over ar's time per token on the same prompt",
        p,
        p_ci,
        "1.96 s.e. over prompts",
        f"predicted {p:.2f}{pm(p_ci)}x, measured {m:.2f}{pm(m_ci)}x",
        "the model prices a verify call on K + 1 tokens like one AR token and leaves out the controller's and "
        "the engine's bookkeeping; " + ("within the spreads here" if agree else f"here it is off by {m - p:+.2f}x"),
        ("holds at small scale" if agree else "does not hold") if p_ci is not None else "unresolved",
        {"measured": m, "measured_ci": m_ci, "pair": ms.pr.name, "paper": 1.91},
    )


def rows(pairs: list[PairRun], budget: Budget) -> list[Claim]:
    """Per pair with an early-exit head: Table 4's two ablations, Table 5, the draft measures and the
    speed model, in that order."""
    out = []
    for pr in pairs:
        if pr.pair.early_exit is None:
            continue
        ms = _measure(pr, budget)
        out += [_ts_vs_fixed(ms), _trained_exit(ms), _sd_beta_ts(ms), _draft_measures_row(ms), _speed_model_row(ms)]
    return out
