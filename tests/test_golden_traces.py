"""Golden traces: every registered algorithm (and each cheap controller variant) on tiny models at a
fixed seed, at temperature 1 and 0, gives exactly the trace stored in ``tests/data/golden/``.

The stored files were written by the code before the step-loop refactor (issue #22 points 1 and 3),
so a refactor that keeps them green changed no draw, token, status or recorded value. Compared:
every field of the stored trace except wall-clock ones (``StepRecord.timings``, Sequoia's
``setup_ms``) and ``metrics`` (computed from the steps, which are compared, plus wall time); ids,
tokens, statuses and texts exactly, floats to ``ATOL`` + ``RTOL`` times their size (the trace format's
``schema_version`` is not compared). The files are float32 CPU arithmetic on one thread
(``tests/conftest.py``; the regeneration sets the same), so the test is skipped on another device
(``SPECVIZ_TEST_DEVICE``). Another CPU's float32 kernels round differently: the files, written on an AMD
EPYC, read on an Intel Xeon with every id, token, status and text the same and 1,720 floats different, by
at most one unit in the last recorded digit (1e-5 of a probability the trace keeps to 5 decimals, 2e-6
of a log-likelihood kept to 6) and 2e-6 of an unrounded acceptance probability. The bound takes that
and nothing a change of behaviour would make: a different draw, token or status fails whatever the
floats. A field added to
the trace format after the files were written is not compared (regenerate to cover it); a stored
field that disappears fails.

Regenerate (only when a change of behaviour is intended, and say so in the commit)::

    python -m tests.test_golden_traces --regen

or write only some cases' files (a case added later: ``sd_heuristic``, ``sd_confidence`` and
``sd_adaptive`` were written by the typed-state code, schema 6, the rest by the dict-based one)::

    python -m tests.test_golden_traces --regen sd_heuristic sd_confidence

A registered algorithm that no case in ``CASES`` runs gets one at its defaults, named after it
(``GENERATED``): a new algorithm's files are ``python -m tests.test_golden_traces --regen NAME``.
"""

from __future__ import annotations

import json
import math
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from tests.tiny import DEVICE

pytestmark = pytest.mark.skipif(DEVICE != "cpu", reason="the stored traces are CPU float32 arithmetic")

GOLDEN = Path(__file__).resolve().parent / "data" / "golden"
PROMPT = [1, 2, 3, 1, 2, 3, 1, 2]  # repeats, so prompt lookup finds matches
TOKENS = 8
SEED = 7
WALL_CLOCK = {"timings", "setup_ms"}
NOT_COMPARED = WALL_CLOCK | {"schema_version"}  # the format's version is no behaviour
ATOL, RTOL = 2e-5, 1e-5  # one rounding unit of a 5-decimal value, and float32's relative rounding

