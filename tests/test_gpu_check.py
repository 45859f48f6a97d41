"""The GPU check (``scripts/gpu_check.sh``, ``specviz.bench.gpu_check``) run as the suite can run it:
``--device cpu --quick``, its report read back. It is the check a GPU machine runs, so this keeps it
from rotting: every section present with its status, the device and versions named, greedy equality
true in float32, the reduced tests passed. A section that raises is recorded and the next one runs."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.bench import gpu_check

ROOT = Path(__file__).resolve().parent.parent


def summary(report: str) -> dict[str, str]:
    """``{section: status}`` from the report's Summary table."""
    block = report.split("## Summary", 1)[1].split("\n## ", 1)[0]
    rows = [ln.strip("|").split("|") for ln in block.splitlines() if ln.startswith("| ") and "---" not in ln]
    return {cells[0].strip(): cells[1].strip() for cells in rows[1:]}


def section(report: str, name: str) -> str:
    return report.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.slow
def test_the_quick_cpu_check_writes_a_report_with_every_section(tmp_path):
    out = tmp_path / "gpu-check.md"
    # the script runs $PYTHON (else python3 from PATH): the interpreter the suite runs in, which has the package
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}, "PYTHON": sys.executable}
    res = subprocess.run(
        [
            "bash",
            str(ROOT / "scripts" / "gpu_check.sh"),
            "--device",
            "cpu",
            "--quick",
            "--no-time-limits",
            "--out",
            str(out),
        ],  # no section stopped for time: speed-independent
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=7200,
    )  # a hang guard only
    assert out.is_file(), res.stdout + res.stderr
    report = out.read_text()
    assert res.returncode == 0, res.stdout + res.stderr + report

    head = report.split("## Summary", 1)[0]
    assert head.startswith("# specviz GPU check: CPU")
    assert re.search(r"^- device: cpu \(CPU", head, re.M)
    assert re.search(r"^- torch \d", head, re.M) and "transformers" in head and "driver:" in head
    assert "- dtype: greedy in float32 and bfloat16; benchmark in float32" in head

    statuses = summary(report)
    assert list(statuses) == list(gpu_check.SECTIONS)
    assert all(s in ("pass", "recorded", "skipped") for s in statuses.values()), statuses
    for name in gpu_check.SECTIONS:
        assert f"status: {statuses[name]}" in section(report, name)

    assert statuses["greedy-float32"] == "pass"
    assert "greedy equal to ar in float32: true" in section(report, "greedy-float32")
    assert statuses["greedy-bfloat16"] in ("pass", "recorded")  # a bfloat16 divergence is recorded, not failed
    assert "greedy equal to ar in bfloat16: " in section(report, "greedy-bfloat16")
    assert statuses["tests"] == "pass"
    assert "SPECVIZ_TEST_DEVICE=cpu" in section(report, "tests")
    for name in ("bench-code-pair", "bench-1b"):
        text = section(report, name)
        assert "| n | 1 | 2 | 4 | 8 | 16 | 32 | 64 |" in text and "| target |" in text and "| draft |" in text
        assert "predicted speed-up of chain sd" in text
    if (ROOT / "assets" / "target").is_dir():
        assert "| code | sd |" in section(report, "bench-code-pair")  # the real code pair's timed runs


def test_a_section_that_raises_is_recorded_and_the_next_one_runs(tmp_path, monkeypatch):
    def broken(s, args):
        s.out("measured before the failure")
        raise RuntimeError("planted failure")

    monkeypatch.setitem(gpu_check.SECTION_FUNCS, "greedy-float32", broken)
    state = tmp_path / "state.jsonl"
    assert (
        gpu_check.main(["--worker", str(state), "--device", "cpu", "--sections", "greedy-float32:30,environment:30"])
        == 0
    )
    events = gpu_check._read_state(state)
    assert events["greedy-float32"]["event"] == "done" and events["greedy-float32"]["status"] == "error"
    assert "planted failure" in events["greedy-float32"]["note"]
    assert "measured before the failure" in events["greedy-float32"]["lines"]
    assert events["environment"]["event"] == "done" and events["environment"]["facts"]["device"] == "cpu"
    assert all(json.loads(line)["section"] for line in state.read_text().splitlines())


def test_the_report_names_what_ran_even_when_a_section_did_not(tmp_path):
    class Args:
        device, quick, bench_dtype = "cuda", False, None

    results = {
        name: {"status": "skipped", "note": "absent", "lines": [], "seconds": 0.0} for name in gpu_check.SECTIONS
    }
    results["environment"] = {
        "status": "recorded",
        "note": "",
        "lines": [],
        "seconds": 1.0,
        "facts": {
            "device_name": "NVIDIA X",
            "driver": "nvidia-smi: NVIDIA X, 1.2.3, 80 GiB",
            "torch": "2.0",
            "cuda": "12.1",
            "transformers": "4.0",
            "python": "3.12",
        },
    }
    results["tests"] = {"status": "timeout", "note": "stopped | at 165 s", "lines": ["partial"], "seconds": 165.0}
    report = gpu_check.report_markdown(Args(), results, 400, 460)
    assert report.startswith("# specviz GPU check: NVIDIA X")
    assert "driver: nvidia-smi: NVIDIA X, 1.2.3, 80 GiB" in report and "torch 2.0 (CUDA 12.1)" in report
    assert "benchmark in bfloat16" in report
    statuses = summary(report)
    assert statuses["tests"] == "timeout" and statuses["default-pair"] == "skipped"
    assert "stopped / at 165 s" in report  # a note never breaks the table
