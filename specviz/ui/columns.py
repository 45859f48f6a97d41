"""Columns are configurations: each column of the page is one (algorithm, its settings), and the same
algorithm may fill several columns with different settings (no Gradio here).

A columns value is a list of ``{"algorithm": name, "params": {setting: value}}``: what the page's
column editor keeps (every setting of the column, so the editor can show it) and what ``/run`` and
``/measure`` take through the API (a bare name stands for that algorithm at its defaults; a setting
left out is its default). ``check_columns`` is the server's check of such a value, whoever sent it;
each setting's value is then checked by ``AlgorithmSpec.resolve`` as the run starts, as before.

``column_labels`` names the columns by what tells them apart: an algorithm that fills one column is
its name alone (its header shows its settings), and same-algorithm columns add every setting whose value
differs between them (``sd · gamma 2`` and ``sd · gamma 8``), each in the columns where it has an effect
(``differing_settings``). ``column_colors`` gives an algorithm's first column its colour and each further
column of that algorithm a shade of it, so every column has its own colour in its header and in the
comparison figures.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from specviz.algorithms.registry import AlgorithmSpec, Param
from specviz.viz.style import algorithm_color

SEP = " · "
VALUE_CHARS = 16  # a setting's value in a label, at most (then an ellipsis)
MAX_TEXT = 400  # the longest text the editor keeps for one setting (Param.validate says more)


def param_value(param: Param, raw: Any) -> Any:
    """A component's value converted to what ``AlgorithmSpec.resolve`` validates (an emptied box's None
    is refused there, naming the parameter, not run as the default): a dropdown sends its choice's index."""
    if raw is None:
        return None
    if param.kind == "choice":
        if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < len(param.choices):
            return param.choices[raw]
        return raw
    return normalised(param, raw)


def normalised(param: Param, value: Any) -> Any:
    """A whole float for an int setting as an int, an int for a float setting as a float (JSON and the
    browser do not tell 4 from 4.0); anything else as it is."""
    if param.kind == "int" and isinstance(value, float) and value.is_integer():
        return int(value)
    if param.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def storable(value: Any) -> Any:
    """``value`` as the column editor may keep it in the page (JSON): numbers JSON can hold, text cut to
    ``MAX_TEXT``, anything else as its text; ``Param.validate`` refuses it by name at Run."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value[:MAX_TEXT]
    return str(value)[:MAX_TEXT]


def default_column(spec: AlgorithmSpec) -> dict[str, Any]:
    return {"algorithm": spec.name, "params": dict(spec.defaults)}


def shown(value: Any, limit: int = 40) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short(value: Any, limit: int = VALUE_CHARS) -> str:
    """A setting's value in a label (or a header): its text, cut to ``limit`` characters."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_columns(
    raw: Any, algorithms: Mapping[str, AlgorithmSpec], most: int
) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """``([(algorithm, settings)], None)`` for a valid columns value, else ``([], sentence)``: at least one
    and at most ``most`` columns, each a registered algorithm (or its name) with only settings it
    declares; the settings come back complete (defaults for those left out), their values checked by
    ``AlgorithmSpec.resolve`` when the run starts."""
    if raw is None or (isinstance(raw, (list, tuple)) and not raw):
        return [], "Select at least one algorithm: add a column."
    if not isinstance(raw, (list, tuple)):
        return [], (
            "The columns must be a list of columns, each an algorithm's name or "
            '{"algorithm": name, "params": {setting: value}}.'
        )
    if len(raw) > most:
        return [], f"At most {most} columns at once; you asked for {len(raw)}."
    out = []
    for i, item in enumerate(raw, 1):
        if isinstance(item, str):
            name, given = item, {}
        elif (
            isinstance(item, Mapping)
            and isinstance(item.get("algorithm"), str)
            and set(item) <= {"algorithm", "params"}
        ):
            name, given = item["algorithm"], item.get("params", {})
        else:
            return [], (
                f'Column {i} must be an algorithm\'s name or {{"algorithm": name, "params": {{...}}}}; '
                f"got {shown(item)}."
            )
        spec = algorithms.get(name)
        if spec is None:
            return [], f"Column {i}: unknown algorithm {shown(name)}; registered: {', '.join(algorithms)}."
        if given is None:
            given = {}
        if not isinstance(given, Mapping) or not all(isinstance(k, str) for k in given):
            return [], f"Column {i} ({name}): its params must be an object of setting names to values."
        declared = {p.name: p for p in spec.params}
        unknown = [k for k in given if k not in declared]
        if unknown:
            return [], (
                f"Column {i} ({name}): {name} has no setting {shown(unknown[0])}; its settings: "
                f"{', '.join(declared) or 'none'}."
            )
        out.append((name, {**spec.defaults, **{k: normalised(declared[k], v) for k, v in given.items()}}))
    return out, None


