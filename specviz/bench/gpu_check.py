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
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from specviz.bench.gpu.device_tests import run_tests
from specviz.bench.gpu.pairs import default_pair_source  # noqa: F401  (re-exported)
from specviz.bench.gpu.plan import (  # noqa: F401  (BUDGETS ... TESTS re-exported)
    BUDGETS,
    QUICK_TESTS,
    SECTIONS,
    STATUSES,
    TESTS,
    TOTAL_BUDGET,
    UNLIMITED,
    WORKER_SECTIONS,
)
from specviz.bench.gpu.report import report_markdown
from specviz.bench.gpu.section import Section  # noqa: F401  (re-exported)
from specviz.bench.gpu.supervise import read_state as _read_state  # noqa: F401  (re-exported)
from specviz.bench.gpu.supervise import run_worker_sections
from specviz.bench.gpu.worker import SECTION_FUNCS, run_worker  # noqa: F401  (SECTION_FUNCS re-exported)
from specviz.bench.timing import threads_arg
from specviz.validation import Parser, real, shown


def _device_arg(raw: str) -> str:
    """An argparse ``type``: cpu, cuda or cuda:N (N in ASCII digits), else argparse's one-line refusal."""
    if not re.fullmatch(r"cpu|cuda(:[0-9]{1,3})?", raw):
        raise argparse.ArgumentTypeError(f"expected cuda, cuda:N or cpu, got {shown(raw)}")
    return raw


_device_arg.__name__ = "device"


def parser() -> Parser:
    """The check's options (``scripts/gpu_check.sh --help``), and the worker's hidden ones."""
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
    return p


def run_sections(args, budget: float, deadline: float) -> dict[str, dict[str, Any]]:
    """Every section's result: the worker's sections (``supervise``), then the tests (``device_tests``)
    with what is left of ``budget``, each printed as it ends."""
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
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the check and write its report (exit status 1 when a section failed, errored or timed out), or
    with ``--worker`` be the worker (``supervise`` starts it)."""
    args = parser().parse_args(argv)
    if args.worker:
        return run_worker(args)
    out = Path(args.out or f"gpu-check-{args.device.replace(':', '')}.md")
    budget = UNLIMITED if args.no_time_limits else args.budget or TOTAL_BUDGET[args.quick]
    start = time.monotonic()
    results = run_sections(args, budget, start + budget)
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
