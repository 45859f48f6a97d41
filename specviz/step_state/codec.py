"""The codec of the typed step state (``specviz.step_state``): ``Record``, ``ControllerState``, ``read_state``.

Each controller kind has one frozen dataclass (a ``ControllerState``, in this package's module of its
family), each row inside it a small frozen ``Record``: the views read typed fields, never a dict. A
state writes itself as the same JSON object the dict-based controllers wrote (``to_json``:
``{"kind": ..., fields in declaration order}``, so traces and ``tests/data/golden`` are unchanged)
and reads itself back once, checking every field's type (``read_state``: a ``TraceFormatError``
sentence names the bad field). The codec is declarative: a field's annotation is its schema (``int``, ``float``,
``bool``, ``str``, ``X | None``, ``tuple[T, ...]`` from a JSON list, a nested ``Record``, ``dict[str, Any]`` free-form);
``field`` metadata: ``key`` (a JSON key that is no identifier, ``"continue"``), ``flat`` (a nested record whose
keys sit in the parent object), ``omit_none`` (written only when set; absent reads as ``None``). A
field with a default may be absent (keys an older trace did not write).

``STATE_TYPES`` maps each ``kind`` to its type (filled by subclassing); an unknown kind reads as
``UnknownState`` (the raw object kept, drawn by the generic view with a note), as does a state of a
known kind in a trace older than schema 6 whose layout this version cannot type (the migration: an
old trace still replays). ``STATE_VERSION`` is the version of this layout (trace schema 6).

No torch here: a trace is read and drawn without the model stack. A new state family imports only
this module (``Record``, ``ControllerState``, ``key``, ``flat``, ``optional``).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Union

from specviz.errors import TraceFormatError
from specviz.json_values import describe, require_shallow

# The version of the layout below. A trace says which layout its states have by its ``schema_version``:
# 6 (``trace.TYPED_STATE_SINCE``) and later, this one, read strictly; 1 to 5, the dict-based controllers'
# objects, the same keys, read by ``read_state(..., legacy=True)``. A change of layout bumps both, and
# ``read_state`` migrates the older one.
STATE_VERSION = 1

Reader = Callable[[Any, Any], Any]


Where = Any  # a field's path: the trace's path (text), or (parent path, key or index), formatted on error


def _path(where: Where) -> str:
    parts = []
    while isinstance(where, tuple):
        where, k = where
        parts.append(f"[{k}]" if isinstance(k, int) else f".{k}")
    return str(where) + "".join(reversed(parts))


def _refuse(where: Where, expected: str, value: Any) -> TraceFormatError:
    return TraceFormatError(f"Malformed trace: {_path(where)} should be {expected}, got {describe(value)}.")


def read_object(value: Any, where: Where) -> dict[str, Any]:
    """A free-form object (``dict[str, Any]``): any JSON object whose lists and objects nest within
    ``json_values.FREE_DEPTH`` levels."""
    if type(value) is not dict:
        raise _refuse(where, "an object", value)
    require_shallow(value, _path(where))
    return value


# ---- the codec ------------------------------------------------------------------------------------------


def _scalar(expected: str, types_: tuple[type, ...] | None) -> tuple[Reader, str]:
    def read(value: Any, where: Where) -> Any:
        if types_ is not None and type(value) not in types_:
            raise _refuse(where, expected, value)
        return value

    return read, expected


# the exact types ``json.loads`` makes that each scalar annotation takes (never ``bool`` for a number)
_SCALAR_TYPES: dict[Any, tuple[type, ...]] = {
    int: (int,),
    float: (int, float),
    bool: (bool,),
    str: (str,),
    type(None): (type(None),),
}
_SCALARS: dict[Any, tuple[Reader, str]] = {
    int: _scalar("a whole number", (int,)),
    float: _scalar("a number", (int, float)),
    bool: _scalar("true or false", (bool,)),
    str: _scalar("a string", (str,)),
    type(None): _scalar("null", (type(None),)),
    Any: _scalar("any value", None),
}


@functools.lru_cache(maxsize=None)
def _reader(tp: Any) -> tuple[Reader, str]:
    """The reader of one annotation and its expectation in words."""
    if tp in _SCALARS:
        return _SCALARS[tp]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        parts = [_reader(a) for a in args]
        records = [a for a in args if isinstance(a, type) and issubclass(a, Record)]
        words = " or ".join(w for _, w in parts)
        simple = {t for a in args for t in _SCALAR_TYPES.get(a, ())}

        def read_union(value: Any, where: Where) -> Any:
            if type(value) in simple:
                return value
            if records and type(value) is dict:  # a tagged row: the first record type that claims it
                for r in records:
                    if r.claims(value):
                        return r.from_json(value, where)
            raise _refuse(where, words, value)

        return read_union, words
    if origin is tuple:
        item, words = _reader(args[0])
        if args[0] in (int, float):  # a list of numbers: checked at once
            allowed = {int} if args[0] is int else {int, float}

            def read_numbers(value: Any, where: Where) -> tuple[Any, ...]:
                if type(value) is not list:
                    raise _refuse(where, f"a list of {words}", value)
                if not set(map(type, value)) <= allowed:
                    for i, v in enumerate(value):
                        item(v, (where, i))
                return tuple(value)

            return read_numbers, f"a list of {words}"

        def read_tuple(value: Any, where: Where) -> tuple[Any, ...]:
            if type(value) is not list:
                raise _refuse(where, f"a list of {words}", value)
            return tuple([item(v, (where, i)) for i, v in enumerate(value)])

        return read_tuple, f"a list of {words}"
    if origin is dict:
        return read_object, "an object"
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp.from_json, "an object"
    raise TypeError(f"step_state: no JSON reader for {tp!r}")


def _write(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_json()
    if type(value) is tuple:
        return [_write(v) for v in value]
    return value


@dataclass(frozen=True)
class _Slot:
    name: str
    key: str
    read: Reader
    required: bool
    flat: type[Record] | None
    omit_none: bool
    default: Any


class Record:
    """A frozen dataclass read from and written to one JSON object by its annotations (module doc)."""

    @classmethod
    def claims(cls, data: dict[str, Any]) -> bool:
        """Whether a JSON object of a union of row types is this one (a tag key; default: any)."""
        return True

    @classmethod
    def json_keys(cls) -> frozenset[str]:
        """The JSON keys of this record, those of its flat records included."""
        return _keys(cls)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for s in _slots(type(self)):
            value = getattr(self, s.name)
            if s.flat is not None:
                out.update(value.to_json())
            elif not (s.omit_none and value is None):
                out[s.key] = _write(value)
        return out

    @classmethod
    def from_json(cls, data: Any, where: Where) -> Any:
        """Read ``data``, refusing a non-object, an unknown or missing key or a value of the wrong type."""
        if type(data) is not dict:
            raise _refuse(where, "an object", data)
        known = _keys(cls)
        if not data.keys() <= known:
            unknown = [k for k in data if k not in known]
            raise TraceFormatError(
                f"Malformed trace: unknown field {', '.join(map(repr, unknown))} of "
                f"{_path(where)} (the fields are: {', '.join(sorted(known - {'kind'}))})."
            )
        return _build(cls, data, where)


def _build(cls: type, data: dict[str, Any], where: Where) -> Any:
    """``cls`` from ``data``'s keys, each read by its slot; its fields set as ``__init__`` would set them
    (the dataclasses here have no ``__post_init__``), in a third of the time."""
    fields_: dict[str, Any] = {}
    for s in _slots(cls):
        if s.flat is not None:
            fields_[s.name] = _build(s.flat, data, where)
        elif s.key in data:
            fields_[s.name] = s.read(data[s.key], (where, s.key))
        elif s.required:
            raise TraceFormatError(f"Malformed trace: the required field {s.key!r} of {_path(where)} is missing.")
        else:
            fields_[s.name] = s.default
    obj = object.__new__(cls)
    obj.__dict__.update(fields_)
    return obj


@functools.lru_cache(maxsize=None)
def _slots(cls: type) -> tuple[_Slot, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        flat = hints[f.name] if f.metadata.get("flat") else None
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        out.append(
            _Slot(
                f.name,
                f.metadata.get("key", f.name),
                _reader(hints[f.name])[0],
                required,
                flat,
                bool(f.metadata.get("omit_none")),
                f.default,
            )
        )
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _keys(cls: type) -> frozenset[str]:
    """``cls``'s JSON keys (a state's ``"kind"`` among them)."""
    own = frozenset(k for s in _slots(cls) for k in ((s.key,) if s.flat is None else _keys(s.flat)))
    return own | {"kind"} if issubclass(cls, ControllerState) else own


def key(name: str) -> Any:
    """A field written under JSON key ``name`` (one that is no Python identifier)."""
    return field(metadata={"key": name})


def flat() -> Any:
    """A nested record whose keys sit in the parent JSON object."""
    return field(metadata={"flat": True})


def optional() -> Any:
    """A field written only when set (``None``: absent)."""
    return field(default=None, metadata={"omit_none": True})


# ---- states -------------------------------------------------------------------------------------------

STATE_TYPES: dict[str, type["ControllerState"]] = {}


@dataclass(frozen=True, kw_only=True)
class ControllerState(Record):
    """What one step's controller recorded. A subclass names its ``kind`` (and so registers itself)."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.__dict__.get("kind"):
            STATE_TYPES[cls.kind] = cls

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, **super().to_json()}

    def check_values(self, path: str, nodes: int | None = None) -> None:
        """Raise ``TraceFormatError`` (the field's path) unless the values the views draw are in their
        ranges (``trace_check.check_controller``; the types were checked when the state was read).
        ``nodes``: the step's drafted nodes. None to check here; a kind with such values overrides it."""


