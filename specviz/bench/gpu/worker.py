"""The GPU check's worker process: the Python sections in order, each reported to a state file as it
goes (``python -m specviz.bench.gpu_check --worker STATE --sections name:budget,...``)."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Callable

from specviz.bench.gpu.default_pair import section_default_pair
from specviz.bench.gpu.environment import section_environment
from specviz.bench.gpu.greedy import section_greedy
from specviz.bench.gpu.section import Section
from specviz.bench.gpu.timings import section_bench_1b, section_bench_code

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
