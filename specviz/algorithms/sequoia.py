"""``sequoia``: Sequoia (Chen et al. 2024, arXiv:2402.12374): a DP-optimal draft tree, siblings drafted
without replacement and verified by Sequoia's Algorithm 1, tree size chosen for the hardware.

Per run: (a) the pair's positional acceptance vector is estimated with one-level trees of ``width``
children on fixed built-in calibration prompts (``calibration="builtin"``, one tree per pair and
sampling settings) or on continuations of the run's own prompt (``"prompt"``, seeded apart from the
run), or given explicitly (``sequoia_tune``; paper §4.1); (b) the bounded-depth DP builds the tree of
size n and at most d levels maximising the expected tokens per step (``core.sequoia_dp``; paper
App. C.2.2); with ``hardware_aware`` it first measures the target's verify time t(n) and the draft's
call time c on this device and picks (n, d) maximising ``G(n, d) / (t(n) + (d - 1) c)`` with
``size`` and ``depth`` as upper bounds (paper Eq. 1, §3.3). Per step the tree is drafted level by
level without replacement (uniform fallback once q is used up, Alg. 1 line 12) and verified exactly
(``tree_verifier``); near the end of the token budget the tree for (n, remaining) is used instead.
Temperature 0: top-b siblings and exact match (the T -> 0 limit of drawing without replacement),
with the acceptance vector measured at temperature 0.

Sizes follow the paper: the tree size n (param ``size``) counts the root (the last committed token),
so n - 1 tokens are speculated; the depth d (param ``depth``) counts the root's level, so a step
yields at most d tokens.

``StepRecord.controller`` (``step_state.SequoiaState``, kind ``sequoia``), as JSON:

- ``acceptance``: p_1..p_K, the joint positional acceptance vector (p_k = P(the k-th drawn child is
  the accepted one)); ``acceptance_source``: ``"given"``, ``"builtin"`` or ``"prompt"``;
  ``acceptance_steps``: calibration steps behind the estimate (0 if given); ``rejection``:
  r_k = 1 - sum_{i<=k} p_i.
- ``n``, ``d``: the chosen tree size and depth (root included); ``hardware_aware``: bool.
- ``tree``: the chosen tree, root included: ``parents`` (node 0 = root, -1 its parent), ``ranks``
  (1-based sibling rank, 0 for the root), ``levels`` (0 for the root), ``f`` (P(node accepted) under
  positional acceptance; f(root) = 1), ``level_widths``.
- ``expected_tokens``: G(n, d) = sum f, the DP's expected tokens per step for the chosen tree.
- ``step_n``, ``step_d``: size and depth of the tree used this step (smaller near the token budget);
  ``predicted_tokens``: its expected tokens; ``measured_tokens``: tokens this step produced
  (accepted + 1); ``accepted_ranks``: sibling rank accepted at each level of the path.
- ``timing``: ``{"sizes": [...], "verify_ms": [...], "draft_ms": c}`` measured t(n) (None unless
  hardware_aware); ``speedup``: ``{"sizes", "depths", "table"[i][j] = Speedup(sizes[i], depths[j])
  or None, "best_per_size": [{"n", "d", "expected_tokens", "verify_ms", "speedup"}], "n", "d",
  "speedup"}`` the surface the choice maximised (None unless hardware_aware).
- ``setup_ms``: time spent on calibration, timing and the DP in this run (0 when cached).
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any, Iterator

from specviz import validation
from specviz.algorithms.cost import Cost, int_param, per_step
from specviz.algorithms.decoder import Decoder
from specviz.algorithms.drafter_choice import DRAFTER
from specviz.algorithms.drafters import ModelDrafter
from specviz.algorithms.registry import Param, register
from specviz.algorithms.sequoia_tune import SIZE_GRID, estimate_acceptance, measure_times, pair_cache
from specviz.algorithms.step_types import Controller, StepResult
from specviz.algorithms.tree_engine import run_engine
from specviz.core.rules import MultiCandidate
from specviz.core.sequoia_dp import SequoiaDP, choose_size_depth, solve
from specviz.core.trees import TreeShape, expected_tokens, path_weights
from specviz.errors import InvalidParameterError
from specviz.step_state import SequoiaRun, SequoiaSpeedup, SequoiaState, SequoiaTiming, SequoiaTree, SizeBest
from specviz.trace import StepRecord

MAX_ACCEPTANCE = 64  # entries in a given acceptance vector: the widest calibration tree (``width``'s maximum)


def parse_acceptance(text: str) -> tuple[float, ...] | None:
    """``"auto"`` (exactly) -> None; ``"0.5,0.2,0.1"`` -> the vector (``validation.decimal_list``'s
    grammar: ASCII decimals joined by commas, nothing else), checked to be a joint law (each >= 0,
    sum <= 1, at most ``MAX_ACCEPTANCE`` entries)."""
    if text == "auto":
        return None
    vec = validation.decimal_list("acceptance", text, MAX_ACCEPTANCE, also="'auto' or ")
    if sum(vec) > 1 + 1e-9:
        raise InvalidParameterError(
            f"acceptance {validation.shown(text)}: p_k is the probability that the k-th drafted child is the "
            "accepted one, so they must sum to at most 1."
        )
    return vec


PARAMS = (
    Param(
        "size",
        32,
        "int",
        1,
        512,
        help="tree size n including the root (n - 1 drafted tokens); the largest size considered when hardware_aware",
    ),
    Param(
        "depth",
        8,
        "int",
        1,
        32,
        help="levels d including the root (most tokens per step); the largest considered when hardware_aware",
    ),
    Param("hardware_aware", False, "bool", help="measure verify times t(n) here and pick (n, d) maximising speedup"),
    Param("width", 16, "int", 1, 64, help="children per node the acceptance vector covers (calibration tree width)"),
    Param(
        "acceptance",
        "auto",
        "str",
        help="'auto' to estimate from calibration prompts, or p_1,p_2,... (joint, sum <= 1)",
        max_len=1600,
        check=parse_acceptance,
    ),
    Param("calibration_steps", 64, "int", 8, 4096, help="verification steps used to estimate the acceptance vector"),
    Param(
        "calibration",
        "builtin",
        "choice",
        choices=("builtin", "prompt"),
        help="estimate the acceptance vector on built-in prompts (one tree per pair and sampling) "
        "or on this run's prompt (a tree fitted to the text at hand)",
    ),
    DRAFTER,
)


def _dp(dec: Decoder, acceptance: tuple[float, ...], n: int, d: int) -> SequoiaDP:
    return pair_cache(dec.pair).get_or_make(("dp", acceptance, n, d), lambda: solve(acceptance, n, d))


def _tree_info(shape: TreeShape, acceptance: tuple[float, ...]) -> SequoiaTree:
    f = path_weights(shape, list(acceptance))
    return SequoiaTree(
        tuple(shape.with_root()), (0, *shape.ranks), (0, *shape.levels), (1.0, *f), (1, *shape.level_widths())
    )


class SequoiaController(Controller):
    """The DP tree for (n, d), or for (n, remaining) near the token budget; its state per step is the
    run's summary (calibration, DP, timing) plus what the step predicted and measured."""

    kind = "sequoia"

    def __init__(self, dp: SequoiaDP, n: int, d: int, vector: tuple[float, ...], summary: SequoiaRun, setup_ms: float):
        self.dp, self.n, self.d, self.vector = dp, n, d, vector
        self.summary, self.setup_ms = summary, setup_ms
        self.shapes: dict[int, TreeShape] = {}

    def plan(self, dec: Decoder) -> TreeShape:
        levels = max(1, min(self.d, dec.remaining))
        if levels not in self.shapes:
            self.shapes[levels] = self.dp.shape(self.dp.largest_feasible(self.n, levels), levels)
        return self.shapes[levels]

    def state(self, result: StepResult) -> SequoiaState:
        shape = result.shape
        return SequoiaState(
            run=self.summary,
            setup_ms=self.setup_ms if result.index == 0 else 0.0,
            step_n=len(shape) + 1,
            step_d=shape.depth + 1,
            predicted_tokens=expected_tokens(shape, list(self.vector)),
            measured_tokens=result.produced,
            accepted_ranks=tuple(result.tree.rank(v) for v in result.path),
        )

    @classmethod
    def calibrated(
        cls,
        dec: Decoder,
        size: int,
        depth: int,
        hardware_aware: bool,
        width: int,
        acceptance: str,
        calibration_steps: int,
        calibration: str,
    ) -> "SequoiaController":
        """Estimate (or take) the acceptance vector, solve the DP and, with ``hardware_aware``, pick
        (n, d) by measured speed (paper Eq. 1); see the module docstring."""
        t0 = time.perf_counter()
        n, d = size, depth
        given = parse_acceptance(acceptance)
        if given is not None:
            vector, source, calib = given, "given", 0
        else:
            prompts = [dec.tokens[: dec.prompt_len]] if calibration == "prompt" else None
            est = estimate_acceptance(dec.pair, dec.sampling, width, calibration_steps, prompts, drafter=dec.drafter)
            vector, source, calib = est.vector, calibration, est.steps
        d = min(d, n)
        dp = _dp(dec, vector, n, d)
        timing = speed = None
        if hardware_aware:
            verify_ms, draft_ms = measure_times(dec.pair, n, drafter=dec.drafter)
            choice = choose_size_depth(dp, verify_ms, draft_ms, d)
            n, d = choice.n, choice.d
            timing = SequoiaTiming(tuple(sorted(verify_ms)), tuple(verify_ms[k] for k in sorted(verify_ms)), draft_ms)
            speed = SequoiaSpeedup(
                tuple(choice.sizes),
                tuple(choice.depths),
                tuple(map(tuple, choice.table)),
                tuple(SizeBest(**b) for b in choice.best_per_size),
                choice.n,
                choice.d,
                choice.speedup,
            )
        n = dp.largest_feasible(n, d)
        shape = dp.shape(n, d)
        rejection, total = [], 0.0
        for p in vector:
            total += p
            rejection.append(max(0.0, 1.0 - total))
        summary = SequoiaRun(
            tuple(vector),
            source,
            calib,
            tuple(rejection),
            n,
            d,
            hardware_aware,
            _tree_info(shape, vector),
            dp.value(n, d),
            timing,
            speed,
        )
        return cls(dp, n, d, vector, summary, 1000 * (time.perf_counter() - t0))