def effective(spec: AlgorithmSpec | None, params: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that have an effect, defaults filled in (all given ones for an unknown algorithm)."""
    if spec is None:
        return dict(params)
    full = {**spec.defaults, **params}
    return spec.effective(full)


def differing_settings(columns: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> list[list[str]]:
    """Per column, the names of the settings whose values differ among ``columns`` (one algorithm's
    ``(defaults, effective settings)``), in first-seen order. A setting without an effect in a column
    counts as its default there (``alpha0`` under ``controller=confidence``), so a setting is named only
    where it has an effect and only if some column sets it otherwise."""
    missing = object()
    keys = list(dict.fromkeys(k for _, eff in columns for k in eff))

    def value(defaults: Mapping[str, Any], eff: Mapping[str, Any], k: str) -> str:
        return repr(eff[k] if k in eff else defaults.get(k, missing))

    differ = [k for k in keys if len({value(d, e, k) for d, e in columns}) > 1]
    return [[k for k in differ if k in eff] for _, eff in columns]


def column_labels(
    configs: Sequence[tuple[str, Mapping[str, Any]]], algorithms: Mapping[str, AlgorithmSpec] | None = None
) -> list[str]:
    """One distinct label per column: the algorithm's name alone for a lone column of its algorithm,
    and for an algorithm in several columns its name and every setting that differs between those
    columns (``differing_settings``); same-algorithm columns that nothing tells apart are numbered."""
    if algorithms is None:
        from specviz.algorithms.registry import ALGORITHMS as algorithms
    names = [a for a, _ in configs]
    specs = [algorithms.get(a) for a in names]
    eff = [effective(spec, p) for spec, (_, p) in zip(specs, configs)]
    labels = list(names)
    for algo in dict.fromkeys(names):
        idx = [i for i, a in enumerate(names) if a == algo]
        if len(idx) < 2:
            continue
        defaults = specs[idx[0]].defaults if specs[idx[0]] is not None else {}
        for i, keys in zip(idx, differing_settings([(defaults, eff[i]) for i in idx])):
            bits = [f"{k} {short(eff[i][k])}" for k in keys]
            labels[i] = algo + (SEP + ", ".join(bits) if bits else "")
    for i, label in enumerate(list(labels)):  # still the same: number them
        same = [j for j, other in enumerate(labels) if other == label]
        if len(same) > 1:
            for n, j in enumerate(same, 1):
                labels[j] = f"{label} #{n}"
    return labels


def _mix(color: str, toward: tuple[int, int, int], t: float) -> str:
    r, g, b = (int(color[k : k + 2], 16) for k in (1, 3, 5))
    mixed = (round(c + (w - c) * t) for c, w in zip((r, g, b), toward))
    return "#" + "".join(f"{c:02x}" for c in mixed)


# a repeat's shade of its algorithm's colour: darker, lighter, then further each way
SHADES: tuple[tuple[tuple[int, int, int], float], ...] = (
    ((0, 0, 0), 0.45),
    ((255, 255, 255), 0.45),
    ((0, 0, 0), 0.7),
    ((255, 255, 255), 0.68),
    ((0, 0, 0), 0.25),
)


def shade(color: str, k: int) -> str:
    """The ``k``-th repeat's colour (0: ``color`` itself)."""
    if k <= 0 or not (isinstance(color, str) and len(color) == 7 and color.startswith("#")):
        return color
    toward, t = SHADES[(k - 1) % len(SHADES)]
    return _mix(color, toward, t)


def column_colors(algorithms: Sequence[str]) -> list[str]:
    """Each column's colour: its algorithm's for the algorithm's first column, a shade of it for the next."""
    seen: dict[str, int] = {}
    out = []
    for name in algorithms:
        k = seen.get(name, 0)
        seen[name] = k + 1
        out.append(shade(algorithm_color(name), k))
    return out


# ---- the column editor's operations on a columns value (the page's; lenient: they never raise) ----------
def editable(raw: Any, algorithms: Mapping[str, AlgorithmSpec], most: int) -> list[dict[str, Any]]:
    """The page's columns value as the editor works on it: at most ``most`` registered columns, each with
    every setting of its algorithm (defaults for those missing); anything else is dropped."""
    out: list[dict[str, Any]] = []
    for item in raw if isinstance(raw, (list, tuple)) else []:
        name = item if isinstance(item, str) else item.get("algorithm") if isinstance(item, Mapping) else None
        spec = algorithms.get(name) if isinstance(name, str) else None
        if spec is None:
            continue
        given = item.get("params") if isinstance(item, Mapping) else None
        given = given if isinstance(given, Mapping) else {}
        params = {p.name: storable(given[p.name]) if p.name in given else p.default for p in spec.params}
        out.append({"algorithm": spec.name, "params": params})
        if len(out) == most:
            break
    return out


def picked(raw: Any, n: int) -> int:
    """The editor's selected column as an index into ``n`` columns (0 for anything else)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw) or n == 0:
        return 0
    return max(0, min(int(raw), n - 1))


def with_algorithms(
    cols: list[dict[str, Any]], chosen: Any, algorithms: Mapping[str, AlgorithmSpec], most: int
) -> list[dict[str, Any]]:
    """The columns after the algorithm checkboxes became ``chosen``: every column of an unchecked algorithm
    goes, a newly checked one gets a column at its defaults at the end (while fewer than ``most``)."""
    names = [a for a in chosen if isinstance(a, str) and a in algorithms] if isinstance(chosen, (list, tuple)) else []
    out = [c for c in cols if c["algorithm"] in names]
    for name in names:
        if len(out) >= most:
            break
        if not any(c["algorithm"] == name for c in out):
            out.append(default_column(algorithms[name]))
    return out


def duplicated(cols: list[dict[str, Any]], i: int, most: int) -> tuple[list[dict[str, Any]], int]:
    """A copy of column ``i`` right after it (selected); unchanged at ``most`` columns."""
    if not cols or len(cols) >= most:
        return cols, i
    copy = {"algorithm": cols[i]["algorithm"], "params": dict(cols[i]["params"])}
    return cols[: i + 1] + [copy] + cols[i + 1 :], i + 1


def removed(cols: list[dict[str, Any]], i: int) -> tuple[list[dict[str, Any]], int]:
    """Without column ``i``; the one that took its place (or the last) is selected."""
    if not cols:
        return cols, 0
    out = cols[:i] + cols[i + 1 :]
    return out, max(0, min(i, len(out) - 1))


def with_setting(cols: list[dict[str, Any]], i: int, algorithm: str, param: Param, raw: Any) -> list[dict[str, Any]]:
    """Column ``i`` with setting ``param`` of ``algorithm`` set to the control's value ``raw`` (if column
    ``i`` is of that algorithm: a control of another algorithm's settings changes nothing)."""
    if not 0 <= i < len(cols) or cols[i]["algorithm"] != algorithm:
        return cols
    out = [dict(c) for c in cols]
    out[i] = {"algorithm": algorithm, "params": {**cols[i]["params"], param.name: storable(param_value(param, raw))}}
    return out
