"""What the GPU check runs and under what budgets: its sections, their time budgets, the algorithms
checked against ``ar`` and the reduced test set (``specviz.bench.gpu_check``)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[3]  # the repository (this file: specviz/bench/gpu/plan.py)
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
