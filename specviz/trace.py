"""The per-step record of a decoding run: ``RunTrace`` / ``StepRecord`` / ``TreeNode``.

A trace is plain data. It can be written to JSON and read back with no model loaded, and every
figure and metric in specviz is computed from it (DESIGN.md, "The trace").
"""
from __future__ import annotations

import functools
import json
import types
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from specviz.errors import TraceFormatError

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)  # v1 traces (no positions, all lossless) still replay
MAX_TRACE_BYTES = 64 * 1024 * 1024

NodeStatus = Literal["accepted", "rejected", "not_reached", "resampled", "bonus"]
TokenKind = Literal["draft", "resampled", "bonus"]
NODE_STATUSES: tuple[str, ...] = ("accepted", "rejected", "not_reached", "resampled", "bonus")
TOKEN_KINDS: tuple[str, ...] = ("draft", "resampled", "bonus")


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


@dataclass
class PositionRecord:
    """One verified position: where the children of ``parent`` were tested against the target (v2).

    ``parent`` is the node id whose children were tested (``None``: the committed context, i.e. the
    roots' position); ``root`` the tree / beam id of that position. ``ids`` are the token ids shown:
    the union of the top-k of p and of q, the candidates tested here and the token produced here,
    sorted by p descending; ``p`` and ``q`` are the warped target and draft probabilities of those ids
    (``q`` all 0 for a one-hot drafter such as prompt lookup, which has no distribution; ``None`` when
    nothing was drafted here). ``residual`` is ``norm(max(0, p - q))`` on ``ids`` (what one rejection
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


@dataclass
class CommittedToken:
    """A token appended to the output by a step, with how it was produced."""

    token_id: int
    text: str
    kind: str
    node_id: int | None = None


@dataclass
class StepRecord:
    """Everything one step (one target verification call) did."""

    index: int
    n_before: int
    forest: list[TreeNode] = field(default_factory=list)
    committed: list[CommittedToken] = field(default_factory=list)
    controller: dict[str, Any] | None = None
    tv: list[float] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    target_calls: int = 1
    draft_calls: int = 0
    positions: list[PositionRecord] = field(default_factory=list)

    @property
    def n_drafted(self) -> int:
        """Draft tokens proposed this step (nodes drawn from the draft, not resampled/bonus ones)."""
        return sum(1 for n in self.forest if n.status in ("accepted", "rejected", "not_reached"))

    @property
    def n_accepted(self) -> int:
        """Draft tokens accepted this step."""
        return sum(1 for n in self.forest if n.status == "accepted")


@dataclass
class RunTrace:
    """A whole run: settings, prompt, output, steps and summary metrics (see ``specviz.metrics``)."""

    algorithm: str
    params: dict[str, Any]
    pair: dict[str, Any]
    sampling: dict[str, Any]
    seed: int
    prompt_ids: list[int]
    prompt_text: str
    output_ids: list[int] = field(default_factory=list)
    output_text: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    finish_reason: str = ""
    lossless: bool = True
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunTrace":
        if not isinstance(data, dict):
            raise TraceFormatError("A trace must be a JSON object.")
        version = data.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise TraceFormatError(
                f"Trace schema version {version!r} is not supported (this specviz reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))})."
            )
        try:
            steps = [_step_from_dict(s) for s in data.get("steps", [])]
            kwargs = {f.name: data[f.name] for f in fields(cls) if f.name in data and f.name != "steps"}
            trace = cls(steps=steps, **kwargs)
        except (KeyError, TypeError, ValueError, RecursionError) as exc:
            raise TraceFormatError(f"Malformed trace: {exc}") from exc
        _check_fields(trace, "trace")
        return trace

    @classmethod
    def from_json(cls, text: str | bytes) -> "RunTrace":
        if not isinstance(text, (str, bytes, bytearray)):
            raise TraceFormatError(f"A trace is JSON text, not {type(text).__name__}.")
        if len(text) > MAX_TRACE_BYTES:
            raise TraceFormatError(f"Trace is {len(text)} bytes; the limit is {MAX_TRACE_BYTES}.")
        try:
            data = json.loads(text)
        except RecursionError as exc:
            raise TraceFormatError("Not a trace: the JSON is nested too deeply.") from exc
        except ValueError as exc:  # JSONDecodeError, bad UTF-8, integers of more than 4300 digits
            raise TraceFormatError(f"Not valid JSON: {exc}") from exc
        return cls.from_dict(data)


def _step_from_dict(d: dict[str, Any]) -> StepRecord:
    if not isinstance(d, dict):
        raise TypeError(f"a step must be an object, got {type(d).__name__}")
    d = dict(d)
    d["forest"] = [TreeNode(**n) for n in d.get("forest", [])]
    d["committed"] = [CommittedToken(**c) for c in d.get("committed", [])]
    d["positions"] = [PositionRecord(**r) for r in d.get("positions", [])]
    return StepRecord(**d)


def _conforms(value: Any, hint: Any) -> bool:
    """Whether decoded JSON ``value`` has the type ``hint`` of a trace field (``Any`` accepts all;
    an int is a float, a bool is neither)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if origin is Literal:
        return isinstance(value, str) and value in args
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(isinstance(k, str) and _conforms(v, args[1]) for k, v in value.items())
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if is_dataclass(hint):
        return isinstance(value, hint)
    return True


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _check_fields(obj: Any, where: str) -> None:
    """Raise ``TraceFormatError`` naming the first field of ``obj`` (recursively) of the wrong type."""
    for name, hint in _hints(type(obj)).items():
        value = getattr(obj, name)
        if not _conforms(value, hint):
            raise TraceFormatError(f"Malformed trace: {where}.{name} is {type(value).__name__}, expected {hint}.")
        if isinstance(value, list):
            for i, item in enumerate(value):
                if is_dataclass(item):
                    _check_fields(item, f"{where}.{name}[{i}]")
