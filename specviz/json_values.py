"""Words for a JSON value read from an untrusted file, and a bound on how deep its free-form parts nest.

A trace's schema types every field; the free-form ones (a run's ``params`` and ``metrics``, a step's
``rule``, a state kind unknown here) may hold any JSON. Python handles nesting by recursion (``json``,
``copy``, ``repr``), which a file nested a few thousand levels deep turns into a ``RecursionError`` at a
depth that depends on the caller's stack and on whoever last raised ``sys.setrecursionlimit``. These
helpers never recurse, so a reader can refuse such a value in words whatever the limit is.
"""

from __future__ import annotations

import json
from typing import Any

from specviz.errors import TraceFormatError

FREE_DEPTH = 16  # what specviz writes there nests 1 or 2 levels deep (the golden traces, a live run)
_EXCERPT = 40  # characters of a value quoted in a message


def nests_within(value: Any, depth: int = FREE_DEPTH) -> bool:
    """Whether ``value`` holds lists and objects at most ``depth`` levels deep (``1``, ``"a"``: 0;
    ``[1]``: 1; ``{"a": [1]}``: 2), found level by level without recursion."""
    level = [value]
    for _ in range(depth + 1):  # the containers one level down, until none or one level too many
        level = [c for c in level if type(c) in (list, dict)]
        if not level:
            return True
        level = [v for c in level for v in (c.values() if type(c) is dict else c)]
    return False


def require_shallow(value: Any, path: str) -> None:
    """Refuse, naming ``path``, a free-form value nested deeper than ``FREE_DEPTH`` (``nests_within``)."""
    if not nests_within(value):
        raise TraceFormatError(f"Malformed trace: {path} nests lists and objects more than {FREE_DEPTH} levels deep.")


def kind_words(value: Any) -> str:
    """A JSON value's kind in words: "a list", "a whole number", ..."""
    return {
        bool: "true/false",
        int: "a whole number",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "an object",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def describe(value: Any) -> str:
    """A JSON value's kind in words with a short excerpt where it has one: "a list ([1, 2])", "a string";
    a container is quoted only when small and shallow, so any value is safe to describe."""
    kind = kind_words(value)
    if value is None:
        return kind
    if type(value) in (list, dict) and (len(value) > _EXCERPT or not nests_within(value, 3)):
        return kind
    if type(value) is str and len(value) > _EXCERPT:
        return kind
    try:
        shown = json.dumps(value, default=str)
    except ValueError:  # an integer of more than 4300 digits
        return kind
    return kind if len(shown) > _EXCERPT else f"{kind} ({shown})"