TIMING_REPEATS = 6  # measure_times: a warm-up round and 5 timed rounds


def cost(params: dict[str, Any], steps: int) -> Cost:
    """A tree of ``size`` nodes a step in each model, plus what runs once before the first step (the
    largest of): the calibration's ``calibration_steps`` trees of ``width`` children (acceptance
    ``auto``), the DP (about ``size^2 min(depth, size) / 1024`` positions' worth of work), and with
    ``hardware_aware`` the timing of every size up to ``size``, ``TIMING_REPEATS`` times each."""
    size, depth = max(1, int_param(params, "size")), max(1, int_param(params, "depth"))
    once, once_name, once_detail = 0, "", ""
    if str(params.get("acceptance", "auto")).strip().lower() == "auto":
        width, calib = max(1, int_param(params, "width")), int_param(params, "calibration_steps")
        once, once_name = calib * (width + 1), "calibration_steps x width"
        once_detail = f"calibration_steps {calib} x (width {width} + 1)"
    dp = math.ceil(size * size * min(depth, size) / 1024)
    if dp > once:
        once, once_name, once_detail = dp, "size and depth", f"the DP for size {size}, depth {depth}"
    if params.get("hardware_aware") is True:
        timing = TIMING_REPEATS * sum({k for k in SIZE_GRID if k <= size} | {size})
        if timing > once:
            once, once_name, once_detail = timing, "size (hardware_aware)", f"timing sizes up to {size}"
    return replace(per_step(size, "size", steps), once=once, once_parameter=once_name, once_detail=once_detail)


@register(
    "sequoia",
    description="Sequoia: DP-optimal draft tree for the pair's acceptance vector, siblings "
    "without replacement, hardware-aware tree size.",
    paper="Chen et al. 2024, Sequoia, Algorithm 1, App. C.2 (Algorithms 4-5), Eq. 1",
    params=PARAMS,
    controller="sequoia",
    cost=cost,
    color="#059669",
    page_rank=5,
)
def run_sequoia(
    dec: Decoder,
    size: int,
    depth: int,
    hardware_aware: bool,
    width: int,
    acceptance: str,
    calibration_steps: int,
    calibration: str,
) -> Iterator[StepRecord]:
    controller = SequoiaController.calibrated(
        dec, size, depth, hardware_aware, width, acceptance, calibration_steps, calibration
    )
    yield from run_engine(dec, ModelDrafter(dec.draft, fallback=True), controller, MultiCandidate(replacement=False))
