"""The GPU check in one command (issue 36): ``bash scripts/gpu_check.sh [--device cuda|cpu] [--quick]
[--out REPORT.md]``, which runs ``python -m specviz.bench.gpu_check`` with the same arguments.

On a machine with a CUDA GPU and PyTorch, offline, from a copy of the repository with or without
``assets/``, in at most 8 minutes, it runs these sections and writes one Markdown report (device,
driver, torch and dtypes named), ready to paste into ``docs/gpu.md``:

* ``environment``: device, driver, CUDA, torch, transformers, what is present (assets, the default
  pair's converted checkpoint).
* ``greedy-float32`` / ``greedy-bfloat16``: greedy ``sd``, ``sequoia`` and ``dyntree`` against
  ``ar``, token for token, on a random Llama pair built from a config (its draft a noisy copy of the
  target, so drafts are accepted) and on the code pair (from ``assets/``; without it, a random pair of
  its shapes). float32 must be equal (``pass`` / ``fail``); a bfloat16 divergence is ``recorded``, not
  failed and not hidden: the first position where it happens, the two tokens, and ``ar``'s top-2
  logit gap there.
* ``bench-code-pair``: t(n) of target and draft for n = 1..64 (powers of two with ``--quick``), the
  one-token calls, the cost model's predicted speed-ups of chain ``sd``; on the real code pair also
  ``ar`` / ``sd`` / ``sequoia`` / ``dyntree`` timed on its prompts, measured against predicted.
* ``bench-1b``: the same timings on a random model shaped like Llama-3.2-1B with a 68M-shaped draft
  (``bench.random_pair``; with ``--quick``, the ``tiny`` shapes): cost needs no trained weights.
* ``default-pair``: when the default pair's converted checkpoint is in the specviz cache, its greedy
  equality in both dtypes and its timings; else ``skipped``, saying why.
* ``tests``: the exactness and greedy tests on the device (``SPECVIZ_TEST_DEVICE``), a reduced set
  that keeps each kept test's stated power (``TESTS``); ``--quick`` runs fewer, at 1000 runs.

Every section runs under its own time budget and catches its own failure: the Python sections run
in a worker process that reports each section as it goes, so a section that raises is an ``error``,
one that outruns its budget is stopped (``timeout``, with what it had measured), a crashed worker is
restarted for the sections after it, and ``tests`` is a ``pytest`` subprocess killed at its budget.
Nothing is installed and nothing is downloaded. ``--device cpu --quick`` is the version that runs in
the test suite (``tests/test_gpu_check.py``), so the check cannot rot. Exit status: 0 unless a
section failed, errored or timed out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from specviz.bench.timing import threads_arg
from specviz.validation import Parser, real, shown

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
STATUSES = ("pass", "fail", "recorded", "skipped", "error", "timeout")
WORKER_SECTIONS = ("environment", "greedy-float32", "greedy-bfloat16", "bench-code-pair", "bench-1b", "default-pair")
SECTIONS = WORKER_SECTIONS + ("tests",)
# seconds per section: (a full run on a GPU, --quick). A section stops itself at its budget, keeping
# what it measured; the whole stays under 8 minutes on a GPU. --quick takes about 1-2 minutes on an
# idle 2-core CPU: its budgets only cap a machine busy with other work (the test suite's).
BUDGETS = {
    "environment": (20, 60),
    "greedy-float32": (45, 120),
    "greedy-bfloat16": (45, 120),
    "bench-code-pair": (55, 120),
    "bench-1b": (75, 60),
    "default-pair": (55, 180),
    "tests": (165, 300),
}
TOTAL_BUDGET = (460, 900)
UNLIMITED = 1e6  # seconds: --no-time-limits (a finite number, so every wait and share of it stays arithmetic)
ALGOS = ("sd", "sequoia", "dyntree")  # each at its default parameters, but for --quick:
QUICK_PARAMS = {"sequoia": {"calibration_steps": 16}}  # Sequoia's one-off acceptance estimate, shorter

# The reduced test set. Each exactness test keeps its own run count (its stated power), and the
# negative controls that show that power (a known small bias must fail) run with it; the warped
# settings and the other tree variants, which share these code paths, are left out.
TESTS = [
    "tests/test_greedy.py::test_sd_greedy_equals_ar",  # sd = ar = transformers' greedy, 7 families, gammas 1-8
    "tests/test_trees_greedy.py::test_greedy_equals_ar",  # mcsd (both), specinfer, sequoia = ar, 7 families
    "tests/test_dyntree.py::test_greedy_equals_ar",  # dyntree = ar, 4 families
    "tests/test_exactness.py::test_sd_first_two_tokens_follow_target[t1]",  # 8000 runs
    "tests/test_exactness.py::test_the_exactness_test_sees_a_small_bias[t1]",  # its power: sees a 10% bias
    "tests/test_trees_exactness.py::test_first_two_tokens_follow_the_target[sequoia-t1]",  # 2500 runs
    "tests/test_trees_exactness.py::test_first_two_tokens_follow_the_target[mcsd-t1]",
    "tests/test_trees_exactness.py::test_the_test_sees_a_wrong_residual_order",  # its power
    "tests/test_dyntree.py::test_first_two_tokens_follow_the_target[t1]",  # 2000 runs
    "tests/test_dyntree.py::test_the_test_sees_a_rule_without_renormalisation",  # its power
]
QUICK_TESTS = [
    "tests/test_greedy.py::test_sd_greedy_equals_ar[llama-p3]",
    "tests/test_trees_greedy.py::test_greedy_equals_ar[llama]",
    "tests/test_dyntree.py::test_greedy_equals_ar[llama]",
    "tests/test_exactness.py::test_sd_first_two_tokens_follow_target[t1]",
]
QUICK_EXACTNESS_RUNS = 1000  # --quick only: less power than the stated 8000, and the report says so

# the code pair's shapes (assets/target, assets/draft), for a copy of the repository without assets/
CODE_TARGET = dict(
    hidden_size=256,
    intermediate_size=688,
    num_hidden_layers=6,
    num_attention_heads=4,
    num_key_value_heads=4,
    head_dim=64,
    vocab_size=4096,
    max_position_embeddings=1024,
    tie_word_embeddings=True,
)
CODE_DRAFT = dict(
    hidden_size=160,
    intermediate_size=432,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=80,
    vocab_size=4096,
    max_position_embeddings=1024,
    tie_word_embeddings=True,
)
# a random pair whose draft is a noisy copy of its target: drafts are accepted, so accepted runs,
# rejections and bonus tokens all happen (``tests/tiny.py``'s close pairs, larger)
NOISY = dict(
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    vocab_size=1024,
    max_position_embeddings=2048,
    initializer_range=0.2,
)
NOISE = 0.05  # the draft's noise, relative to each weight's spread: tau about 2-3 at these sizes
NOISY_QUICK = dict(NOISY, hidden_size=64, intermediate_size=128, num_hidden_layers=2, head_dim=16, vocab_size=256)


# ----------------------------------------------------------------------------------------------
# the worker: Python sections, each reported to a state file as it goes


class Section:
    """One section's report as it is built: Markdown lines, a status and a one-line note, and the
    time left of its budget (``left``). Every ``out`` writes the section so far to the state file,
    so a section stopped from outside keeps what it had measured."""

    def __init__(self, name: str, budget: float, state: Path):
        self.name, self.budget, self.state = name, budget, state
        self.start = time.monotonic()
        self.lines: list[str] = []
        self.status, self.note = "recorded", ""
        self.facts: dict[str, Any] = {}
        self._event("start")

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def out(self, *lines: str) -> None:
        self.lines.extend(lines)
        self._event("partial")

    def _event(self, kind: str) -> None:
        event = {
            "event": kind,
            "section": self.name,
            "seconds": time.monotonic() - self.start,
            "status": self.status,
            "note": self.note,
            "lines": self.lines,
            "facts": self.facts,
        }
        with open(self.state, "a") as fh:
            fh.write(json.dumps(event, default=str) + "\n")

    def done(self) -> None:
        self._event("done")


def _table(header: list[str], rows: list[list[Any]], align: str | None = None) -> list[str]:
    align = align or "|".join("---" for _ in header)
    return ["| " + " | ".join(header) + " |", "|" + align + "|"] + ["| " + " | ".join(map(str, r)) + " |" for r in rows]


def _dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def _llama(cfg: dict[str, Any], seed: int):
    """A random-initialised Llama model from ``cfg``, built on the CPU in float32 (the same weights on
    every machine)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(bos_token_id=None, eos_token_id=None, pad_token_id=None, **cfg)
    return LlamaForCausalLM(config).eval()


