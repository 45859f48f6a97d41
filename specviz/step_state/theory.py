"""The theory probes' step state (``algorithms.theory_probe``: ``batch_sd``, ``biased_sd``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Union

from specviz import trace_values as check
from specviz.step_state.codec import ControllerState, Record, _reader


@dataclass(frozen=True)
class RejectionProbe(Record):
    """``batch_sd``: TV(p, q) at a tested position, P(all candidates rejected) and the candidates."""

    tv: float
    reject: float
    roots: float


@dataclass(frozen=True)
class TradeoffProbe(Record):
    """``biased_sd``: TV(p, q), P(rejection) and Thm 5's rejection and biases (OPT / UNO residual)."""

    tv: float
    reject: float
    reject_b: float
    bias_opt: float
    bias_uno: float

    @classmethod
    def claims(cls, data: dict[str, Any]) -> bool:
        return "bias_opt" in data


Probe = Union[TradeoffProbe, RejectionProbe]


def read_probe(data: dict[str, Any], where: str = "a probe") -> TradeoffProbe | RejectionProbe:
    """A probe's measurements (``algorithms.theory_probe``) as its typed row."""
    return _reader(Probe)[0](data, where)


@dataclass(frozen=True, kw_only=True)
class TheoryState(ControllerState):
    """``theory``: per tested position with a recorded q, in walk order, the probe's measurements."""

    kind: ClassVar[str] = "theory"
    positions: tuple[TradeoffProbe | RejectionProbe, ...]

    def check_values(self, path: str, nodes: int | None = None) -> None:
        """What ``metrics.drafted_positions`` reads: probabilities; the biases finite."""
        for i, probe in enumerate(self.positions):
            at = f"{path}.positions[{i}]"
            check.prob(f"{at}.tv", probe.tv, optional=False)
            check.prob(f"{at}.reject", probe.reject, optional=False)
            if isinstance(probe, TradeoffProbe):
                for key in ("bias_opt", "bias_uno", "reject_b"):
                    check.finite(f"{at}.{key}", getattr(probe, key), None)
