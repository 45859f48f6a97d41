"""One claim of a paper next to what specviz measures on the closest setting it can run.

``Claim`` is plain data (JSON round trip), so the report, the test and the app's Papers view read
the same rows with no model loaded. ``verdict`` is one of ``VERDICTS``; "reproduced" is never one:
a small-scale rerun can say a claim holds, holds at small scale, does not hold, or that the
paper's number is not comparable with anything specviz can run, or that the difference it
measured is inside its own spread ("unresolved": more runs would be needed to tell)."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

VERDICTS = ("holds", "holds at small scale", "does not hold", "not comparable", "unresolved")


@dataclass
class Claim:
    """``value`` ± ``spread`` is specviz's number (``spread_kind`` says what the spread is: 1.96
    standard errors over seeds and prompts, a bootstrap interval, the spread over chain seeds);
    ``paper_value`` the paper's own number, as printed; ``source`` its table or figure."""

    paper: str
    claim: str
    source: str
    paper_value: str
    paper_setting: str
    setting: str
    value: float
    spread: float | None
    spread_kind: str
    measured: str
    difference: str
    verdict: str
    extra: dict[str, Any] = field(default_factory=dict)  # what a figure needs (series, per-config numbers)
    pair: str = ""  # the preset a row ran on ("" for the theory paper's toy chains)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Claim":
        return cls(**d)


def mean_ci(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and 1.96 standard errors of the mean (None for a single value: no spread to state)."""
    vals = [float(v) for v in values]
    if not vals:
        return math.nan, None
    if len(vals) == 1:
        return vals[0], None
    return statistics.fmean(vals), 1.96 * statistics.stdev(vals) / math.sqrt(len(vals))


def above(value: float, spread: float | None, ref: float, yes: str = "holds at small scale") -> str:
    """The verdict on a claim that ``value`` exceeds ``ref``: ``yes`` when the whole band is above it,
    "does not hold" when the whole band is below, "unresolved" when the band covers it or there is none."""
    if spread is None:
        return "unresolved"
    if value - spread > ref:
        return yes
    return "does not hold" if value + spread < ref else "unresolved"


def pm(spread: float | None, digits: int = 2) -> str:
    """`` ± 0.04`` or, with no spread, `` (one run)``."""
    return " (one run: no spread)" if spread is None else f" ± {spread:.{digits}f}"


def covers(value: float, spread: float | None, target: float) -> bool:
    """Whether ``target`` lies within ``value ± spread``."""
    return spread is not None and abs(value - target) <= spread
