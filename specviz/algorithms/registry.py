"""The algorithm registry: name -> ``AlgorithmSpec`` (function, declared parameters, description, paper).

Each algorithm module registers itself with ``@register(...)``. Parameters are declared with their
defaults and ranges so the CLI and the app can build controls and validate input from one place.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

from specviz.errors import InvalidParameterError, UnknownAlgorithmError


@dataclass(frozen=True)
class Param:
    """One algorithm parameter: ``kind`` is ``int``, ``float``, ``bool``, ``choice`` or ``str``.

    ``applies_when = (other, values)``: the parameter has an effect only while parameter ``other`` of
    the same algorithm is one of ``values`` (the app shows its control only then); ``None``: always.
    It never changes validation or defaults: a parameter that does not apply is still resolved."""

    name: str
    default: Any
    kind: str = "int"
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] = ()
    help: str = ""
    applies_when: tuple[str, tuple[Any, ...]] | None = None

    def applies(self, values: Mapping[str, Any]) -> bool:
        """Whether this parameter has an effect given the other parameters' ``values`` (a missing
        controlling value counts as applying)."""
        if self.applies_when is None:
            return True
        other, allowed = self.applies_when
        return other not in values or values[other] in allowed

    def validate(self, value: Any, algorithm: str) -> Any:
        where = f"{algorithm}: parameter {self.name!r}"
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise InvalidParameterError(f"{where} must be an integer, got {value!r}.")
        elif self.kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidParameterError(f"{where} must be a number, got {value!r}.")
            value = float(value)
        elif self.kind == "bool":
            if not isinstance(value, bool):
                raise InvalidParameterError(f"{where} must be true or false, got {value!r}.")
        elif self.kind == "choice":
            if value not in self.choices:
                raise InvalidParameterError(f"{where} must be one of {list(self.choices)}, got {value!r}.")
        elif self.kind == "str" and not isinstance(value, str):
            raise InvalidParameterError(f"{where} must be text, got {value!r}.")
        if self.min is not None and value < self.min or self.max is not None and value > self.max:
            raise InvalidParameterError(f"{where} must be in [{self.min}, {self.max}], got {value!r}.")
        return value


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm. ``run(decoder, **params)`` yields one ``StepRecord`` per target call."""

    name: str
    run: Callable[..., Iterator[Any]]
    description: str
    paper: str
    params: tuple[Param, ...] = ()
    needs_draft: bool = True
    lossless: bool = True
    controller: str | None = None  # kind of controller state its steps carry, if any
    drafter: str = "draft"  # what makes its draft calls: "draft" (the draft model) or "early_exit"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def resolve(self, given: dict[str, Any]) -> dict[str, Any]:
        """Defaults overlaid with ``given``, each value validated; unknown names are refused."""
        known = {p.name: p for p in self.params}
        unknown = sorted(set(given) - set(known))
        if unknown:
            valid = ", ".join(known) or "none"
            raise InvalidParameterError(f"{self.name}: unknown parameter(s) {unknown}; valid: {valid}.")
        return {name: p.validate(given.get(name, p.default), self.name) for name, p in known.items()}

    def effective(self, params: dict[str, Any]) -> dict[str, Any]:
        """The entries of ``params`` that have an effect (``Param.applies``: e.g. no Thompson-sampling
        prior under ``controller=static``); names it does not declare are kept."""
        declared = {p.name: p for p in self.params}
        return {k: v for k, v in params.items() if k not in declared or declared[k].applies(params)}


ALGORITHMS: dict[str, AlgorithmSpec] = {}


def register(name: str, *, description: str, paper: str, params: tuple[Param, ...] = (),
             needs_draft: bool = True, lossless: bool = True, controller: str | None = None, drafter: str = "draft"):
    """Decorator registering a step generator under ``name``."""

    def wrap(fn):
        ALGORITHMS[name] = AlgorithmSpec(name, fn, description, paper, params, needs_draft, lossless, controller,
                                         drafter)
        return fn

    return wrap


def get_algorithm(name: str) -> AlgorithmSpec:
    if name not in ALGORITHMS:
        raise UnknownAlgorithmError(f"Unknown algorithm {name!r}; registered: {', '.join(ALGORITHMS)}.")
    return ALGORITHMS[name]
