"""Rerun the theory paper's simulations (arXiv 2411.00841, App. F) and write Figs. 2-5 as Plotly HTML
(PNG too when kaleido is installed) and a results table (``results.md``, ``results.json``) of the
paper's reported values next to ours. ``python -m specviz theory --figures OUT`` calls ``run``."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go

from specviz.core import theory as th
from specviz.theory import figures
from specviz.theory.chains import MarkovPair, paper_pair
from specviz.theory.simulate import BatchRuns, simulate_batch_sd, simulate_token

SWEEP_M = (1, 2, 3, 4, 5, 7, 10, 15, 20, 30, 50, 70, 100)


@dataclass
class Row:
    """One line of the results table."""

    figure: str
    quantity: str
    paper: str
    theory: float | None
    measured: float | None = None
    halfwidth: float | None = None

    def cells(self) -> list[str]:
        meas = (
            "–"
            if self.measured is None
            else (f"{self.measured:.3f}" + ("" if self.halfwidth is None else f" ± {self.halfwidth:.3f}"))
        )
        theory = (
            "–"
            if self.theory is None
            else (f"{self.theory:.4f}" if self.theory == 0 or abs(self.theory) >= 1e-3 else f"{self.theory:.1e}")
        )
        return [self.figure, self.quantity, self.paper, theory, meas]


def write_figure(fig: go.Figure, out: Path, stem: str, png: bool) -> list[Path]:
    """``stem.html`` (plotly.js written once beside it, so it opens offline) and ``stem.png`` if asked."""
    paths = [out / f"{stem}.html"]
    fig.write_html(paths[0], include_plotlyjs="directory", full_html=True)
    if png:
        paths.append(out / f"{stem}.png")
        fig.write_image(paths[1], width=900, height=int(fig.layout.height or 400), scale=2)
    return paths


def _chain(pair: MarkovPair) -> tuple[Any, Any, Any]:
    return pair.target, pair.draft, pair.prompt


def chain_section(
    pair: MarkovPair, runs: int, mc_seed: int, batch_ms: tuple[int, ...], tag: str
) -> tuple[list[Row], dict[str, go.Figure]]:
    """Thm 1 / Thm 3 on one pair: running means (Fig. 2a/b or 5), cumulative rejections vs position,
    E[N_rej] vs M with the Prop. 1 limit (Fig. 2c or 5 right)."""
    T = pair.horizon
    exact = {m: th.batch_rejections_per_position(*_chain(pair), m).numpy() for m in (1, *batch_ms)}
    limit = th.batch_rejections_per_position(*_chain(pair), None).numpy()
    sims: dict[int, BatchRuns] = {m: simulate_batch_sd(pair, m, runs, seed=mc_seed + m) for m in (1, *batch_ms)}
    sweep = [float(th.batch_rejections_per_position(*_chain(pair), m).sum()) for m in SWEEP_M]
    rows: list[Row] = []
    sd_theory = float(exact[1].sum())
    mean, half = sims[1].mean_and_halfwidth()
    paper_sd = {50: "16.41", 100: "not printed"}.get(T, "–")
    rows.append(Row(tag, f"E[N_rej], SD (Thm 1), T = {T}", paper_sd, sd_theory, mean, half))
    rows.append(Row(tag, f"speed-up T / E[N_rej], T = {T}", {50: "3.05"}.get(T, "–"), T / sd_theory, T / mean))
    calls = sims[1].calls.astype(np.float64)
    rows.append(
        Row(
            tag,
            f"E[oracle calls] = E[N_rej] + 1 − E[R_T], SD, T = {T}",
            "– (calls = rejections)",
            sd_theory + 1 - float(exact[1][-1]),
            float(calls.mean()),
            1.96 * float(calls.std(ddof=1)) / np.sqrt(runs),
        )
    )
    for m in batch_ms:
        mean, half = sims[m].mean_and_halfwidth()
        rows.append(
            Row(
                tag,
                f"E[N_rej], batch SD M = {m} (Thm 3)",
                "matches theory, value not printed",
                float(exact[m].sum()),
                mean,
                half,
            )
        )
    rows.append(Row(tag, "E[N_rej], M = 100 (Thm 3)", "decreasing in M", sweep[-1]))
    rows.append(Row(tag, "limit M → ∞ (Prop. 1)", "positive limit", float(limit.sum())))
    figs = {
        "running_mean": figures.running_mean_figure(
            {m: (sims[m], float(exact[m].sum())) for m in (1, *batch_ms)},
            f"Rejections of SD and batch SD, running mean over runs (T = {T}; {tag})",
        ),
        "cumulative": figures.cumulative_figure(
            {**{m: exact[m] for m in (1, *batch_ms)}, None: limit},
            sims,
            f"Expected rejections up to position n (Thms 1, 3; T = {T})",
        ),
        "versus_m": figures.versus_m_figure(
            SWEEP_M,
            sweep,
            float(limit.sum()),
            {m: sims[m].mean_and_halfwidth() for m in (1, *batch_ms)},
            f"E[N_rej] of batch SD vs number of drafts M (T = {T}; {tag})",
        ),
    }
    return rows, figs


def batch_improvement_section() -> tuple[list[Row], go.Figure]:
    """Fig. 3 right: the paper's closed forms against the residual chain computed directly."""
    ms = list(range(1, 21))
    bern: dict[float, tuple[list[float], list[float]]] = {}
    for u in (0.6, 0.7, 0.8, 0.9):  # target Ber(0.5), draft Ber(u); as [P(0), P(1)]
        p, q = [0.5, 0.5], [1 - u, u]
        bern[u] = (
            [th.batch_improvement_bernoulli(u, 0.5, m) for m in ms],
            [float(th.batch_improvement(p, q, m)) for m in ms],
        )
    unif: dict[float, tuple[list[float], list[float]]] = {}
    for r in (2, 3, 5, 10):
        p, q = [1.0 / 2] * 2 + [0.0] * (2 * r - 2), [1.0 / (2 * r)] * (2 * r)
        unif[float(r)] = (
            [th.batch_improvement_uniform(r, m) for m in ms],
            [float(th.batch_improvement(p, q, m)) for m in ms],
        )
    gap = max(abs(a - b) for g in (bern, unif) for c, d in g.values() for a, b in zip(c, d))
    rows = [
        Row(
            "Fig. 3",
            "BI, draft Ber(0.7), target Ber(0.3), M = 5",
            "|u − v|(1 − u^{M−1}) = 0.30396",
            float(th.batch_improvement([0.7, 0.3], [0.3, 0.7], 5)),
            None,
        ),
        Row("Fig. 3", "max |closed form − residual chain| over the plotted grid", "0 (closed forms)", gap),
    ]
    return rows, figures.batch_improvement_figure(ms, bern, unif)


