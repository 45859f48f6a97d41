"""The GPU check's ``tests`` section: the reduced exactness and greedy tests under ``pytest`` on the device,
killed at their budget; and, as a pytest plugin, the stand-in ``plotly`` they may need."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from specviz.bench.gpu.plan import QUICK_EXACTNESS_RUNS, QUICK_TESTS, REPO_ROOT, TESTS
from specviz.bench.gpu.section import table
from specviz.bench.gpu.supervise import child_env, kill

TEST_LINE = re.compile(
    r"(?:(tests/\S+::\S+)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS))|"
    r"(?:(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(tests/\S+::\S+))"
)


def run_tests(args, budget: float, work: Path) -> dict[str, Any]:
    """The reduced exactness and greedy tests under ``pytest`` on the device, killed at ``budget``."""
    start = time.monotonic()
    if importlib.util.find_spec("pytest") is None:
        return {"status": "error", "note": "pytest is not installed here", "lines": [], "seconds": 0.0}
    ids = QUICK_TESTS if args.quick else TESTS
    cmd, env, lines = _pytest_run(args, budget)
    text, timed_out, returncode = _run_pytest(cmd + ids, env, budget, work / "pytest.log")
    outcomes = _outcomes(text)
    counts = {k: sum(v == k for v in outcomes.values()) for k in ("PASSED", "FAILED", "ERROR", "SKIPPED")}
    lines += _outcome_lines(text, outcomes)
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
    if returncode == 0 and counts["PASSED"] and not counts["FAILED"] and not counts["ERROR"]:
        status = "pass"
    elif counts["FAILED"]:
        status = "fail"
    else:
        status = "error"
        if not outcomes:
            lines += ["", "```", *text.strip().splitlines()[-15:], "```"]
    return {"status": status, "note": note, "lines": lines, "seconds": seconds}


def _pytest_run(args, budget: float) -> tuple[list[str], dict[str, str], list[str]]:
    """How the tests run: the ``pytest`` command (without the test ids), its environment (the device,
    ``--quick``'s run count, the plotly stand-in where plotly is absent) and the report's lines saying so
    (with the pytest-xdist workers on a CUDA machine of 8 cores or more, where xdist is installed)."""
    env = child_env()
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
        "specviz.bench.gpu.device_tests",  # this module: its pytest_configure
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
    return cmd, env, lines


def _run_pytest(cmd: list[str], env: dict[str, str], budget: float, log: Path) -> tuple[str, bool, int | None]:
    """``cmd`` in its own session, its output to ``log``, killed at ``budget`` seconds: the output,
    whether it was killed, and its exit status."""
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            proc.wait(timeout=budget)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill(proc)
            timed_out = True
    return log.read_text(errors="replace"), timed_out, proc.returncode


def _outcomes(text: str) -> dict[str, str]:
    """Each test's outcome (``PASSED``, ``FAILED``, ...) as ``pytest -v`` printed it (with or without xdist)."""
    outcomes: dict[str, str] = {}
    for m in TEST_LINE.finditer(text):
        test, outcome = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        outcomes[test] = outcome
    return outcomes


def _outcome_lines(text: str, outcomes: dict[str, str]) -> list[str]:
    """The report's table of outcomes, pytest's summary line and its first error lines."""
    summary = next(
        (ln.strip("= ") for ln in reversed(text.splitlines()) if re.search(r"\d+ (passed|failed|error)", ln)), ""
    )
    lines = ["", *table(["test", "outcome"], [[f"`{t}`", o] for t, o in sorted(outcomes.items())])]
    if summary:
        lines += ["", f"pytest: {summary}"]
    errors = [ln for ln in text.splitlines() if ln.startswith(("E ", "ERROR ", "FAILED "))][:15]
    if errors:
        lines += ["", "```", *errors, "```"]
    return lines


def pytest_configure(config) -> None:
    """As a pytest plugin (``-p specviz.bench.gpu.device_tests``, ``run_tests``): with SPECVIZ_STUB_PLOTLY=1,
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