def _noisy_copy(model, scale: float, seed: int = 0):
    """``model`` with Gaussian noise of relative size ``scale`` on every weight (``tests/tiny.py``)."""
    import copy

    import torch

    clone = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in clone.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * scale * (p.std() if p.numel() > 1 else 0.0))
    return clone.eval()


def _random_pair(
    name: str,
    target_cfg: dict[str, Any],
    draft_cfg: dict[str, Any] | None,
    device: str,
    dtype: str,
    noise: float = NOISE,
):
    """A ``ModelPair`` of random models from configs: the draft from ``draft_cfg``, or (None) a noisy
    copy of the target. Built on the CPU in float32, then moved."""
    from specviz.models.loading import ModelPair

    target = _llama(target_cfg, 0)
    draft = _llama(draft_cfg, 1) if draft_cfg else _noisy_copy(target, noise)
    target, draft = (m.to(device=device, dtype=_dtype(dtype)) for m in (target, draft))
    return ModelPair(
        target,
        draft,
        None,
        target.config.vocab_size,
        target_name=f"random {name} target",
        draft_name=f"random {name} draft" if draft_cfg else f"noisy copy of the random {name} target",
    )


def _have_assets() -> bool:
    return (REPO_ROOT / "assets" / "target" / "config.json").is_file() and (
        REPO_ROOT / "assets" / "draft" / "config.json"
    ).is_file()


def _code_pair(device: str, dtype: str, greedy: bool):
    """The code pair from ``assets/`` (real, with its prompts), or without it a random pair of its
    shapes (for ``greedy``: its draft a noisy copy of the target, so drafts are accepted)."""
    if _have_assets():
        from specviz.models.loading import load_pair

        pair = load_pair(preset="bundled-stdlib-pair", device=device, dtype=dtype)
        return pair, "the code pair (assets/, bundled-stdlib-pair)", True
    cfg = dict(CODE_TARGET, initializer_range=NOISY["initializer_range"]) if greedy else CODE_TARGET
    pair = _random_pair("code-pair-shaped", cfg, None if greedy else CODE_DRAFT, device, dtype)
    return (
        pair,
        (
            "no assets/: a random pair of the code pair's shapes"
            + (" (draft: a noisy copy of the target)" if greedy else "")
        ),
        False,
    )


_DEFAULT_SOURCE: list[tuple[str | None, str | None, str]] = []