@dataclass(frozen=True)
class UnknownState(ControllerState):
    """A state this specviz cannot type: an unknown ``kind`` (a newer specviz, another tool) or an older
    trace's layout. The raw object is kept as read and written back as it was; ``note`` says why in a
    few words (the generic view shows it), ``detail`` what did not read."""

    data: dict[str, Any]
    note: str = ""
    detail: str = ""

    @property
    def kind_name(self) -> str:
        return str(self.data.get("kind", "state"))

    def to_json(self) -> dict[str, Any]:
        return self.data


def read_state(data: Any, where: str, legacy: bool = False) -> ControllerState:
    """The typed state of a step's ``controller`` object. ``legacy``: the trace is older than schema 6,
    so a known kind whose layout does not read is kept as ``UnknownState`` instead of refused."""
    if type(data) is not dict:
        raise _refuse(where, "an object", data)
    kind = data.get("kind")
    if kind is not None and type(kind) is not str:
        raise _refuse(f"{where}.kind", "a string", kind)
    cls = STATE_TYPES.get(kind)
    if cls is None:
        return UnknownState(dict(read_object(data, where)), "a kind unknown here")
    try:
        return cls.from_json(data, where)
    except TraceFormatError as exc:
        if not legacy:
            raise
        return UnknownState(dict(read_object(data, where)), "an older layout, as stored", str(exc))