# name -> (pair, algorithm, params); each runs at temperature 1 and 0
CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "ar": ("tree", "ar", {}),
    "sd": ("tree", "sd", {"gamma": 3}),
    "sd_beta_ts": ("tree", "sd", {"controller": "beta_ts", "alpha0": 3.0}),
    "sd_cali_ts": ("tree", "sd", {"controller": "cali_ts"}),
    "sd_fixed": ("tree", "sd", {"controller": "fixed", "fixed_length": 2, "k_max": 3}),
    "sd_heuristic": ("tree", "sd", {"controller": "heuristic", "num_assistant_tokens": 2}),
    "sd_confidence": (
        "tree",
        "sd",
        {"controller": "confidence", "num_assistant_tokens": 4, "confidence_threshold": 0.1},
    ),
    "sd_adaptive": ("tree", "sd", {"controller": "adaptive", "num_assistant_tokens": 4, "confidence_threshold": 0.1}),
    "eesd": ("early_exit", "eesd", {"alpha0": 3.0}),
    "eesd_cali_ts": ("early_exit", "eesd", {"controller": "cali_ts"}),
    "mcsd": ("tree", "mcsd", {"k_config": "3x2x1"}),
    "mcsd_replacement": ("tree", "mcsd", {"k_config": "3x2", "replacement": True}),
    "specinfer": ("tree", "specinfer", {"k_config": "2x1x1"}),
    "sequoia": ("tree", "sequoia", {"size": 8, "depth": 4, "acceptance": "0.5,0.2,0.1"}),
    "sequoia_auto": ("tree", "sequoia", {"size": 6, "depth": 3, "width": 4, "calibration_steps": 8}),
    "dyntree": ("tree", "dyntree", {"nodes": 6, "depth": 3, "topk": 3}),
    "pld": ("tree", "pld", {"num_tokens": 3, "max_ngram": 2}),
    "biased_sd": ("tree", "biased_sd", {"eps": 0.1, "gamma": 3}),
    "biased_sd_uno": ("tree", "biased_sd", {"eps": 0.05, "residual": "target", "lam": 0.3, "gamma": 2}),
    "batch_sd": ("tree", "batch_sd", {"num_drafts": 3, "gamma": 2}),
    "beam": ("tree", "beam", {"width": 3}),
    "beam_eos": ("eos", "beam", {"width": 3}),
    "dsbd": ("tree", "dsbd", {"width": 3, "gamma": 2}),
    "dsbd_eos": ("eos", "dsbd", {"width": 3, "gamma": 2, "min_width": 2}),
    "dsbd_fixed": ("tree", "dsbd", {"width": 3, "gamma": 2, "dynamic": False, "min_width": 2}),
    "dsbd_single": ("eos", "dsbd", {"width": 4, "gamma": 3, "single_beam": True}),
    "dsbd_literal": ("tree", "dsbd", {"width": 3, "gamma": 2, "literal_ratio": True}),
}
TEMPERATURES = (1.0, 0.0)


def _generated_cases() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """A case at its defaults, named after it, for every registered algorithm no case above runs: a
    new algorithm's golden trace is written by ``python -m tests.test_golden_traces --regen NAME``,
    with no edit here (its drafter picks the pair: the early-exit one for an early-exit drafter)."""
    import specviz

    covered = {algorithm for _, algorithm, _ in CASES.values()}
    return {
        name: ("early_exit" if spec.drafter == "early_exit" else "tree", name, {})
        for name, spec in specviz.ALGORITHMS.items()
        if name not in covered
    }


GENERATED = _generated_cases()
CASES.update(GENERATED)


@lru_cache(maxsize=None)
def pair(kind: str):
    """The tiny pairs the cases run on (built once; the weights depend only on their seeds)."""
    from specviz.models.loading import attach_early_exit
    from tests.tiny import tiny_pair, with_eos

    if kind == "tree":
        return tiny_pair(vocab=16, draft="noisy", noise=0.5)
    if kind == "eos":
        return with_eos(tiny_pair(vocab=16, draft="noisy", noise=0.5), eos=0, bias=2.0)
    if kind == "early_exit":
        return attach_early_exit(tiny_pair(vocab=16, draft="noisy", layers=3), 1)
    raise ValueError(kind)


def run(name: str, temperature: float) -> dict[str, Any]:
    """The case's trace as a plain dict, without its wall-clock fields and metrics."""
    import specviz

    kind, algorithm, params = CASES[name]
    trace = specviz.decode(
        pair(kind),
        algorithm,
        PROMPT,
        max_new_tokens=TOKENS,
        temperature=temperature,
        seed=SEED,
        record_top_k=4,
        **params,
    )
    data = json.loads(trace.to_json())
    data.pop("metrics")
    return strip(data)