def pareto_section(pair: MarkovPair, draws: int, mc_seed: int) -> tuple[list[Row], dict[str, go.Figure]]:
    """Fig. 4: one token of the pair (position 1, x_0 = 0): b_eps over a grid of eps, OPT and UNO."""
    p, q = pair.target[0, 0], pair.draft[0, 0]
    total = float(th.tv(p, q))
    eps_grid = np.linspace(0.0, float(max((q - p).max(), 0.0)), 11).tolist()
    opt, uno, loss, uno_bias, opt_mc, uno_mc, opt_mc_e, uno_mc_e = [], [], [], [], [], [], [], []
    gap_max, worst_mc = 0.0, 0.0
    for i, e in enumerate(eps_grid):
        b = th.eps_accept_probs(p, q, e)
        r_opt, b_opt = (float(v) for v in th.tradeoff(b, p, q, "opt"))
        r_uno, b_uno = (float(v) for v in th.tradeoff(b, p, q, "target"))
        opt.append((e, b_opt, r_opt))
        uno.append((e, b_uno, r_uno))
        loss.append(float(th.min_bias(b, p, q)))
        uno_bias.append(b_uno)
        gap_max = max(gap_max, abs(float(th.pareto_gap(r_opt, b_opt, p, q))))
        if i % 2 == 0 and draws > 0:
            for kind, pts, pts_e in (("opt", opt_mc, opt_mc_e), ("target", uno_mc, uno_mc_e)):
                law = th.rejection_law(b, p, q, kind).numpy()
                emp = simulate_token(b.numpy(), q, law, draws, seed=mc_seed + i)
                bias = float(th.tv(emp[:-1], p))
                pts.append((bias, float(emp[-1])))
                pts_e.append((e, bias))
                exact_law = th.output_law(b, q, th.rejection_law(b, p, q, kind)).numpy()
                worst_mc = max(worst_mc, float(np.abs(emp[:-1] - exact_law).max()))
    rows = [
        Row("Fig. 4", "TV(p, q) of the plotted token", "–", total),
        Row("Fig. 4", "max |rejection + Loss* − TV| over eps (Thm 5)", "0 (straight front)", gap_max),
        Row("Fig. 4", "UNO bias − OPT bias at eps = 0", "> 0 (UNO is biased)", uno_bias[0] - loss[0]),
        Row(
            "Fig. 4",
            f"max |sampled − exact law b q + Z R| ({draws} draws per point)",
            "simulation matches Loss*",
            None,
            worst_mc,
        ),
    ]
    title = f"one token of the T = {pair.horizon} pair (position 1, x_0 = 0)"
    return rows, {
        "pareto": figures.pareto_figure(total, opt, uno, opt_mc, uno_mc, f"Rejection vs bias (Fig. 4a, b); {title}"),
        "bias_vs_eps": figures.bias_vs_eps_figure(
            eps_grid, loss, uno_bias, opt_mc_e, uno_mc_e, total, f"Bias vs over-acceptance eps (Fig. 4c); {title}"
        ),
    }


