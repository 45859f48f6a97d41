"""The GPU check's ``environment`` section: device, driver, CUDA, torch, transformers, the commit and
what is present (assets, the default pair's converted checkpoint)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from typing import Any

from specviz.bench.gpu.pairs import default_pair_source, have_assets
from specviz.bench.gpu.plan import REPO_ROOT
from specviz.bench.gpu.section import Section, table


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
    facts["assets"] = "present" if have_assets() else "absent (random models of the code pair's shapes)"
    try:
        source, draft, why = default_pair_source()
        facts["default_pair"] = why if source else f"absent: {why}"
    except Exception as exc:  # noqa: BLE001 - a broken lookup is recorded, the check goes on
        facts["default_pair"] = f"lookup failed: {type(exc).__name__}: {exc}"
    facts["commit"] = _commit()
    s.facts = facts
    s.out(*table(["what", "value"], [[k.replace("_", " "), v] for k, v in facts.items()]))
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