def strip(value: Any) -> Any:
    """``value`` without the wall-clock keys, at any depth."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in NOT_COMPARED}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def path_of(name: str, temperature: float) -> Path:
    return GOLDEN / f"{name}_t{int(temperature)}.json"


def differences(stored: Any, fresh: Any, where: str = "trace") -> list[str]:
    """Where ``fresh`` departs from ``stored`` (keys only in ``fresh`` are ignored: module docstring)."""
    if isinstance(stored, dict):
        if not isinstance(fresh, dict):
            return [f"{where}: {fresh!r} is not an object"]
        out = []
        for k, v in stored.items():
            if k not in fresh:
                out.append(f"{where}.{k}: missing")
            else:
                out += differences(v, fresh[k], f"{where}.{k}")
        return out
    if isinstance(stored, list):
        if not isinstance(fresh, list) or len(fresh) != len(stored):
            return [f"{where}: {fresh!r} != {stored!r}"]
        return [d for i, (a, b) in enumerate(zip(stored, fresh)) for d in differences(a, b, f"{where}[{i}]")]
    if isinstance(stored, float) and isinstance(fresh, (int, float)) and not isinstance(fresh, bool):
        if math.isnan(stored) and math.isnan(fresh):
            return []
        if stored == fresh or abs(stored - fresh) <= ATOL + RTOL * abs(stored):
            return []
        return [f"{where}: {fresh!r} != {stored!r}"]
    if type(stored) is not type(fresh) or stored != fresh:
        return [f"{where}: {fresh!r} != {stored!r}"]
    return []


@pytest.mark.parametrize("temperature", TEMPERATURES, ids=lambda t: f"T{t:g}")
@pytest.mark.parametrize("name", sorted(CASES))
def test_trace_is_the_stored_one(name: str, temperature: float):
    stored = json.loads(path_of(name, temperature).read_text(encoding="utf-8"))
    found = differences(stored, run(name, temperature))
    assert not found, f"{name} at T={temperature:g}: {len(found)} differences, first: " + "; ".join(found[:8])


def test_the_comparison_takes_rounding_and_nothing_more():
    """What ``differences`` lets through: a last-digit rounding of a recorded float, not a changed token,
    status or a probability off by 1e-4."""
    stored = json.loads(path_of("sd", 1.0).read_text(encoding="utf-8"))
    node = stored["steps"][0]["forest"][0]

    def changed(key, value):
        fresh = json.loads(json.dumps(stored))
        fresh["steps"][0]["forest"][0][key] = value
        return differences(stored, fresh)

    assert not differences(stored, json.loads(json.dumps(stored)))
    assert not changed("q", node["q"] + 1e-5) and not changed("p", node["p"] - 1e-5)
    assert changed("q", node["q"] + 1e-4) and changed("p", node["p"] * 1.001)
    assert changed("token_id", node["token_id"] + 1) and changed(
        "status", "rejected" if node["status"] != "rejected" else "accepted"
    )


def test_every_registered_algorithm_has_its_stored_trace():
    import specviz

    assert set(specviz.ALGORITHMS) <= {algorithm for _, algorithm, _ in CASES.values()}
    missing = sorted(name for name in CASES for t in TEMPERATURES if not path_of(name, t).is_file())
    assert not missing, f"write them: python -m tests.test_golden_traces --regen {' '.join(missing)}"


def regenerate(names: list[str]) -> None:
    """Write the files of the cases ``names`` (every case when empty)."""
    import torch

    torch.set_num_threads(1)  # as tests/conftest.py: a thread count changes float32 sums
    GOLDEN.mkdir(parents=True, exist_ok=True)
    unknown = set(names) - set(CASES)
    if unknown:
        sys.exit(f"no such case: {', '.join(sorted(unknown))}")
    for name in names or sorted(CASES):
        for t in TEMPERATURES:
            path_of(name, t).write_text(json.dumps(run(name, t), separators=(",", ":")) + "\n", encoding="utf-8")
            print("wrote", path_of(name, t))


if __name__ == "__main__":
    if sys.argv[1:2] != ["--regen"]:
        sys.exit("usage: python -m tests.test_golden_traces --regen [CASE ...]")
    regenerate(sys.argv[2:])
