"""The per-step record of a decoding run: ``RunTrace`` / ``StepRecord`` / ``TreeNode``.

A trace is plain data. It can be written to JSON and read back with no model loaded, and every
figure and metric in specviz is computed from it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import threading
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from itertools import chain, islice, repeat
from typing import Any, Callable, Iterator, Literal

from specviz.errors import TraceFormatError
from specviz.json_values import describe, nests_within, require_shallow
from specviz.step_state import ControllerState, read_state

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
        kwargs = _checked_fields(cls, data, "")
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


_ORJSON_DEPTH = 1024  # how deep orjson reads since 3.9.15; older releases recurse without a bound


def _bounded(module: Any) -> bool:
    """Whether ``module.loads`` refuses JSON nested past ``_ORJSON_DEPTH`` (an older orjson reads any depth,
    so what it returns could be deeper than anything here can walk)."""
    deep = _ORJSON_DEPTH + 1
    try:
        module.loads(b"[" * deep + b"]" * deep)
    except ValueError:
        return True
    except RecursionError:  # pragma: no cover - not an orjson
        pass
    return False


try:  # gradio depends on orjson: about twice as fast as json.loads on a large trace
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None
if _orjson is not None and not _bounded(_orjson):  # pragma: no cover - an orjson older than 3.9.15
    _orjson = None

# ``loads``' scan for an integer literal of 19 digits or more (outside 64 bits, where orjson would give a
# float): digits -> "0", what may come before a number (whitespace, ":", ",", "[") and "-" -> " ",
# anything else -> "x". A float's digits follow "." or "e"; a string's may match too (then json.loads).
_DIGITS = bytes(48 if chr(c).isdigit() and c < 128 else 32 if chr(c) in " \t\n\r:,[-" else 120 for c in range(256))
_BIG_INT = b" " + b"0" * 19


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads(text)``, the same values (types, key order, floats to the bit) and the same errors, in
    about half the time on a large trace: orjson parses what it parses exactly as json does, and
    everything else goes to ``json.loads`` (which then decides, and says what is wrong): what orjson
    refuses (NaN, Infinity, 1e999, lone surrogates, nesting past 1024, not UTF-8, a UTF-16 file) and
    any integer literal of 19 digits or more, which orjson would read as a float (found by a scan in C:
    ``_DIGITS``; a long digit run inside a string only costs the slower parse). One difference: text
    nested deeper than ``json.loads`` recurses (Python's recursion limit, less the caller's stack) but at
    most 1024 levels is read, not refused; callers bound the depth they accept (``json_values``). An
    orjson that reads any depth (before 3.9.15) is not used."""
    if _orjson is None:
        return json.loads(text)
    try:
        raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    except UnicodeEncodeError:  # a lone surrogate in the text itself
        return json.loads(text)
    if _BIG_INT not in b" " + raw[:24].translate(_DIGITS) and _BIG_INT not in raw.translate(_DIGITS):
        try:
            return _orjson.loads(raw)
        except ValueError:  # orjson.JSONDecodeError
            pass
    return json.loads(text)


