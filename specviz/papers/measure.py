"""What every paper module measures with: the budget of a report (``QUICK`` for CI, ``FULL`` for
docs/papers.md), the pairs it runs on, and configurations decoded round-robin over prompts x seeds.

Round-robin (every configuration once per prompt and seed, in turn) makes a load that drifts during
the report hit every configuration alike; speed is then compared per run, as a ratio against a
baseline decoded on the same prompt and seed moments before (``ratio``)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import Any

from specviz.papers.rows import mean_ci


@dataclass(frozen=True)
class Budget:
    """How much a report runs. ``pairs``: preset names; ``prompts``/``seeds``: per pair; ``tokens``:
    new tokens per run; ``calibration``: steps of the acceptance-vector estimate (Sequoia, MCSD);
    ``theory_runs``: Monte Carlo runs per algorithm in the theory paper's rows; ``bootstrap``: DP
    reruns over resampled acceptance counts; ``timings``: independent t(n) measurements."""

    name: str
    pairs: tuple[str, ...]
    prompts: int
    seeds: int
    tokens: int
    calibration: int
    theory_runs: int
    chain_seeds: int
    bootstrap: int
    timings: int
    sizes: tuple[int, ...]  # Sequoia tree sizes decoded (root included)
    max_size: int  # largest size of the DP and of t(n)
    skip: tuple[str, ...] = ()  # rows left out (``runs``), for time: "scaling", "replacement", "dsbd"
    per_pair: dict[str, dict[str, Any]] = field(default_factory=dict)  # overrides for one pair (a larger one)

    def runs(self, row: str) -> bool:
        """Whether this budget runs ``row`` (one of the names ``skip`` may hold)."""
        return row not in self.skip

    def for_pair(self, pair: str) -> "Budget":
        """This budget with ``pair``'s overrides."""
        return replace(self, **self.per_pair.get(pair, {}), per_pair={})

    def tokens_for(self, pair: str, eesd: bool = False) -> int:
        return self.for_pair(pair).tokens


QUICK = Budget(
    "quick",
    pairs=("bundled-stdlib-pair",),
    prompts=2,
    seeds=1,
    tokens=8,
    calibration=16,
    theory_runs=200,
    chain_seeds=5,
    bootstrap=3,
    timings=2,
    sizes=(3, 5),
    max_size=16,
)
FULL = Budget(
    "full",
    pairs=("bundled-stdlib-pair", "smollm2-135m-offline"),
    prompts=3,
    seeds=2,
    tokens=32,
    calibration=128,
    theory_runs=5000,
    chain_seeds=20,
    bootstrap=20,
    timings=3,
    sizes=(5, 17, 65),
    max_size=256,
    per_pair={"smollm2-135m-offline": dict(prompts=3, tokens=24, calibration=96, timings=2)},
)
# the default pair costs about 25 times the code pair a token on a CPU: every row runs on it too, with fewer
# tokens a run (24: 3 prompts x 2 seeds = 6 runs a configuration at T > 0, 3 at T = 0) and fewer calibration
# steps; its decoded rows cost about 10 minutes at 1 torch thread on 2 shared cores (measured 2026-11-29)


LABELS = {
    "bundled-stdlib-pair": "the code pair (5.8M-parameter 6-layer target, 2-layer distilled draft; assets/)",
    "smollm2-135m-offline": "SmolLM2-135M-Instruct with its 4-layer distilled draft (assets/smollm2)",
}


@dataclass
class PairRun:
    """A loaded pair with the prompts a report decodes on it (chat-formatted on a chat pair)."""

    name: str
    pair: Any
    prompts: list[str]
    chat: bool

    @property
    def label(self) -> str:
        if self.name in LABELS:
            return LABELS[self.name]
        d = self.pair.describe()
        return f"{d['target']} with {d['draft']}" if d.get("draft") else str(d["target"])


def load(name: str, budget: Budget) -> PairRun:
    """The preset ``name`` loaded on the CPU with ``budget.prompts`` of the bench's prompts: code prompts
    for the code pair, chat questions (through the chat template) for a chat pair."""
    from specviz.bench.prompts import CHAT_PROMPTS, PROMPTS
    from specviz.models.loading import load_pair

    budget = budget.for_pair(name)
    pair = load_pair(preset=name, device="cpu", dtype="float32")
    if pair.has_chat_template:
        cats = [CHAT_PROMPTS[c] for c in ("explain", "lists", "code")]
    else:
        cats = [PROMPTS[c] for c in ("code", "prose")]
    pool = [p for row in zip(*cats) for p in row]  # one of each category in turn
    return PairRun(name, pair, pool[: budget.prompts], pair.has_chat_template)


@dataclass
class Runs:
    """One configuration's runs, aligned across configurations by (prompt, seed)."""

    label: str
    traces: list[Any] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)

    def per_run(self, key: str) -> list[float]:
        return [float(t.metrics[key]) for t in self.traces]

    def tau(self) -> tuple[float, float]:
        return mean_ci([t.metrics["new_tokens"] / max(t.metrics["target_calls"], 1) for t in self.traces])

    def speeds(self) -> list[float]:
        return [t.metrics["new_tokens"] / w for t, w in zip(self.traces, self.walls)]

    def steps(self) -> list[Any]:
        return [s for t in self.traces for s in t.steps]


def run_configs(
    pr: PairRun,
    configs: list[tuple[str, str, dict[str, Any]]],
    temperature: float,
    seeds: int,
    tokens: int,
    pair: Any = None,
) -> dict[str, Runs]:
    """Decode every (label, algorithm, params) on every prompt x seed (one seed at temperature 0),
    round-robin, after one short warm-up run of each; ``pair``: another pair to run on (same prompts)."""
    from specviz.decoding import decode

    pair = pair or pr.pair
    common = dict(temperature=temperature, chat=pr.chat, record_top_k=0)
    for _, algo, params in configs:
        decode(pair, algo, pr.prompts[0], max_new_tokens=3, seed=0, **common, **params)
    out = {label: Runs(label) for label, _, _ in configs}
    for prompt in pr.prompts:
        for seed in range(seeds if temperature > 0 else 1):
            for label, algo, params in configs:
                start = time.perf_counter()
                trace = decode(pair, algo, prompt, max_new_tokens=tokens, seed=seed, **common, **params)
                out[label].walls.append(time.perf_counter() - start)
                out[label].traces.append(trace)
    return out


def ratio(runs: Runs, base: Runs) -> tuple[float, float]:
    """Mean and 1.96 s.e. of tokens/s over the baseline's tokens/s, run by run (same prompt and seed)."""
    return mean_ci([a / b for a, b in zip(runs.speeds(), base.speeds())])


def load_average() -> str:
    """``1, 5, 15 minute load average on N cores`` (what a timing was measured under)."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} cores"