def default_pair_source() -> tuple[str | None, str | None, str]:
    """Where the default pair's converted target is (``None`` when absent), its draft directory
    (``None`` when absent) and a sentence saying what was found. Only looked up, never converted: a
    complete conversion in the specviz cache (``models.packaged``), whether or not the package is here."""
    if _DEFAULT_SOURCE:
        return _DEFAULT_SOURCE[0]
    from specviz.models.packaged import PackagedFile, cache_problem, cache_root, is_packaged
    from specviz.presets import default_preset

    preset = default_preset()
    draft = preset.draft if preset.draft and os.path.isdir(preset.draft) else None
    if not is_packaged(preset.target):
        found = preset.target if os.path.isdir(preset.target) else None
        _DEFAULT_SOURCE.append((found, draft, f"preset {preset.name}: target {preset.target}"))
        return _DEFAULT_SOURCE[0]
    packaged = PackagedFile.parse(preset.target)
    root = cache_root() / "converted"
    found = (
        sorted(
            (p for p in root.glob(f"{packaged.name}-*") if p.is_dir() and cache_problem(p) is None),
            key=lambda p: p.stat().st_mtime,
        )
        if root.is_dir()
        else []
    )
    if found:
        result = (
            str(found[-1]),
            draft,
            f"preset {preset.name}: {packaged.name} converted in the specviz cache ({found[-1]})",
        )
    else:
        result = (
            None,
            draft,
            f"no converted {packaged.name} in the specviz cache ({root}): a run of specviz with "
            f"the {packaged.distribution!r} package installed converts it",
        )
    _DEFAULT_SOURCE.append(result)
    return result


def _divergence(pair, prompt_ids: list[int], ref: list[int], out: list[int]) -> dict[str, Any] | None:
    """Where ``out`` first leaves ``ref`` (``ar``'s output): the position, both tokens, and the
    target's top-2 logit gap at that position after ``ar``'s prefix (a gap near 0 is a near tie,
    which rounding can flip)."""
    import torch

    i = next((k for k, (a, b) in enumerate(zip(ref, out)) if a != b), None)
    if i is None:
        if len(ref) == len(out):
            return None
        i = min(len(ref), len(out))
    gap = None
    with torch.inference_mode():
        ids = torch.tensor([prompt_ids + ref[:i]], device=pair.device)
        logits = pair.target(ids).logits[0, -1, : pair.vocab_size].float()
        top = torch.topk(logits, 2).values
        gap = float(top[0] - top[1])
    return {
        "position": i,
        "ar": ref[i] if i < len(ref) else None,
        "other": out[i] if i < len(out) else None,
        "gap": gap,
    }


def _greedy_rows(
    s: Section, pair, label: str, prompts: list[Any], new_tokens: int, chat: bool = False, quick: bool = False
) -> tuple[list[list[Any]], int, int, list[dict[str, Any]]]:
    """Greedy ``ar`` and each of ``ALGOS`` on ``prompts``: table rows, runs, equal runs, divergences."""
    from specviz.decoding import decode
    from specviz.models.chat import encode_prompt

    rows, runs, equal, diverged = [], 0, 0, []
    for k, prompt in enumerate(prompts):
        if s.left() < 3:
            s.out(f"- stopped at the section's budget: {label}, prompt {k + 1} and after not run")
            break
        prompt_ids = encode_prompt(pair, prompt, chat)[0]
        ar = decode(pair, "ar", prompt_ids, max_new_tokens=new_tokens, temperature=0, record_top_k=0)
        for algo in ALGOS:
            params = QUICK_PARAMS.get(algo, {}) if quick else {}
            trace = decode(pair, algo, prompt_ids, max_new_tokens=new_tokens, temperature=0, record_top_k=0, **params)
            runs += 1
            d = _divergence(pair, prompt_ids, ar.output_ids, trace.output_ids)
            if d is None:
                equal += 1
                where = "-"
            else:
                d.update(pair=label, prompt=k + 1, algorithm=algo)
                diverged.append(d)
                where = f"position {d['position']}: ar {d['ar']}, {algo} {d['other']}; top-2 logit gap {d['gap']:.3g}"
            rows.append(
                [
                    label,
                    k + 1,
                    algo,
                    len(ar.output_ids),
                    f"{trace.metrics['tau']:.2f}",
                    "yes" if d is None else "**no**",
                    where,
                ]
            )
    return rows, runs, equal, diverged


def section_environment(s: Section, args) -> None:
    import torch
    import transformers

    facts: dict[str, Any] = {
        "device": args.device,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": platform.python_version(),
    }
    if args.device.startswith("cuda"):
        if not torch.cuda.is_available():
            s.status, s.note = "error", "--device cuda, but torch sees no CUDA device"
            facts["device_name"] = "none (CUDA not available)"
        else:
            props = torch.cuda.get_device_properties(0)
            facts.update(
                device_name=torch.cuda.get_device_name(0),
                cuda=torch.version.cuda,
                memory_gib=round(props.total_memory / 2**30, 1),
                capability=f"{props.major}.{props.minor}",
                multiprocessors=props.multi_processor_count,
                bf16_supported=torch.cuda.is_bf16_supported(),
                float32_matmul_precision=torch.get_float32_matmul_precision(),
                cudnn=torch.backends.cudnn.version(),
            )
    else:
        model = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo") as fh:
                model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), model)
        except OSError:
            pass
        facts.update(device_name=f"CPU: {model}", cpus=os.cpu_count(), torch_threads=torch.get_num_threads())
    facts["driver"] = _driver()
    facts["assets"] = "present" if _have_assets() else "absent (random models of the code pair's shapes)"
    try:
        source, draft, why = default_pair_source()
        facts["default_pair"] = why if source else f"absent: {why}"
    except Exception as exc:  # noqa: BLE001 - a broken lookup is recorded, the check goes on
        facts["default_pair"] = f"lookup failed: {type(exc).__name__}: {exc}"
    facts["commit"] = _commit()
    s.facts = facts
    s.out(*_table(["what", "value"], [[k.replace("_", " "), v] for k, v in facts.items()]))
    if s.status != "error":
        s.note = f"{facts['device_name']}; torch {facts['torch']}"


