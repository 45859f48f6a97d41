"""A trace's schema is its dataclasses' annotations: reading a JSON object into a dataclass's fields,
refusing in words a non-object, a missing or unknown field or a value of the wrong kind
(``checked_fields``), and the bulk path a large trace takes, which checks all rows of one class a field
at a time (``all_well_formed``) and builds them (``build``). Generic over the dataclass: ``specviz.trace``
reads its records with it."""

from __future__ import annotations

import functools
from dataclasses import MISSING, fields
from itertools import chain, repeat
from typing import Any

from specviz.errors import TraceFormatError
from specviz.json_values import describe, nests_within, require_shallow


def _adopt(cls: type, data: dict[str, Any]) -> Any:
    obj = object.__new__(cls)
    obj.__dict__ = data
    return obj


def build(cls: type, rows: list[dict[str, Any]], keys: set[tuple[str, ...]], own: bool) -> list[Any]:
    """``cls(**row)`` for each row (all well formed); where the rows are this call's and each has every
    field in declaration order (``keys``: the rows' key orders), the row becomes the object's ``__dict__``
    as it is, which is what ``__init__`` would make of it, in a quarter of the time."""
    if own and keys <= {_schema(cls)[4]}:
        return list(map(functools.partial(_adopt, cls), rows))
    return [cls(**row) for row in rows]


def all_well_formed(cls: type, rows: list[Any]) -> set[tuple[str, ...]] | None:
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


def checked_fields(cls: type, data: Any, where: str) -> dict[str, Any]:
    """``data``'s fields for ``cls``, refusing in words a non-object, a missing or unknown field, or a
    value of the wrong kind (the dataclass annotations are the schema). A well-formed object passes
    ``_well_formed``; anything else is examined by ``_explained_fields``, which says what is wrong."""
    if type(data) is dict and _well_formed(cls, data):
        return dict(data)
    return _explained_fields(cls, data, where)


def _explained_fields(cls: type, data: Any, where: str) -> dict[str, Any]:
    """``checked_fields`` by the slow path, which names the first problem."""
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
