"""DSBD's rows (Qin et al., AAAI 2025, "Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560):
quality against beam sampling (Table 1, Table 2) and the speed-up over beam sampling (Table 1, Figs.
4-5) at the paper's thresholds t = 0.7 and 0.9, each with both output widths: the paper's W_L
(Algorithm 1) and the official code's W_S (``dsbd``'s ``output_width``).

Quality is the target's mean log-likelihood per generated token of the returned sequence (nats; the
paper scores tasks with exact match, execution accuracy and GPT-4, which specviz cannot run; its Fig.
6 uses perplexity, the same measure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from specviz.papers.measure import Budget, PairRun, Runs, load_average, ratio, run_configs
from specviz.papers.rows import Claim, above, mean_ci, pm

PAPER = "DSBD (arXiv 2409.16560)"
PAPER_SETTING = "Llama-2-13B / Llama-68M and Llama-3-8B / Llama-3.2-1B, MT-Bench, one L40 (Table 1)"
WIDTH = 4


def target_loglik(pair: Any, trace: Any) -> float:
    """Mean target log-probability per generated token of ``trace``'s output given its prompt."""
    ids = list(trace.prompt_ids) + list(trace.output_ids)
    n = len(trace.output_ids)
    if n == 0:
        return 0.0
    with torch.no_grad():
        logits = pair.target(torch.tensor([ids], device=pair.device)).logits[0, -n - 1 : -1].double()
    lp = torch.log_softmax(logits[:, : pair.vocab_size], dim=-1)
    return float(lp.gather(1, torch.tensor(ids[-n:], device=lp.device)[:, None]).mean())


def configs() -> list[tuple[str, str, dict[str, Any]]]:
    out = [("ar", "ar", {}), ("beam", "beam", {"width": WIDTH})]
    for t in (0.7, 0.9):
        for form in ("paper", "code"):
            out.append(
                (
                    f"dsbd t={t} {form}",
                    "dsbd",
                    {"width": WIDTH, "threshold": t, "gamma": 3, "min_width": 1, "output_width": form},
                )
            )
    return out


@dataclass(frozen=True)
class _Measured:
    """One pair's runs of ``configs()`` at T = 1, each run's target log-likelihood per token (``ll``)
    and the setting in words (``ours``)."""

    pr: PairRun
    runs: dict[str, Runs]
    ll: dict[str, list[float]]
    ours: str

    def diff(self, a: str, b: str) -> tuple[float, float]:
        """Mean and 1.96 s.e. of configuration ``a``'s log-likelihood minus ``b``'s, run by run."""
        return mean_ci([x - y for x, y in zip(self.ll[a], self.ll[b])])


# the paper's speed-up at each threshold (the rows' "paper" column)
PAPER_SPEEDUP = {
    0.7: "1.36x (Llama-2-13B), 1.70x (Llama-3-8B) vs beam W = 5 (Table 1); 1.5-1.9x at equal quality (Figs. 4-5)",
    0.9: "1.5-1.9x vs beam sampling at equal quality (Figs. 4-5: t = 0.9 the fastest points)",
}


def _measure(pr: PairRun, budget: Budget) -> _Measured:
    """Decode ``configs()`` on ``pr`` at T = 1 (round-robin) and score every run's output."""
    pb = budget.for_pair(pr.name)
    tokens = budget.tokens_for(pr.name)
    load = load_average()
    runs = run_configs(pr, configs(), 1.0, pb.seeds, tokens)
    ll = {k: [target_loglik(pr.pair, t) for t in r.traces] for k, r in runs.items()}
    ours = (
        f"{pr.label}, T = 1, W_S = {WIDTH} drafts per layer, gamma 3, W_min 1, beam sampling with "
        f"{WIDTH} beams; {len(runs['ar'].traces)} runs of {tokens} tokens (prompts x seeds), round-robin; "
        f"{load} at the start (shared, loaded machine)"
    )
    return _Measured(pr, runs, ll, ours)


def _quality(ms: _Measured) -> Claim:
    """Table 1 / Table 2: DSBD (t = 0.7, both output widths) keeps beam sampling's quality."""
    d, d_ci = ms.diff("dsbd t=0.7 paper", "beam")
    dc, dc_ci = ms.diff("dsbd t=0.7 code", "beam")
    da, _ = ms.diff("ar", "beam")
    verdict = "unresolved" if d_ci is None else ("holds at small scale" if d + d_ci >= 0 else "does not hold")
    return Claim(
        PAPER,
        "DSBD keeps beam sampling's quality",
        "Table 1; Table 2",
        "MT-Bench 3.52 vs beam 3.51 (Llama-2-13B), 4.11 vs 4.10 (Llama-3-8B); SQuAD EM 86 vs multinomial 74",
        PAPER_SETTING,
        ms.ours + "; quality: the target's log-likelihood per token of the returned sequence",
        d,
        d_ci,
        "1.96 s.e. over runs of the per-run difference (nats per token)",
        f"t = 0.7 minus beam: W_L (paper) {d:+.3f}{pm(d_ci, 3)}, W_S (code) {dc:+.3f}{pm(dc_ci, 3)} "
        f"nats/token; multinomial (ar) minus beam {da:+.3f}",
        "a likelihood, not a task score: "
        + (
            "DSBD is not below beam sampling beyond the spread"
            if d + (d_ci or 0) >= 0
            else "DSBD's sequences are less likely under the target than beam sampling's at this width"
        ),
        verdict,
        {"loglik": {k: mean_ci(v)[0] for k, v in ms.ll.items()}, "pair": ms.pr.name},
    )


def _speedup(ms: _Measured, t: float) -> Claim:
    """Table 1 / Figs. 4-5: DSBD's tokens/s over beam sampling's at threshold ``t``, both output widths."""
    runs = ms.runs
    s, s_ci = ratio(runs[f"dsbd t={t} paper"], runs["beam"])
    sc, sc_ci = ratio(runs[f"dsbd t={t} code"], runs["beam"])
    taus = {k: runs[k].tau()[0] for k in (f"dsbd t={t} paper", f"dsbd t={t} code", "beam")}
    return Claim(
        PAPER,
        f"DSBD is faster than beam sampling (t = {t})",
        "Table 1; Figs. 4-5",
        PAPER_SPEEDUP[t],
        PAPER_SETTING,
        ms.ours,
        s,
        s_ci,
        "1.96 s.e. over runs of the per-run tokens/s ratio",
        f"tokens/s over beam's: W_L (paper) {s:.2f}{pm(s_ci)}x, W_S (code) {sc:.2f}{pm(sc_ci)}x; tokens "
        f"per target call {taus[f'dsbd t={t} paper']:.2f} / {taus[f'dsbd t={t} code']:.2f} vs beam "
        f"{taus['beam']:.2f}",
        "a CPU pays for every drafted node and beam row (no idle GPU width to fill), and a small draft "
        "agrees less often, so fewer layers pass per call"
        if s < 1.36
        else "in the paper's range",
        above(s, s_ci, 1.0),
        {"code": sc, "code_ci": sc_ci, "tau": taus, "pair": ms.pr.name, **({"paper": 1.36} if t == 0.7 else {})},
    )


def rows(pairs: list[PairRun], budget: Budget) -> list[Claim]:
    """Per pair the budget runs DSBD on: the quality row, then the speed-up at t = 0.7 and 0.9."""
    out = []
    for pr in pairs:
        if not budget.for_pair(pr.name).runs("dsbd"):
            continue
        ms = _measure(pr, budget)
        out += [_quality(ms), _speedup(ms, 0.7), _speedup(ms, 0.9)]
    return out
