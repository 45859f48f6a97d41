"""The algorithm registry: name -> ``AlgorithmSpec``, every fact about an algorithm in one place.

Each algorithm module registers itself with ``@register(...)``: its step generator, description and
paper; its parameters, declared with their defaults and ranges so the CLI and the app build controls
and validate input from one place; its cost bound for the public cap (``algorithms.cost``,
``ui.budget``); its colour in every figure; what drafts for it; and whether the page opens with it.
Nothing outside the algorithm's own module keeps a list or a branch keyed by its name
(``docs/architecture.md``, "Adding an algorithm").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from specviz import validation
from specviz.algorithms.cost import Cost
from specviz.errors import InvalidParameterError, SpecvizError, UnknownAlgorithmError


@dataclass(frozen=True)
class Param:
    """One algorithm parameter: ``kind`` is ``int``, ``float``, ``bool``, ``choice`` or ``str``; ``check``
    parses a ``str`` value further (``k_config``'s tree, Sequoia's acceptance vector) when it is resolved.

    ``applies_when = (other, values)``: the parameter has an effect only while parameter ``other`` of
    the same algorithm is one of ``values`` (the app shows its control only then); ``None``: always.
    It never changes validation or defaults: a parameter that does not apply is still resolved, but
    one given with a value other than its default is refused (``AlgorithmSpec.resolve``: ``gamma=7``
    under ``controller="beta_ts"`` would be ignored, not run)."""

    name: str
    default: Any
    kind: str = "int"
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] = ()
    help: str = ""
    applies_when: tuple[str, tuple[Any, ...]] | None = None
    max_len: int = validation.MAX_TEXT  # the longest text a ``str`` parameter takes
    check: Callable[[Any], Any] | None = None  # raises InvalidParameterError for a value of the right kind

    def applies(self, values: Mapping[str, Any]) -> bool:
        """Whether this parameter has an effect given the other parameters' ``values`` (a missing
        controlling value counts as applying)."""
        if self.applies_when is None:
            return True
        other, allowed = self.applies_when
        return other not in values or values[other] in allowed

    def validate(self, value: Any, algorithm: str) -> Any:
        """``value`` checked against the declared kind and range (``specviz.validation``: an int is an
        int, a float is finite, text at most ``max_len`` characters), then by ``check`` if declared."""
        where, name = f"{algorithm}: parameter {self.name!r}", self.name
        if self.kind == "int":
            value = validation.integer(where, value, self.min, self.max, param=name)
        elif self.kind == "float":
            value = validation.number(where, value, self.min, self.max, param=name)
        elif self.kind == "bool":
            value = validation.flag(where, value, param=name)
        elif self.kind == "choice":
            value = validation.choice(where, value, self.choices, param=name)
        elif self.kind == "str":
            value = validation.text(where, value, self.max_len, param=name)
        else:
            raise TypeError(f"{where}: unknown kind {self.kind!r}")  # a registration bug, not a user's
        if self.check is not None:
            try:
                self.check(value)
            except SpecvizError as exc:  # "k_config '4xtwo' is not of the form ...": about this parameter
                if exc.param is None:
                    validation.about(exc, name)
                raise
        return value


#: What makes an algorithm's draft calls (``AlgorithmSpec.drafter``): the pair's draft model, the
#: target's early-exit head, prompt lookup (no model), the pair's feature head, a drafter of the
#: algorithm's own that is no model, or nothing at all (the target alone).
DRAFTER_KINDS = ("draft", "early_exit", "prompt_lookup", "feature", "own", "none")
#: ``#rrggbb``: an algorithm's colour (``viz.style.algorithm_color``)
_HEX = "0123456789abcdef"


@dataclass(frozen=True)
class AlgorithmSpec:
    """A registered algorithm. ``run(decoder, **params)`` yields one ``StepRecord`` per target call.

    ``cost(params, steps)``: an upper bound on the token positions a run with the resolved ``params``
    reads in ``steps`` new tokens (``algorithms.cost``; checked against measured runs for every
    algorithm and controller by ``tests/test_budget_bound.py``). ``color``: its ``#rrggbb`` in every
    figure. ``drafter``: one of ``DRAFTER_KINDS``. ``page_rank``: where the page's default columns
    take it (lowest first; ``None``: not a default column)."""

    name: str
    run: Callable[..., Iterator[Any]]
    description: str
    paper: str
    cost: Callable[[dict[str, Any], int], Cost]
    color: str
    params: tuple[Param, ...] = ()
    lossless: bool = True
    controller: str | None = None  # kind of controller state its steps carry, if any
    drafter: str = "draft"  # what makes its draft calls: one of DRAFTER_KINDS
    check: Callable[[dict[str, Any]], None] | None = None  # the resolved parameters together (min <= max)
    page_rank: int | None = None

    @property
    def needs_draft(self) -> bool:
        """Whether it drafts with the pair's draft model (the page and ``decode`` ask for one)."""
        return self.drafter == "draft"

    @property
    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def resolve(self, given: dict[str, Any]) -> dict[str, Any]:
        """Defaults overlaid with ``given``, each value validated; unknown names are refused."""
        known = {p.name: p for p in self.params}
        unknown = sorted(set(given) - set(known))
        if unknown:
            valid = ", ".join(known) or "none"
            names = ", ".join(validation.shown(u, 40) for u in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
            raise InvalidParameterError(f"{self.name}: unknown parameter(s) {names}; valid: {valid}.")
        resolved = {name: p.validate(given.get(name, p.default), self.name) for name, p in known.items()}
        for name in given:
            self._check_applies(known[name], resolved)
        if self.check is not None:
            self.check(resolved)
        return resolved

    def _check_applies(self, p: Param, resolved: dict[str, Any]) -> None:
        """Refuse ``p``, given, if it has no effect under the other ``resolved`` values and its value is not
        its default (which would be ignored: the run would not be the one asked for)."""
        value = resolved[p.name]
        if p.applies(resolved) or type(value) is type(p.default) and value == p.default:
            return
        other, allowed = p.applies_when  # type: ignore[misc]  # applies() is True without it
        raise validation.about(
            InvalidParameterError(
                f"{self.name}: parameter {p.name!r} has no effect with {other}={resolved[other]!r} (it applies when "
                f"{other} is {' or '.join(map(repr, allowed))}), so {p.name}={validation.shown(value)} would be "
                f"ignored: leave it out or choose such a {other}."
            ),
            p.name,
            f"{self.name}: parameter {p.name!r}",
        )

    def effective(self, params: dict[str, Any]) -> dict[str, Any]:
        """The entries of ``params`` that have an effect (``Param.applies``: e.g. no Thompson-sampling
        prior under ``controller=static``); names it does not declare are kept."""
        declared = {p.name: p for p in self.params}
        return {k: v for k, v in params.items() if k not in declared or declared[k].applies(params)}


ALGORITHMS: dict[str, AlgorithmSpec] = {}


def register(
    name: str,
    *,
    description: str,
    paper: str,
    cost: Callable[[dict[str, Any], int], Cost],
    color: str,
    params: tuple[Param, ...] = (),
    lossless: bool = True,
    controller: str | None = None,
    drafter: str = "draft",
    check: Callable[[dict[str, Any]], None] | None = None,
    page_rank: int | None = None,
):
    """Decorator registering a step generator under ``name`` with every fact about it (``AlgorithmSpec``);
    ``check`` refuses parameter combinations. A registration that contradicts itself or another (a
    drafter kind not in ``DRAFTER_KINDS``, a colour that is no ``#rrggbb`` or is another algorithm's,
    a page rank already taken) is a programming error, raised at import."""
    if drafter not in DRAFTER_KINDS:
        raise ValueError(f"{name}: drafter {drafter!r} is not one of {', '.join(DRAFTER_KINDS)}")
    if not (len(color) == 7 and color[0] == "#" and all(c in _HEX for c in color[1:])):
        raise ValueError(f"{name}: color {color!r} is not a lowercase #rrggbb")
    for other in ALGORITHMS.values():
        if other.name != name and (other.color == color or page_rank is not None and other.page_rank == page_rank):
            raise ValueError(f"{name}: color {color} or page_rank {page_rank} is already {other.name}'s")

    def wrap(fn):
        ALGORITHMS[name] = AlgorithmSpec(
            name, fn, description, paper, cost, color, params, lossless, controller, drafter, check, page_rank
        )
        return fn

    return wrap


def page_defaults(specs: Mapping[str, AlgorithmSpec]) -> list[str]:
    """The names of ``specs`` the page opens with, by their registration's ``page_rank`` (lowest first)."""
    ranked = sorted((s for s in specs.values() if s.page_rank is not None), key=lambda s: s.page_rank)
    return [s.name for s in ranked]


def get_algorithm(name: str) -> AlgorithmSpec:
    """The registered algorithm ``name``; anything else (a list, None, an unknown name) is refused."""
    if not isinstance(name, str) or name not in ALGORITHMS:
        raise validation.about(
            UnknownAlgorithmError(
                f"algorithm must be the name of a registered algorithm, got {validation.shown(name)}; registered: "
                f"{', '.join(ALGORITHMS)}."
            ),
            "algorithm",
        )
    return ALGORITHMS[name]
