"""MCSD's rows (Yang et al. 2024, "Multi-Candidate Speculative Decoding", arXiv 2401.06706): Table 8's
acceptance rate at k = 1 against k = 4 candidates, and Table 4's ablation of sampling the candidates
with and without replacement.

Acceptance at k candidates is P_k: the probability that one of k draft candidates drawn without
replacement at the first position is accepted (the paper's MCSS, Algorithm 2), read from the same
depth-1 calibration trees as Sequoia's acceptance vector (``papers.sequoia.acceptance``), with its
binomial sampling spread."""

from __future__ import annotations

import math

from specviz.papers.measure import Budget, PairRun, run_configs
from specviz.papers.rows import Claim, above, mean_ci, pm
from specviz.papers.sequoia import acceptance

PAPER = "MCSD (arXiv 2401.06706)"
TABLE8 = {
    0.0: "0.47→0.66 to 0.86→0.95 (+0.09 to +0.37); LLaMA-68M→LLaMA-13B Alpaca 0.76→0.88 (+0.12)",
    1.0: "0.25→0.39 to 0.63→0.81 (+0.14 to +0.24); LLaMA-68M→LLaMA-13B Alpaca 0.51→0.72 (+0.21)",
}
TABLE8_ALPACA = {0.0: 0.12, 1.0: 0.21}  # the figure's diamond: LLaMA-68M→LLaMA-13B on Alpaca, the gain


def acceptance_row(pr: PairRun, budget: Budget, temperature: float) -> Claim:
    budget = budget.for_pair(pr.name)
    est = acceptance(pr, budget, temperature)
    p1, p4 = est.vector[0], sum(est.vector[:4])
    gain = p4 - p1
    n = max(est.steps, 1)
    ci = 1.96 * math.sqrt(max(gain * (1 - gain), 1e-12) / n)
    verdict = "holds at small scale" if gain - ci > 0 else "unresolved"
    return Claim(
        PAPER,
        f"more candidates raise acceptance: k = 4 against k = 1 at T = {temperature:g}",
        "Table 8 (Table 5)",
        TABLE8[temperature],
        "68M-160M drafts for 13B-30B targets, Alpaca and WMT, fp16 GPUs (Table 8)",
        f"{pr.label}, T = {temperature:g}: first-position acceptance of k candidates drawn without replacement, "
        f"{est.steps} calibration steps on {est.prompts} built-in prompts",
        gain,
        ci,
        "1.96 binomial s.e. of the gain",
        f"{p1:.2f}→{p4:.2f} ({gain:+.2f} ± {ci:.2f})",
        f"the gain {gain:+.2f} against the paper's +0.09 to +0.37; acceptance starts "
        + ("lower" if p1 < 0.5 else "in the paper's range")
        + f" ({p1:.2f} at k = 1) on this small pair",
        verdict,
        {
            "p1": p1,
            "p4": p4,
            "vector": list(est.vector),
            "pair": pr.name,
            "temperature": temperature,
            "paper": TABLE8_ALPACA[temperature],
        },
    )


def replacement_row(pr: PairRun, budget: Budget) -> Claim:
    budget = budget.for_pair(pr.name)
    configs = [
        ("without", "mcsd", {"k_config": "4x2x2", "replacement": False, "drafter": "model"}),
        ("with", "mcsd", {"k_config": "4x2x2", "replacement": True, "drafter": "model"}),
    ]
    runs = run_configs(pr, configs, 1.0, budget.seeds, budget.tokens_for(pr.name))
    wo, w = runs["without"].tau(), runs["with"].tau()
    diffs = [
        a.metrics["new_tokens"] / a.metrics["target_calls"] - b.metrics["new_tokens"] / b.metrics["target_calls"]
        for a, b in zip(runs["without"].traces, runs["with"].traces)
    ]
    d, d_ci = mean_ci(diffs)
    verdict = above(d, d_ci, 0.0)
    return Claim(
        PAPER,
        "drawing the candidates without replacement accepts a little more than with replacement",
        "Table 4",
        "tau 2.45 vs 2.39, 2.00 vs 1.95, 2.71 vs 2.55, 2.10 vs 2.01 (+0.05 to +0.16)",
        "LLaMA-68M drafting for 13B/33B targets, Alpaca, T = 1, best k-config per pair (Table 4)",
        f"{pr.label}, T = 1, mcsd k_config 4x2x2, {len(diffs)} runs of {budget.tokens_for(pr.name)} tokens "
        "(prompts x seeds)",
        d,
        d_ci,
        "1.96 s.e. of the per-run difference",
        f"tau {wo[0]:.2f}{pm(wo[1])} without, {w[0]:.2f}{pm(w[1])} with ({d:+.2f}{pm(d_ci)})",
        "the paper's gain is small because collisions are rare at small k; "
        + (
            "here the spread covers it: more runs would be needed to tell"
            if verdict == "unresolved"
            else f"here {d:+.2f}"
        ),
        verdict,
        {"without": wo[0], "with": w[0], "pair": pr.name, "paper": round(2.45 - 2.39, 2)},  # its first printed pair
    )


def rows(pairs: list[PairRun], budget: Budget) -> list[Claim]:
    out = []
    for pr in pairs:
        out += [acceptance_row(pr, budget, 1.0), acceptance_row(pr, budget, 0.0)]
        if budget.for_pair(pr.name).runs("replacement"):
            out.append(replacement_row(pr, budget))
    return out