def markdown_table(rows: list[Row]) -> str:
    head = ["figure", "quantity", "paper reports", "ours: exact theory", "ours: Monte Carlo (± 1.96 s.e.)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in r.cells()) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def run(
    out: Path,
    runs: int = 5000,
    seed: int = 10,
    mc_seed: int = 0,
    horizons: tuple[int, ...] = (50, 100),
    draws: int = 200_000,
    png: bool | None = None,
) -> list[Path]:
    """Everything: returns the files written under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    png = importlib.util.find_spec("kaleido") is not None if png is None else png
    written: list[Path] = []
    rows: list[Row] = []
    for i, T in enumerate(horizons):
        tag = "Fig. 2" if i == 0 else "Fig. 5"
        ms = (4, 5) if i == 0 else (2,)
        r, figs = chain_section(paper_pair(T, seed=seed), runs, mc_seed, ms, tag)
        rows += r
        for name, fig in figs.items():
            written += write_figure(fig, out, f"{tag.replace('. ', '')}_T{T}_{name}".lower(), png)
    r, fig = batch_improvement_section()
    rows += r
    written += write_figure(fig, out, "fig3_batch_improvement", png)
    r, figs = pareto_section(paper_pair(horizons[0], seed=seed), draws, mc_seed)
    rows += r
    for name, fig in figs.items():
        written += write_figure(fig, out, f"fig4_{name}", png)
    (out / "results.md").write_text(markdown_table(rows), encoding="utf-8")
    (out / "results.json").write_text(
        json.dumps(
            {
                "settings": {
                    "runs": runs,
                    "seed": seed,
                    "mc_seed": mc_seed,
                    "horizons": list(horizons),
                    "draws": draws,
                    "vocab": 7,
                },
                "rows": [r.__dict__ for r in rows],
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return written + [out / "results.md", out / "results.json"]
