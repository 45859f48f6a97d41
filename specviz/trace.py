"""The per-step record of a decoding run: ``RunTrace`` / ``StepRecord`` / ``TreeNode``.

A trace is plain data. It can be written to JSON and read back with no model loaded, and every
figure and metric in specviz is computed from it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from itertools import chain, islice, repeat
from typing import Any, Callable, Literal

from specviz.errors import TraceFormatError
from specviz.fast_json import gc_paused, loads
from specviz.json_values import describe
from specviz.step_state import ControllerState, read_state
from specviz.trace_schema import all_well_formed, build, checked_fields

SCHEMA_VERSION = 6
# v1 (no positions, all lossless), v2 (no chat fields), v3 (no step rule), v4 (no drafter), v5 (untyped
# controller state: the same JSON, read leniently, ``step_state.read_state``) replay
READABLE_VERSIONS = (1, 2, 3, 4, 5, 6)
TYPED_STATE_SINCE = 6  # the schema from which a controller state of a known kind must read as its type
MAX_TRACE_BYTES = 64 * 1024 * 1024

NodeStatus = Literal["accepted", "rejected", "not_reached", "resampled", "bonus"]
TokenKind = Literal["draft", "resampled", "bonus"]
NODE_STATUSES: tuple[str, ...] = ("accepted", "rejected", "not_reached", "resampled", "bonus")
TOKEN_KINDS: tuple[str, ...] = ("draft", "resampled", "bonus")
# a node drawn from the draft (tested or not); a resampled or bonus node is the target's
DRAFTED: tuple[str, ...] = ("accepted", "rejected", "not_reached")
TESTED: tuple[str, ...] = ("accepted", "rejected")  # a drafted node the acceptance rule decided


@dataclass
class TreeNode:
    """One drafted token of a step's forest.

    ``parent`` is the id of the parent node, or ``None`` for a root (a root continues the committed
    text). ``q`` and ``p`` are the draft and target probabilities of ``token_id`` under the warped
    distributions used for the decision (``p`` may be ``None`` if the node was never verified);
    ``accept_prob`` is the acceptance probability the rule used (``min(1, p/q)`` for chain SD) and
    ``draw`` the uniform number it was compared with. ``status``: ``accepted``, ``rejected``,
    ``not_reached`` (verification stopped before it), and, for nodes added after verification,
    ``resampled`` (drawn from the residual) or ``bonus`` (drawn from the target after an accepted leaf).
    ``root`` is the id of the tree (beam) the node belongs to in a forest (0 for single trees).
    ``p_residual`` is the (residual) target probability of the token that ``accept_prob`` was computed
    against: ``p`` for the first candidate at a position, the residualised target after earlier
    siblings were rejected for later ones (multi-candidate rules; v2).
    ``q_draft`` is the draft's own probability of the token where it is not ``q``: under a rule whose
    proposals are chosen, not drawn (exact match at temperature 0, where the warped q is one-hot;
    ``point_mass`` for EAGLE-2's tree) ``q`` is 1, the point mass the rule verified against, and
    ``q_draft`` the draft's softmax (temperature 0) or warped q there; ``None`` otherwise.
    """

    id: int
    parent: int | None
    depth: int
    token_id: int
    token_text: str
    q: float | None = None
    p: float | None = None
    accept_prob: float | None = None
    draw: float | None = None
    status: str = "not_reached"
    root: int = 0
    p_residual: float | None = None
    q_draft: float | None = None


@dataclass
class PositionRecord:
    """One verified position: where the children of ``parent`` were tested against the target (v2).

    ``parent`` is the node id whose children were tested (``None``: the committed context, i.e. the
    roots' position); ``root`` the tree / beam id of that position. ``ids`` are the token ids shown:
    the union of the top-k of p and of q, the candidates tested here and the token produced here,
    sorted by p descending, and ``texts`` their decoded texts (so a replay needs no tokenizer); ``p``
    and ``q`` are the warped target and draft probabilities of those ids (``q`` is the one-hot of the
    proposal for a deterministic drafter such as prompt lookup, the law the rule verified against;
    ``None`` when nothing was drafted here). ``residual`` is ``norm(max(0, p - q))`` on ``ids`` (what one rejection
    resamples from) and ``residual_mass`` = ``sum max(0, p - q)`` over the whole vocabulary, which
    equals TV(p, q), the chain rejection probability (theory paper Thm 1), exact at run time.
    ``final_residual``: on ``ids``, the distribution actually resampled from when every candidate here
    was rejected (after the multi-candidate updates), else ``None``.
    """

    parent: int | None
    ids: list[int]
    p: list[float]
    q: list[float] | None = None
    residual: list[float] | None = None
    residual_mass: float | None = None
    final_residual: list[float] | None = None
    root: int = 0
    texts: list[str] | None = None


@dataclass
class CommittedToken:
    """A token appended to the output by a step, with how it was produced."""

    token_id: int
    text: str
    kind: str
    node_id: int | None = None


@dataclass
class LayerLens:
    """The logit lens of one step (``models.logit_lens``), recorded only when asked (``record_lens``).

    Position ``j`` is the verified position that produced ``StepRecord.committed[j]``; ``reads`` the text
    of the token it reads (the last committed token before it). ``layers``: the target's layers shown
    (``hidden_states`` indices; the last is ``n_layers``, the target's own head reading); per layer (row)
    and position (column): the top-1 token ``ids`` through the target's final norm and output head, its
    ``texts`` and probability ``probs``. ``exit_layer``: the early-exit layer of the pair (EESD's N), if
    it has one. Liu et al. 2024 (arXiv 2406.03853), Sec. 3.1."""

    layers: list[int]
    n_layers: int
    reads: list[str]
    ids: list[list[int]]
    texts: list[list[str]]
    probs: list[list[float]]
    exit_layer: int | None = None


@dataclass
class StepRecord:
    """Everything one step (one target verification call) did.

    ``target_fed`` / ``draft_fed``: tokens fed by each target / draft forward call of the step, in call
    order (the committed context that call consumed included), so ``target_calls == len(target_fed)``;
    empty in traces written before they were recorded. The cost model prices each call at t(n).
    ``rule``: the acceptance rule that decided the step, ``{"name": ..., parameters}`` (v4;
    ``core.rule_words`` states its formulas from it); ``None`` in older traces, told as the plain rule.
    ``controller``: the controller's (or probe's) typed state (``specviz.step_state``), written as the
    JSON object of its kind; ``None`` when the step's controller records nothing.
    ``lens``: the step's logit lens (``LayerLens``), only when the run asked for it; absent from the
    JSON otherwise, so a trace without it is byte for byte what it was before.
    """

    index: int
    n_before: int
    forest: list[TreeNode] = field(default_factory=list)
    committed: list[CommittedToken] = field(default_factory=list)
    controller: ControllerState | None = None
    tv: list[float] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    target_calls: int = 1
    draft_calls: int = 0
    positions: list[PositionRecord] = field(default_factory=list)
    target_fed: list[int] = field(default_factory=list)
    draft_fed: list[int] = field(default_factory=list)
    rule: dict[str, Any] | None = None
    lens: LayerLens | None = None  # last: a read step without it gets it appended in declaration order

    @property
    def n_drafted(self) -> int:
        """Draft tokens proposed this step (nodes drawn from the draft, not resampled/bonus ones)."""
        return sum(1 for n in self.forest if n.status in DRAFTED)

    @property
    def n_accepted(self) -> int:
        """Draft tokens accepted this step."""
        return sum(1 for n in self.forest if n.status == "accepted")


READ_CHECKS: list[Callable[["RunTrace"], "RunTrace"]] = []
"""What every read trace goes through after its schema, registered by the layers above this module
(``trace_io.checked_reading``) so that this module imports none of them."""


@dataclass
class RunTrace:
    """A whole run: settings, prompt, output, steps and summary metrics (see ``specviz.metrics``).

    ``drafter`` (v5) says what proposed the run's drafted tokens (``describe_drafter``): ``{"kind":
    "draft_model" | "early_exit" | "prompt_lookup", "name": ..., ...}``, or ``None`` when nothing is
    drafted (``ar``, ``beam``) and in traces written before it was recorded (``schema_version < 5``).
    """

    algorithm: str
    params: dict[str, Any]
    pair: dict[str, Any]
    sampling: dict[str, Any]
    seed: int
    prompt_ids: list[int]
    prompt_text: str  # what the models read: the user's text in the chat template when ``chat``
    output_ids: list[int] = field(default_factory=list)
    output_text: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    finish_reason: str = ""
    lossless: bool = True
    chat: bool = False
    user_text: str | None = None  # the user's own text, before the chat template (``chat`` runs)
    drafter: dict[str, Any] | None = None  # what drafted the run's tokens (``describe_drafter``; v5)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The trace as plain JSON values; each step's controller state as its kind's object."""
        out = asdict(replace(self, steps=[]))
        out["steps"] = [_step_dict(s) for s in self.steps]
        return out

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunTrace":
        """Read a trace as a replay does (``_checked``): a schema problem or an incoherent value raises
        ``TraceFormatError`` naming the field and what was expected; the metrics are recomputed."""
        return cls._checked(cls._read(data, own=False))

    @staticmethod
    def _checked(trace: "RunTrace") -> "RunTrace":
        """The one reading of a trace's values after its schema (``from_dict``, ``from_json``, and so an
        upload's replay): every check in ``READ_CHECKS`` (``trace_io`` registers the value check and
        the metrics recomputed from the steps, so a file's "NaN" tau is never read; ``specviz`` imports it)."""
        for check in READ_CHECKS:
            trace = check(trace)
        return trace

    @classmethod
    def _read(cls, data: Any, own: bool) -> "RunTrace":
        """``from_dict``; ``own``: ``data`` is this call's to keep (fresh from ``json.loads``), so the objects
        of its steps become the step, node, token and position records themselves, not copies."""
        if not isinstance(data, dict):
            raise TraceFormatError(f"A trace must be a JSON object, got {describe(data)}.")
        if "schema_version" not in data:
            raise TraceFormatError(
                "The trace has no schema_version field, which every trace specviz writes has (this specviz "
                f"reads versions {', '.join(map(str, READABLE_VERSIONS))})."
            )
        version = data.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise TraceFormatError(
                f"Trace schema version {version!r} is not supported (this specviz reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))})."
            )
        kwargs = checked_fields(cls, data, "")
        steps = kwargs.pop("steps", [])
        legacy = version < TYPED_STATE_SINCE
        built = _steps_in_bulk(steps, own, legacy)
        kwargs["steps"] = (
            built if built is not None else [_step_from_dict(s, f"steps[{i}]", legacy) for i, s in enumerate(steps)]
        )
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str | bytes) -> "RunTrace":
        if not isinstance(text, (str, bytes, bytearray)):
            raise TraceFormatError(f"A trace is JSON text, not {type(text).__name__}.")
        if len(text) > MAX_TRACE_BYTES:
            raise TraceFormatError(f"Trace is {len(text)} bytes; the limit is {MAX_TRACE_BYTES}.")
        with (
            gc_paused()
        ):  # a 37 MB trace is some 400,000 objects: collecting while they are made is a third of the time
            try:
                data = loads(text)
            except RecursionError as exc:
                raise TraceFormatError("Not a trace: the JSON is nested too deeply.") from exc
            except ValueError as exc:  # JSONDecodeError, bad UTF-8, integers of more than 4300 digits
                raise TraceFormatError(f"Not valid JSON: {exc}") from exc
            return cls._checked(cls._read(data, own=True))  # refuses free-form parts nested too deep, in words


def describe_drafter(spec: Any, pair: dict[str, Any], drafter: str = "model") -> dict[str, Any] | None:
    """``RunTrace.drafter`` for a run of the registered algorithm ``spec`` (an ``AlgorithmSpec``: its
    ``name`` and ``drafter`` kind, ``registry.DRAFTER_KINDS``) on ``pair`` (``ModelPair.describe()``) with
    the run's ``drafter`` choice: the draft model's name, the feature head's (its target layers and draft
    vocabulary), the target's early-exit layer, prompt lookup, the algorithm's own drafter, or ``None``
    when the algorithm drafts nothing."""
    kind = getattr(spec, "drafter", "draft")
    if drafter == "feature" or kind == "feature":
        head = pair.get("feature") or {}
        return {
            "kind": "feature",
            "name": f"feature head {head.get('source')}",
            "layers": head.get("layers"),
            "draft_vocab": head.get("draft_vocab"),
            "params": head.get("params"),
        }
    if drafter == "model_cut":
        return {
            "kind": "draft_model",
            "name": str(pair.get("draft")),
            "params": pair.get("draft_params"),
            "draft_vocab": (pair.get("feature") or {}).get("draft_vocab"),
        }
    if kind == "draft":
        return {"kind": "draft_model", "name": str(pair.get("draft")), "params": pair.get("draft_params")}
    if kind == "early_exit":
        layer = (pair.get("early_exit") or {}).get("exit_layer")
        return {"kind": "early_exit", "name": f"{pair.get('target')} exit after layer {layer}", "exit_layer": layer}
    if kind == "prompt_lookup":
        return {"kind": "prompt_lookup", "name": "prompt lookup"}
    if kind == "own":
        return {"kind": "own", "name": f"{getattr(spec, 'name', '')}'s own drafter"}
    if kind == "none":
        return None
    return {"kind": str(kind), "name": str(kind)}  # a kind a newer registration names


def _step_dict(step: StepRecord) -> dict[str, Any]:
    state = step.controller
    out = asdict(replace(step, controller=None)) if state is not None else asdict(step)
    if state is not None:
        out["controller"] = state.to_json()
    if out["lens"] is None:
        del out["lens"]
    return out


def _read_lens(value: Any, where: str) -> LayerLens | None:
    """A step's ``lens`` object read into a ``LayerLens`` (fields and kinds checked; values by ``trace_check``)."""
    if value is None or isinstance(value, LayerLens):
        return value
    return LayerLens(**checked_fields(LayerLens, value, where))


def _read_state(step: StepRecord, where: str, legacy: bool) -> StepRecord:
    """``step`` with its controller object read into its typed state (``step_state.read_state``), in
    place; ``legacy``: a trace older than ``TYPED_STATE_SINCE``, whose state of a known kind that does not
    read as its type is kept raw (``UnknownState``) instead of refused."""
    if step.controller is not None and not isinstance(step.controller, ControllerState):
        step.controller = read_state(step.controller, f"{where}.controller", legacy)
    return step


_NESTED: tuple[tuple[str, type], ...] = (
    ("forest", TreeNode),
    ("committed", CommittedToken),
    ("positions", PositionRecord),
)


def _steps_in_bulk(rows: Any, own: bool, legacy: bool = False) -> list[StepRecord] | None:
    """The steps of a trace built at once when every step, node, committed token and position in them
    is well formed (``trace_schema``; what ``to_json`` writes always is), checked a field at a time over all of
    them (``all_well_formed``) instead of an object at a time, and every controller state reads as its
    type; ``None`` otherwise, and the per-object path (``_step_from_dict``) then builds them or names the
    first problem. ``own``: see ``RunTrace._read``; ``legacy``: see ``_read_state``."""
    if type(rows) is not list:
        return None
    step_keys = all_well_formed(StepRecord, rows)
    if step_keys is None:
        return None
    try:  # before a row is changed: the per-object path may still need them as they were
        states = [
            read_state(c, f"steps[{i}].controller", legacy) if type(c) is dict else c
            for i, c in enumerate(map(dict.get, rows, repeat("controller")))
        ]
    except TraceFormatError:
        return None
    parts = []
    for name, cls in _NESTED:
        groups = list(map(dict.get, rows, repeat(name), repeat(())))
        flat = list(chain.from_iterable(groups))
        keys = all_well_formed(cls, flat)
        if keys is None:
            return None
        it = iter(build(cls, flat, keys, own))
        parts.append([list(islice(it, len(g))) for g in groups])
    if not own:
        rows = [dict(s) for s in rows]
    try:
        lenses = [_read_lens(s.get("lens"), f"steps[{i}].lens") for i, s in enumerate(rows)]
    except TraceFormatError:
        return None
    for s, forest, committed, positions, lens in zip(rows, *parts, lenses):
        s["forest"], s["committed"], s["positions"] = forest, committed, positions
        s["lens"] = lens
    keys = set(map(tuple, rows))  # a step without "forest" (etc.) has it now, last
    steps = build(StepRecord, rows, keys, True)
    for step, state in zip(steps, states):
        step.controller = state
    return steps


def _step_from_dict(d: dict[str, Any], where: str = "a step", legacy: bool = False) -> StepRecord:
    kwargs = checked_fields(StepRecord, d, where)
    for name, cls in (("forest", TreeNode), ("committed", CommittedToken), ("positions", PositionRecord)):
        items = kwargs.get(name, [])
        kwargs[name] = [cls(**checked_fields(cls, item, f"{where}.{name}[{j}]")) for j, item in enumerate(items)]
    kwargs["lens"] = _read_lens(kwargs.get("lens"), f"{where}.lens")
    return _read_state(StepRecord(**kwargs), where, legacy)