_gc_lock = threading.Lock()
_gc_state = {"depth": 0, "was_enabled": False}


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a large trace is read, checked or first drawn (issue #23).

    Reading a 12,000-step trace makes some 400,000 containers; every 700 of them the collector runs, and
    every so often it walks them all, which took a third of an upload's time. Nothing read or built here
    makes a cycle, so nothing is lost by collecting once afterwards, as the collector then does on its
    own. Nested and concurrent uses (two uploads at once) share one pause: the collector is enabled again
    when the last one ends, if it was enabled when the first began."""
    with _gc_lock:
        if _gc_state["depth"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["depth"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["depth"] -= 1
            if _gc_state["depth"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


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
    return LayerLens(**_checked_fields(LayerLens, value, where))


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
    passes ``_well_formed`` (what ``to_json`` writes always does), checked a field at a time over all of
    them (``_all_well_formed``) instead of an object at a time, and every controller state reads as its
    type; ``None`` otherwise, and the per-object path (``_step_from_dict``) then builds them or names the
    first problem. ``own``: see ``RunTrace._read``; ``legacy``: see ``_read_state``."""
    if type(rows) is not list:
        return None
    step_keys = _all_well_formed(StepRecord, rows)
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
        keys = _all_well_formed(cls, flat)
        if keys is None:
            return None
        it = iter(_build(cls, flat, keys, own))
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
    steps = _build(StepRecord, rows, keys, True)
    for step, state in zip(steps, states):
        step.controller = state
    return steps


def _adopt(cls: type, data: dict[str, Any]) -> Any:
    obj = object.__new__(cls)
    obj.__dict__ = data
    return obj


def _build(cls: type, rows: list[dict[str, Any]], keys: set[tuple[str, ...]], own: bool) -> list[Any]:
    """``cls(**row)`` for each row (all well formed); where the rows are this call's and each has every
    field in declaration order (``keys``: the rows' key orders), the row becomes the object's ``__dict__``
    as it is, which is what ``__init__`` would make of it, in a quarter of the time."""
    if own and keys <= {_schema(cls)[4]}:
        return list(map(functools.partial(_adopt, cls), rows))
    return [cls(**row) for row in rows]


def _all_well_formed(cls: type, rows: list[Any]) -> set[tuple[str, ...]] | None:
    """Whether every row passes ``_well_formed(cls, row)``, checked by shape: the distinct (key order,
    value types) pairs of the rows (a trace has a handful) each once, then, for a list field whose items
    are typed, all its lists' items at once. The rows' distinct key orders if so, else ``None``."""
    if not rows:
        return set()
    if set(map(type, rows)) != {dict}:
        return None
    names, required, simple, items, _, objects = _schema(cls)
    for name in objects:  # free-form objects: most hold no container at all, and those are checked at once
        found = [v for v in map(dict.get, rows, repeat(name)) if type(v) is dict]
        if {list, dict} & set(map(type, chain.from_iterable(map(dict.values, found)))) and not all(
            map(nests_within, found)
        ):
            return None
    shapes = set(zip(map(tuple, rows), map(tuple, map(map, repeat(type), map(dict.values, rows)))))
    orders = set()
    for keys, kinds in shapes:
        if keys not in orders:
            found = frozenset(keys)
            if not (found <= names and required <= found):
                return None
            orders.add(keys)
        for name, kind in zip(keys, kinds):
            if kind not in simple[name] and not (kind is list and name in items):
                return None
    for name, allowed in items.items():
        if allowed is not None:
            lists = [v for v in map(dict.get, rows, repeat(name)) if type(v) is list]
            if not set(map(type, chain.from_iterable(lists))) <= allowed:
                return None
    return orders


def _step_from_dict(d: dict[str, Any], where: str = "a step", legacy: bool = False) -> StepRecord:
    kwargs = _checked_fields(StepRecord, d, where)
    for name, cls in (("forest", TreeNode), ("committed", CommittedToken), ("positions", PositionRecord)):
        items = kwargs.get(name, [])
        kwargs[name] = [cls(**_checked_fields(cls, item, f"{where}.{name}[{j}]")) for j, item in enumerate(items)]
    kwargs["lens"] = _read_lens(kwargs.get("lens"), f"{where}.lens")
    return _read_state(StepRecord(**kwargs), where, legacy)


_TYPE_WORDS = {
    "int": "a whole number",
    "float": "a number",
    "str": "a string",
    "bool": "true or false",
    "list": "a list",
    "dict": "an object",
    "None": "null",
    "ControllerState": "an object",
    "LayerLens": "an object",
}


def _matches(value: Any, alternative: str) -> bool:
    base = alternative.split("[", 1)[0]
    if base == "None":
        return value is None
    if base == "bool":
        return isinstance(value, bool)
    if base == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if base == "float":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base == "str":
        return isinstance(value, str)
    if base in ("dict", "ControllerState", "LayerLens"):  # a state or lens is read from its object afterwards
        return isinstance(value, dict)
    if base == "list":
        if not isinstance(value, list):
            return False
        item = alternative[5:-1]
        return item not in ("int", "float") or all(_matches(v, item) for v in value)
    return True


_EXACT = {
    "None": type(None),
    "bool": bool,
    "int": int,
    "str": str,
    "dict": dict,
    "ControllerState": dict,
    "LayerLens": dict,
}


@functools.lru_cache(maxsize=None)
def _schema(
    cls: type,
) -> tuple[
    frozenset[str],
    frozenset[str],
    dict[str, frozenset[type]],
    dict[str, frozenset[type] | None],
    tuple[str, ...],
    frozenset[str],
]:
    """``cls``'s declared field names, required names and, per field, the exact types ``_matches``
    accepts (``float``: int or float; never ``bool`` for a number) and, for a list field, the exact
    types its items may have (``None``: any); the names in declaration order; and the object fields,
    whose contents are free-form and must nest within ``json_values.FREE_DEPTH``."""
    declared = {f.name: f for f in fields(cls)}
    required = frozenset(f.name for f in declared.values() if f.default is MISSING and f.default_factory is MISSING)
    simple: dict[str, frozenset[type]] = {}
    items: dict[str, frozenset[type] | None] = {}
    objects = frozenset(name for name, f in declared.items() if "dict[" in str(f.type))
    for name, f in declared.items():
        kinds: set[type] = set()
        for alternative in (a.strip() for a in str(f.type).split("|")):
            base = alternative.split("[", 1)[0]
            if base == "list":
                item = alternative[5:-1]
                items[name] = {"int": frozenset({int}), "float": frozenset({int, float})}.get(item)
            elif base == "float":
                kinds |= {int, float}
            elif base in _EXACT:
                kinds.add(_EXACT[base])
            else:
                kinds = {object}  # a kind ``_matches`` does not check: leave it to the slow path
        simple[name] = frozenset(kinds)
    return frozenset(declared), required, simple, items, tuple(declared), objects


def _well_formed(cls: type, data: dict[str, Any]) -> bool:
    """Whether ``data`` passes ``_explained_fields`` for ``cls``, by exact types (what ``json.loads``
    makes): a few times faster on a large trace; False sends it to the slow path."""
    names, required, simple, items, _, objects = _schema(cls)
    if not (data.keys() <= names and required <= data.keys()):
        return False
    if not all(nests_within(data[name]) for name in objects & data.keys()):
        return False
    for name, value in data.items():
        kind = type(value)
        if kind in simple[name]:
            continue
        if kind is list and name in items:
            allowed = items[name]
            if allowed is None or set(map(type, value)) <= allowed:
                continue
        return False
    return True


def _checked_fields(cls: type, data: Any, where: str) -> dict[str, Any]:
    """``data``'s fields for ``cls``, refusing in words a non-object, a missing or unknown field, or a
    value of the wrong kind (the dataclass annotations are the schema). A well-formed object passes
    ``_well_formed``; anything else is examined by ``_explained_fields``, which says what is wrong."""
    if type(data) is dict and _well_formed(cls, data):
        return dict(data)
    return _explained_fields(cls, data, where)


def _explained_fields(cls: type, data: Any, where: str) -> dict[str, Any]:
    """``_checked_fields`` by the slow path, which names the first problem."""
    if not isinstance(data, dict):
        raise TraceFormatError(f"Malformed trace: {where} should be an object, got {describe(data)}.")
    at = f" of {where}" if where else ""
    declared = {f.name: f for f in fields(cls)}
    unknown = [k for k in data if k not in declared]
    if unknown:
        raise TraceFormatError(
            f"Malformed trace: unknown field {', '.join(map(repr, unknown))}{at} "
            f"(the fields are: {', '.join(declared)})."
        )
    missing = [
        f.name
        for f in declared.values()
        if f.name not in data and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise TraceFormatError(
            f"Malformed trace: the required field{'s' if len(missing) > 1 else ''} "
            f"{', '.join(map(repr, missing))}{at} {'are' if len(missing) > 1 else 'is'} missing."
        )
    objects = _schema(cls)[5]
    for name, value in data.items():
        path = f"{where}.{name}" if where else name
        alternatives = [a.strip() for a in str(declared[name].type).split("|")]
        if not any(_matches(value, a) for a in alternatives):
            expected = " or ".join(_TYPE_WORDS.get(a.split("[", 1)[0], a) for a in alternatives)
            if alternatives[0] in ("list[int]", "list[float]"):
                expected += " of whole numbers" if alternatives[0] == "list[int]" else " of numbers"
            raise TraceFormatError(f"Malformed trace: {path} should be {expected}, got {describe(value)}.")
        if name in objects:
            require_shallow(value, path)
    return dict(data)