def _driver() -> str:
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            res = subprocess.run(
                [smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
            )
            if res.returncode == 0 and res.stdout.strip():
                return "nvidia-smi: " + res.stdout.strip().splitlines()[0]
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        with open("/proc/driver/nvidia/version") as fh:
            return fh.readline().strip()
    except OSError:
        return "none found (no nvidia-smi, no /proc/driver/nvidia)"


def _commit() -> str:
    try:
        res = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
        return (
            res.stdout.strip() + (" (with uncommitted changes)" if dirty else "") if res.returncode == 0 else "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown (no git)"


def section_greedy(s: Section, args, dtype: str) -> None:
    import torch

    from specviz.bench.prompts import PROMPTS

    new_tokens = 16 if args.quick else 48
    s.out(
        f"Greedy (temperature 0) `{'`, `'.join(ALGOS)}` against `ar` on {args.device} in {dtype}, "
        f"{new_tokens} new tokens per prompt, each algorithm at its default parameters"
        + (f" (--quick: {QUICK_PARAMS})" if args.quick else "")
        + ".",
        "",
    )
    rows, runs, equal, diverged = [], 0, 0, []
    noisy_cfg = NOISY_QUICK if args.quick else NOISY
    pair = _random_pair("llama", noisy_cfg, None, args.device, dtype)
    gen = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(0, pair.vocab_size, (n,), generator=gen).tolist() for n in ((8,) if args.quick else (8, 24))
    ]
    r = _greedy_rows(s, pair, "random llama (noisy-copy draft)", prompts, new_tokens, quick=args.quick)
    rows += r[0]
    runs, equal, diverged = runs + r[1], equal + r[2], diverged + r[3]
    del pair
    if s.left() > 5:
        pair, label, real = _code_pair(args.device, dtype, greedy=True)
        prompts = (
            ([PROMPTS["code"][0]] if args.quick else [PROMPTS["code"][0], PROMPTS["prose"][0]])
            if real
            else [torch.randint(0, pair.vocab_size, (12,), generator=gen).tolist()]
        )
        r = _greedy_rows(
            s, pair, "code pair" if real else "code-pair-shaped (random)", prompts, new_tokens, quick=args.quick
        )
        s.out(f"- code pair: {label}")
        rows += r[0]
        runs, equal, diverged = runs + r[1], equal + r[2], diverged + r[3]
    else:
        s.out("- stopped at the section's budget: the code pair not run")
    _greedy_report(s, dtype, rows, runs, equal, diverged)


def _greedy_report(s: Section, dtype: str, rows, runs: int, equal: int, diverged) -> None:
    s.out(
        "",
        *_table(
            ["pair", "prompt", "algorithm", "tokens", "tau", "= ar", "first divergence"],
            rows,
            "---|---:|---|---:|---:|:---:|---",
        ),
    )
    s.facts.update(runs=runs, equal=equal, divergences=diverged)
    all_equal = runs > 0 and equal == runs
    s.out("", f"greedy equal to ar in {dtype}: {'true' if all_equal else 'false'} ({equal} of {runs} runs)")
    if all_equal:
        s.status, s.note = "pass", f"all {runs} runs equal to ar"
    elif runs == 0:
        s.status, s.note = "error", "no run finished"
    elif dtype == "float32":
        s.status = "fail"
        s.note = (
            f"{runs - equal} of {runs} runs diverged from ar (first at positions "
            f"{', '.join(str(d['position']) for d in diverged)})"
        )
    else:  # bfloat16: a divergence is recorded, neither failed nor hidden
        s.status = "recorded"
        s.note = (
            f"{runs - equal} of {runs} runs diverged from ar, first at positions "
            f"{', '.join(str(d['position']) for d in diverged)} (top-2 logit gaps there: "
            f"{', '.join(format(d['gap'], '.3g') for d in diverged)})"
        )


def _sizes(quick: bool) -> tuple[int, ...]:
    return (1, 2, 4, 8, 16, 32, 64) if quick else tuple(range(1, 65))


def _timings(s: Section, pair, quick: bool, prefix: int = 48) -> dict[str, Any]:
    """t(n) of target and draft, the one-token calls and the switch cost, written to ``s``."""
    from specviz.bench import costs

    on_gpu = pair.device.type == "cuda"
    repeats, rounds = (2, 5) if quick else ((10, 50) if on_gpu else (5, 20))
    sizes = _sizes(quick)
    t_t = costs.forward_times(pair.target, sizes, prefix, repeats, pair.vocab_size)
    t_d = costs.forward_times(pair.draft, sizes, prefix, repeats, pair.vocab_size)
    s.out(
        f"t(n): milliseconds of one forward of n new tokens (a chain) after {prefix} cached tokens, "
        f"median of {repeats} round-robin rounds:",
        "",
    )
    for k in range(0, len(sizes), 16):
        chunk = sizes[k : k + 16]
        s.out(
            *_table(
                ["n", *map(str, chunk)],
                [["target", *(f"{t_t[n]:.2f}" for n in chunk)], ["draft", *(f"{t_d[n]:.2f}" for n in chunk)]],
                "---|" + "|".join("---:" for _ in chunk),
            ),
            "",
        )
    calls = costs.one_token_calls(pair, prefix, rounds)
    switch = costs.switch_ms(pair, prefix, rounds)
    ceiling = costs.ceiling(t_t, t_d, switch=switch)
    top = max(sizes)
    s.out(
        f"- one-token calls (median of {rounds}): target {calls['target_call']:.3f} ms (stock transformers forward "
        f"{calls['stock_target_call']:.3f} ms), draft {calls['draft_call']:.3f} ms "
        f"({calls['draft_call'] / calls['target_call']:.2f} of a target call), the target's bare matmuls "
        f"{calls['bare_matmul']:.3f} ms",
        f"- verifying {top} tokens costs t({top}) / t(1) = {t_t[top] / t_t[1]:.2f} one-token target calls",
        f"- alternating the models: +{switch['draft_after_target']:.3f} ms / +{switch['target_after_draft']:.3f} ms",
        f"- the cost model's ceiling for chain sd (a draft always right): {ceiling['speedup']:.2f}x at gamma "
        f"{ceiling['gamma']}",
        "",
    )
    alphas, gammas = (0.6, 0.7, 0.8, 0.9), (1, 2, 3, 4, 6, 8)
    rows = []
    for a in alphas:
        cells = [f"{costs.chain_speedup(t_t, t_d, g, (1 - a ** (g + 1)) / (1 - a), switch):.2f}" for g in gammas]
        rows.append([f"{a:.1f}", *cells])
    s.out(
        "The cost model's predicted speed-up of chain sd over ar (Leviathan et al. 2023, Sec. 3.3, priced by the "
        "t(n) above) for a per-token acceptance rate alpha (tau = (1 - alpha^(gamma+1)) / (1 - alpha)):",
        "",
        *_table(["alpha \\ gamma", *map(str, gammas)], rows, "---|" + "|".join("---:" for _ in gammas)),
        "",
    )
    s.facts.update(t_target_ms=t_t, t_draft_ms=t_d, one_token_ms=calls, switch_ms=switch, sd_ceiling=ceiling)
    return {"t_target": t_t, "t_draft": t_d, "switch": switch}


def _bench_rows(s: Section, pair, prompts: dict[str, list[Any]], quick: bool, timed: dict[str, Any]) -> None:
    """ar / sd / sequoia / dyntree timed on ``prompts`` (greedy, no peers), measured against predicted."""
    from specviz.bench.run import benchmark

    new_tokens, repeat = (16, 1) if quick else (32, 2)
    rows, skipped = benchmark(
        pair,
        prompts,
        ["ar", *ALGOS],
        new_tokens,
        repeat,
        with_peers=False,
        t_target=timed["t_target"],
        t_drafts={"draft": timed["t_draft"]},
        switch=timed["switch"],
    )

    def f(v, spec):
        return "-" if v is None else format(v, spec)

    s.out(
        f"Timed runs: greedy, {new_tokens} new tokens per prompt, median of {repeat} pass(es) after a warm-up, "
        f"{', '.join(f'{len(p)} {c}' for c, p in prompts.items())} prompt(s):",
        "",
        *_table(
            ["category", "method", "tau", "tokens/s", "speedup vs ar", "predicted", "greedy = ar"],
            [
                [
                    r["category"],
                    r["method"],
                    f(r["tau"], ".2f"),
                    f(r["tokens_per_s"], ".1f"),
                    f(r["speedup_vs_ar"], ".2f"),
                    f(r["predicted_speedup"], ".2f"),
                    "-" if r["greedy_equal"] is None else ("yes" if r["greedy_equal"] else "NO"),
                ]
                for r in rows
            ],
            "---|---|---:|---:|---:|---:|:---:",
        ),
        "",
    )
    for name, why in skipped.items():
        s.out(f"- skipped {name}: {why}")
    s.facts["rows"] = [
        {k: r[k] for k in ("category", "method", "tau", "speedup_vs_ar", "predicted_speedup", "greedy_equal")}
        for r in rows
    ]


def _bench_dtype(args) -> str:
    return args.bench_dtype or ("bfloat16" if args.device.startswith("cuda") else "float32")


def section_bench_code(s: Section, args) -> None:
    from specviz.bench.prompts import select

    dtype = _bench_dtype(args)
    pair, label, real = _code_pair(args.device, dtype, greedy=False)
    s.out(f"{label}, on {args.device} in {dtype}.", "")
    timed = _timings(s, pair, args.quick)
    if not real:
        s.out("- no timed runs: tau between random models means nothing")
    elif s.left() < (10 if args.quick else 20):
        s.out("- timed runs not made: the section's budget is spent")
    else:
        _bench_rows(s, pair, select(["code"], 1) if args.quick else select(None, 2), args.quick, timed)
    s.note = (
        f"{'real' if real else 'random, code-pair-shaped'}; {dtype}; "
        + f"ceiling {s.facts['sd_ceiling']['speedup']:.2f}x at gamma {s.facts['sd_ceiling']['gamma']}"
    )


def section_bench_1b(s: Section, args) -> None:
    from specviz.bench.random_pair import RANDOM_PAIRS, random_pair

    dtype = _bench_dtype(args)
    name = "tiny" if args.quick else "llama-1b"
    pair = random_pair(name, args.device, dtype)
    target_cfg, draft_cfg = RANDOM_PAIRS[name]
    s.out(
        f"random pair `{name}` (bench.random_pair: a Llama target of {target_cfg['num_hidden_layers']} layers x "
        f"{target_cfg['hidden_size']} and a draft of {draft_cfg['num_hidden_layers']} x {draft_cfg['hidden_size']}, "
        f"vocabulary {target_cfg['vocab_size']}) on {args.device} in {dtype}"
        + ("; --quick: the tiny shapes, not the 1B ones" if args.quick else ""),
        "",
    )
    _timings(s, pair, args.quick)
    s.note = (
        f"{name}; {dtype}; ceiling {s.facts['sd_ceiling']['speedup']:.2f}x at gamma {s.facts['sd_ceiling']['gamma']}"
    )


def section_default_pair(s: Section, args) -> None:
    from specviz.bench.prompts import select
    from specviz.models.chat import encode_prompt
    from specviz.models.loading import load_pair

    source, draft, why = default_pair_source()
    if source is None or draft is None:
        s.status = "skipped"
        s.note = why if source is None else "the default pair's draft (assets/smollm2/draft) is absent"
        s.out(f"- skipped: {s.note}")
        return
    s.out(f"- {why}; draft {os.path.relpath(draft, REPO_ROOT)}", "")
    questions = [q for qs in select(None, 1, chat=True).values() for q in qs][: 1 if args.quick else 2]
    new_tokens = 8 if args.quick else 32
    statuses = []
    for dtype in ("float32",) if args.quick else ("float32", "bfloat16"):
        if s.left() < 10:
            s.out(f"- greedy in {dtype} not run: the section's budget is spent")
            continue
        pair = load_pair(source, draft, device=args.device, dtype=dtype)
        rows, runs, equal, diverged = _greedy_rows(
            s, pair, f"default pair, {dtype}", questions, new_tokens, chat=True, quick=args.quick
        )
        s.out(
            f"Greedy against ar in {dtype}, {new_tokens} new tokens per chat question:",
            "",
            *_table(
                ["pair", "question", "algorithm", "tokens", "tau", "= ar", "first divergence"],
                rows,
                "---|---:|---|---:|---:|:---:|---",
            ),
            "",
            f"greedy equal to ar in {dtype}: {'true' if runs and equal == runs else 'false'} ({equal} of {runs} runs)",
            "",
        )
        s.facts[f"greedy_{dtype}"] = {"runs": runs, "equal": equal, "divergences": diverged}
        statuses.append("pass" if runs and equal == runs else ("fail" if dtype == "float32" else "recorded"))
        del pair
    bench_dtype = _bench_dtype(args)
    if args.quick:  # a 135M target on a CPU: its timings take minutes
        s.out("- --quick: bfloat16 and the timings not run on the default pair")
    elif s.left() > 30:
        pair = load_pair(source, draft, device=args.device, dtype=bench_dtype)
        s.out(f"Timings in {bench_dtype}:", "")
        timed = _timings(s, pair, args.quick, prefix=64)
        if s.left() > 20:
            chosen = select(["facts", "code", "arithmetic"], 1, chat=True)
            prompts = {c: [encode_prompt(pair, q, chat=True)[0] for q in qs] for c, qs in chosen.items()}
            _bench_rows(s, pair, prompts, args.quick, timed)
        else:
            s.out("- timed runs not made: the section's budget is spent")
    else:
        s.out("- timings not made: the section's budget is spent")
    s.status = "fail" if "fail" in statuses else ("recorded" if "recorded" in statuses or not statuses else "pass")
    g = [
        f"{d}: {s.facts[f'greedy_{d}']['equal']}/{s.facts[f'greedy_{d}']['runs']} equal"
        for d in ("float32", "bfloat16")
        if f"greedy_{d}" in s.facts
    ]
    s.note = "; ".join(g) or "greedy not run"


SECTION_FUNCS: dict[str, Callable[..., None]] = {
    "environment": section_environment,
    "greedy-float32": lambda s, a: section_greedy(s, a, "float32"),
    "greedy-bfloat16": lambda s, a: section_greedy(s, a, "bfloat16"),
    "bench-code-pair": section_bench_code,
    "bench-1b": section_bench_1b,
    "default-pair": section_default_pair,
}


def run_worker(args) -> int:
    """Run ``args.sections`` (``name:budget,...``) in order, each reported to ``args.worker`` as it goes."""
    import torch

    state = Path(args.worker)
    if args.threads:
        torch.set_num_threads(args.threads)
    for item in args.sections.split(","):
        name, budget = item.split(":")
        s = Section(name, float(budget), state)
        try:
            SECTION_FUNCS[name](s, args)
        except Exception as exc:  # noqa: BLE001 - a section's failure is its own; the others go on
            s.status, s.note = "error", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            s.out("", "```", *traceback.format_exc().strip().splitlines()[-12:], "```")
        finally:
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()
        s.done()
    return 0


# ----------------------------------------------------------------------------------------------
# the parent: runs the worker and the tests under their budgets, writes the report


def _read_state(path: Path) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            last[event["section"]] = event
    return last


def _tail(path: Path, n: int = 12) -> list[str]:
    try:
        return path.read_text(errors="replace").strip().splitlines()[-n:]
    except OSError:
        return []


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _child_env() -> dict[str, str]:
    """This environment without an outer pytest's variables (the check may itself run inside pytest),
    offline, with the repository importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONUNBUFFERED="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        TRANSFORMERS_VERBOSITY="error",
    )
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def run_worker_sections(
    args, names: list[str], budgets: dict[str, float], work: Path, results: dict[str, dict[str, Any]], deadline: float
) -> None:
    """The Python sections in a worker process; a section past its budget (plus grace) is stopped with
    the worker, and a new worker takes the sections after it."""
    todo = list(names)
    attempt = 0
    while todo:
        left = deadline - time.monotonic()
        if left < 5:
            for name in todo:
                results[name] = {
                    "status": "timeout",
                    "note": "not reached: the check's total budget is spent",
                    "lines": [],
                    "seconds": 0.0,
                }
            return
        scale = min(1.0, (left - 5) / sum(budgets[name] for name in todo))  # what is left, shared in proportion
        plan = [(name, max(5.0, budgets[name] * scale)) for name in todo]
        attempt += 1
        state, log = work / f"state{attempt}.jsonl", work / f"worker{attempt}.log"
        cmd = [
            sys.executable,
            "-m",
            "specviz.bench.gpu_check",
            "--worker",
            str(state),
            "--device",
            args.device,
            "--sections",
            ",".join(f"{n}:{b:.0f}" for n, b in plan),
        ]
        cmd += (
            ["--quick"] * args.quick
            + (["--bench-dtype", args.bench_dtype] if args.bench_dtype else [])
            + (["--threads", str(args.threads)] if args.threads else [])
        )
        with open(log, "w") as fh:
            proc = subprocess.Popen(
                cmd, cwd=REPO_ROOT, env=_child_env(), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
            )
        stopped = None
        starts: dict[str, float] = {}
        while proc.poll() is None:
            time.sleep(0.5)
            events = _read_state(state)
            for name, event in events.items():
                starts.setdefault(name, time.monotonic() - event["seconds"])
            running = next((n for n, _ in plan if n in events and events[n]["event"] != "done"), None)
            limit = dict(plan).get(running, 0) * 1.25 + 15  # each section stops itself at its budget: grace for that
            if running and time.monotonic() - starts[running] > limit or time.monotonic() > deadline + 20:
                stopped = running or "(starting)"
                _kill(proc)
        events = _read_state(state)
        for name, _ in plan:
            if name in events and events[name]["event"] == "done":
                results[name] = events[name]
                todo.remove(name)
        if not todo:
            return
        name = todo.pop(0)  # the section the worker was in (or had not reached) when it stopped
        event = events.get(name, {"lines": []})
        seconds = time.monotonic() - starts[name] if name in starts else 0.0
        if stopped:
            why = f"stopped at {seconds:.0f} s (budget {dict(plan)[name]:.0f} s); what it had measured is kept"
            status = "timeout"
        else:
            why = f"the worker process ended (exit status {proc.returncode}) in this section"
            status = "error"
        results[name] = {
            "status": status,
            "note": why,
            "seconds": seconds,
            "lines": list(event.get("lines", []))
            + ["", f"- {why}; the worker's last output:", "", "```", *(_tail(log) or ["(none)"]), "```"],
        }


TEST_LINE = re.compile(
    r"(?:(tests/\S+::\S+)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS))|"
    r"(?:(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(tests/\S+::\S+))"
)


def run_tests(args, budget: float, work: Path) -> dict[str, Any]:
    """The reduced exactness and greedy tests under ``pytest`` on the device, killed at ``budget``."""
    import importlib.util

    start = time.monotonic()
    if importlib.util.find_spec("pytest") is None:
        return {"status": "error", "note": "pytest is not installed here", "lines": [], "seconds": 0.0}
    ids = QUICK_TESTS if args.quick else TESTS
    env = _child_env()
    env["SPECVIZ_TEST_DEVICE"] = args.device
    lines = [f"`pytest` on the device (`SPECVIZ_TEST_DEVICE={args.device}`), budget {budget:.0f} s."]
    if args.quick:
        env["SPECVIZ_EXACTNESS_RUNS"] = str(QUICK_EXACTNESS_RUNS)
        lines.append(
            f"--quick: 4 tests, `test_exactness` at {QUICK_EXACTNESS_RUNS} runs (its stated power is at "
            "8000; this run checks the path, not the power)."
        )
    else:
        lines.append(
            "The reduced set: each exactness test at its own run count, with the negative controls that "
            "show its power; the warped settings and the other tree variants share these code paths."
        )
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-v",
        "-o",
        "addopts=",
        "--continue-on-collection-errors",
        "-p",
        "specviz.bench.gpu_check",
    ]
    if importlib.util.find_spec("plotly") is None:  # test_dyntree imports specviz.viz: figures it never draws here
        env["SPECVIZ_STUB_PLOTLY"] = "1"
        lines.append(
            "plotly is not installed: a stub stands in for it so that `test_dyntree.py` imports (the tests "
            "run here draw no figure)."
        )
    workers = (
        min(8, (os.cpu_count() or 1) // 2)
        if (
            args.device.startswith("cuda")
            and (os.cpu_count() or 1) >= 8
            and importlib.util.find_spec("xdist") is not None
        )
        else 0
    )
    if workers:
        cmd += ["-n", str(workers)]
        lines.append(f"{workers} pytest-xdist workers sharing the device.")
    log = work / "pytest.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            cmd + ids, cwd=REPO_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            proc.wait(timeout=budget)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill(proc)
            timed_out = True
    text = log.read_text(errors="replace")
    outcomes: dict[str, str] = {}
    for m in TEST_LINE.finditer(text):
        test, outcome = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        outcomes[test] = outcome
    counts = {k: sum(v == k for v in outcomes.values()) for k in ("PASSED", "FAILED", "ERROR", "SKIPPED")}
    summary = next(
        (ln.strip("= ") for ln in reversed(text.splitlines()) if re.search(r"\d+ (passed|failed|error)", ln)), ""
    )
    lines += ["", *_table(["test", "outcome"], [[f"`{t}`", o] for t, o in sorted(outcomes.items())])]
    if summary:
        lines += ["", f"pytest: {summary}"]
    errors = [ln for ln in text.splitlines() if ln.startswith(("E ", "ERROR ", "FAILED "))][:15]
    if errors:
        lines += ["", "```", *errors, "```"]
    seconds = time.monotonic() - start
    note = ", ".join(f"{v} {k.lower()}" for k, v in counts.items() if v) or "no test outcome read"
    if timed_out:
        lines += [
            "",
            f"- stopped at its budget of {budget:.0f} s; the tests not listed above did not finish; "
            "pytest's last output:",
            "",
            "```",
            *text.strip().splitlines()[-8:],
            "```",
        ]
        return {"status": "timeout", "note": note + f"; stopped at {budget:.0f} s", "lines": lines, "seconds": seconds}
    if proc.returncode == 0 and counts["PASSED"] and not counts["FAILED"] and not counts["ERROR"]:
        status = "pass"
    elif counts["FAILED"]:
        status = "fail"
    else:
        status = "error"
        if not outcomes:
            lines += ["", "```", *text.strip().splitlines()[-15:], "```"]
    return {"status": status, "note": note, "lines": lines, "seconds": seconds}


def pytest_configure(config) -> None:
    """As a pytest plugin (``-p specviz.bench.gpu_check``, ``run_tests``): with SPECVIZ_STUB_PLOTLY=1,
    a stand-in ``plotly`` so that test files importing ``specviz.viz`` collect where plotly is absent."""
    if os.environ.get("SPECVIZ_STUB_PLOTLY") != "1" or "plotly" in sys.modules:
        return
    import types

    class Anything:
        def __init__(self, *a, **k):
            pass

        def __call__(self, *a, **k):
            return Anything()

        def __getattr__(self, name):
            return Anything()

    for name in ("plotly", "plotly.graph_objects", "plotly.subplots", "plotly.io"):
        module = types.ModuleType(name)
        module.__getattr__ = lambda attr: Anything  # type: ignore[method-assign]
        sys.modules[name] = module


def report_markdown(args, results: dict[str, dict[str, Any]], total: float, budget: float) -> str:
    facts = results.get("environment", {}).get("facts") or {}
    dtypes = f"greedy in float32 and bfloat16; benchmark in {_bench_dtype(args)}"
    cmd = "bash scripts/gpu_check.sh " + " ".join(sys.argv[1:])
    lines = [
        f"# specviz GPU check: {facts.get('device_name', args.device)}",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
        f"command: `{cmd.strip()}`; commit {facts.get('commit', 'unknown')}",
        f"- device: {args.device} ({facts.get('device_name', 'unknown')}); driver: {facts.get('driver', 'unknown')}",
        f"- torch {facts.get('torch', 'unknown')} (CUDA {facts.get('cuda', '-')}); transformers "
        f"{facts.get('transformers', 'unknown')}; Python {facts.get('python', platform.python_version())}",
        f"- dtype: {dtypes}",
        f"- mode: {'--quick (reduced sizes; a smoke test of the check itself)' if args.quick else 'full'}; "
        f"total {total:.0f} s " + (f"of a {budget:.0f} s budget" if budget < UNLIMITED else "(no time limits)"),
        "",
        "## Summary",
        "",
        *_table(
            ["section", "status", "seconds", "note"],
            [
                [
                    name,
                    results[name]["status"],
                    f"{results[name].get('seconds', 0.0):.1f}",
                    (results[name].get("note") or "").replace("|", "/"),
                ]
                for name in SECTIONS
                if name in results
            ],
            "---|---|---:|---",
        ),
        "",
    ]
    for name in SECTIONS:
        if name in results:
            lines += [f"## {name}", "", f"status: {results[name]['status']}", "", *results[name].get("lines", []), ""]
    return "\n".join(lines).rstrip() + "\n"


def _device_arg(raw: str) -> str:
    """An argparse ``type``: cpu, cuda or cuda:N (N in ASCII digits), else argparse's one-line refusal."""
    if not re.fullmatch(r"cpu|cuda(:[0-9]{1,3})?", raw):
        raise argparse.ArgumentTypeError(f"expected cuda, cuda:N or cpu, got {shown(raw)}")
    return raw


_device_arg.__name__ = "device"


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="scripts/gpu_check.sh", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", type=_device_arg, default="cuda", help="cuda (default), cuda:N or cpu")
    p.add_argument(
        "--quick", action="store_true", help="reduced sizes, about 1-2 minutes on a CPU (the test suite's run)"
    )
    p.add_argument(
        "--out", default=None, help="the report's path (default gpu-check-DEVICE.md in the current directory)"
    )
    p.add_argument(
        "--bench-dtype",
        choices=("float32", "bfloat16", "float16"),
        default=None,
        help="the benchmark sections' dtype (default bfloat16 on cuda, float32 on cpu)",
    )
    p.add_argument(
        "--budget", type=real(0, lo_open=True), default=None, help="total seconds (default 460; 900 with --quick)"
    )
    p.add_argument(
        "--no-time-limits",
        action="store_true",
        help="stop no section for time (the test suite's run: a test may not depend on the machine's speed)",
    )
    p.add_argument(
        "--threads", type=threads_arg, default=None, help="torch threads in the worker (default torch's choice)"
    )
    p.add_argument("--sections", default=None, help=argparse.SUPPRESS)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return run_worker(args)
    out = Path(args.out or f"gpu-check-{args.device.replace(':', '')}.md")
    budget = UNLIMITED if args.no_time_limits else args.budget or TOTAL_BUDGET[args.quick]
    start = time.monotonic()
    deadline = start + budget
    budgets = {name: UNLIMITED if args.no_time_limits else b[args.quick] for name, b in BUDGETS.items()}
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="specviz-gpu-check-") as tmp:
        work = Path(tmp)
        print(
            f"gpu_check: {', '.join(WORKER_SECTIONS)} in a worker, then the tests ({budget:.0f} s budget)", flush=True
        )
        run_worker_sections(args, list(WORKER_SECTIONS), budgets, work, results, deadline - min(budgets["tests"], 60))
        for name in WORKER_SECTIONS:
            print(f"gpu_check: {name}: {results[name]['status']} ({results[name].get('note', '')})", flush=True)
        left = deadline - time.monotonic()
        if left > 10:
            results["tests"] = run_tests(args, min(budgets["tests"], left - 5), work)
        else:
            results["tests"] = {
                "status": "timeout",
                "note": "not run: the check's total budget is spent",
                "lines": [],
                "seconds": 0.0,
            }
        print(f"gpu_check: tests: {results['tests']['status']} ({results['tests']['note']})", flush=True)
    total = time.monotonic() - start
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report_markdown(args, results, total, budget))
    print(f"gpu_check: report written to {out} ({total:.0f} s)")
    bad = [n for n, r in results.items() if r["status"] in ("fail", "error", "timeout")]
    if bad:
        print(f"gpu_check: not clean: {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
