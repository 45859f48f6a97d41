"""The GPU check's parent side of the worker: it starts the worker process, reads its state file, stops a
section that outruns its budget and starts a new worker for the sections after it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from specviz.bench.gpu.plan import REPO_ROOT


def read_state(path: Path) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            last[event["section"]] = event
    return last


def tail(path: Path, n: int = 12) -> list[str]:
    try:
        return path.read_text(errors="replace").strip().splitlines()[-n:]
    except OSError:
        return []


def kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def child_env() -> dict[str, str]:
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
        proc = _start_worker(args, plan, state, log)
        stopped, starts = _watch(proc, plan, state, deadline)
        events = read_state(state)
        for name, _ in plan:
            if name in events and events[name]["event"] == "done":
                results[name] = events[name]
                todo.remove(name)
        if not todo:
            return
        name = todo.pop(0)  # the section the worker was in (or had not reached) when it stopped
        seconds = time.monotonic() - starts[name] if name in starts else 0.0
        results[name] = _cut_short(events.get(name, {"lines": []}), seconds, dict(plan)[name], stopped, proc, log)


def _start_worker(args, plan: list[tuple[str, float]], state: Path, log: Path) -> subprocess.Popen:
    """A worker process (``python -m specviz.bench.gpu_check --worker``) running the sections of ``plan``
    (name, budget) in its own session, reporting to ``state``, its output to ``log``."""
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
        return subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=child_env(), stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )


def _watch(
    proc: subprocess.Popen, plan: list[tuple[str, float]], state: Path, deadline: float
) -> tuple[str | None, dict[str, float]]:
    """Wait for the worker, killing it when the section it is in outruns its budget (plus grace) or the
    check its deadline: the section it stopped in (``"(starting)"`` before the first; None when the
    worker ended by itself) and when each section started (``time.monotonic``)."""
    stopped = None
    starts: dict[str, float] = {}
    while proc.poll() is None:
        time.sleep(0.5)
        events = read_state(state)
        for name, event in events.items():
            starts.setdefault(name, time.monotonic() - event["seconds"])
        running = next((n for n, _ in plan if n in events and events[n]["event"] != "done"), None)
        limit = dict(plan).get(running, 0) * 1.25 + 15  # each section stops itself at its budget: grace for that
        if running and time.monotonic() - starts[running] > limit or time.monotonic() > deadline + 20:
            stopped = running or "(starting)"
            kill(proc)
    return stopped, starts


def _cut_short(
    event: dict[str, Any], seconds: float, budget: float, stopped: str | None, proc: subprocess.Popen, log: Path
) -> dict[str, Any]:
    """The result of the section a worker was in when it stopped: ``timeout`` when it was stopped for
    time, else ``error`` (the worker ended); what it had written, and the worker's last output."""
    if stopped:
        why = f"stopped at {seconds:.0f} s (budget {budget:.0f} s); what it had measured is kept"
        status = "timeout"
    else:
        why = f"the worker process ended (exit status {proc.returncode}) in this section"
        status = "error"
    return {
        "status": status,
        "note": why,
        "seconds": seconds,
        "lines": list(event.get("lines", []))
        + ["", f"- {why}; the worker's last output:", "", "```", *(tail(log) or ["(none)"]), "```"],
    }
