"""The beams' step states (``algorithms.beams``: ``beam``, ``dsbd``): the step's beam list and, for
``dsbd``, its verified layers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from specviz import trace_values as check
from specviz.step_state.codec import ControllerState, Record, flat, key


@dataclass(frozen=True)
class BeamRow(Record):
    """A beam after the step: its parent (row in the step before's list), new tokens and their text, its
    cumulative target log-likelihood, length and whether it finished at EOS."""

    parent: int
    tokens: tuple[int, ...]
    text: str
    loglik: float
    length: int
    finished: bool = False


@dataclass(frozen=True)
class BeamList(Record):
    """The step's beams (``algorithms.beams.state.beam_rows``): the row of the best, the rows carried on
    and the live beams' length."""

    beams: tuple[BeamRow, ...]
    best: int
    carried: tuple[int, ...]
    length: int


@dataclass(frozen=True, kw_only=True)
class BeamStepState(ControllerState):
    """A state that lists the step's beams (``beam_list``, its keys inline, declared by each subclass
    where its keys come in the object)."""

    def check_values(self, path: str, nodes: int | None = None) -> None:
        """What ``viz.beams`` draws: parents, texts, a log-likelihood that is no NaN, lengths >= 0."""
        listed = self.beam_list
        for i, b in enumerate(listed.beams):
            at = f"{path}.beams[{i}]"
            check.whole(f"{at}.parent", b.parent, 0)
            check.text(f"{at}.text", b.text)
            if b.loglik != b.loglik:  # NaN; -inf is a beam of probability 0
                raise check._refuse(f"{at}.loglik", "a number", b.loglik)
            check.whole(f"{at}.length", b.length, 0)
        check.whole(f"{path}.length", listed.length, 0)


@dataclass(frozen=True, kw_only=True)
class BeamSearchState(BeamStepState):
    """``beam``: beam sampling / search with the target alone."""

    kind: ClassVar[str] = "beam"
    beam_list: BeamList = flat()


@dataclass(frozen=True)
class VerifiedLayer(Record):
    """A verified dsbd layer: parents still valid, drafts (W_S), the width W_L chosen and its unfloored
    value, the law P(m accepted) and its survival function, the threshold and floor, accepted and kept
    counts and whether it passed (W_L acceptances)."""

    layer: int
    parents: int
    candidates: int
    width: int
    unfloored: int
    p_accept: tuple[float, ...]
    survival: tuple[float, ...]
    threshold: float
    min_width: int
    accepted: int
    kept: int
    passed: bool

    bonus: ClassVar[bool] = False


@dataclass(frozen=True)
class BonusLayer(Record):
    """The bonus layer after every draft layer passed: its parents and the beams kept."""

    layer: int
    is_bonus: bool = key("bonus")
    parents: int = 0
    kept: int = 0

    bonus: ClassVar[bool] = True

    @classmethod
    def claims(cls, data: dict[str, Any]) -> bool:
        return data.get("bonus") is True


@dataclass(frozen=True, kw_only=True)
class DsbdState(BeamStepState):
    """``dsbd``: its settings, the walked layers (``levels``), the layer it ended in (``l_last``), the
    trace node ids of the output beams (``kept``) and the beams."""

    kind: ClassVar[str] = "dsbd"
    gamma: int
    drafts: int
    min_width: int
    threshold: float
    dynamic: bool
    single_beam: bool = False
    l_last: int
    levels: tuple[BonusLayer | VerifiedLayer, ...]
    kept: tuple[int, ...]
    beam_list: BeamList = flat()

    @property
    def verified(self) -> tuple[VerifiedLayer, ...]:
        """The verified layers, in order (the bonus layer left out)."""
        return tuple(lv for lv in self.levels if isinstance(lv, VerifiedLayer))

    def check_values(self, path: str, nodes: int | None = None) -> None:
        """The beams, then each layer's kept count and a verified layer's width and laws."""
        super().check_values(path, nodes)
        for i, lv in enumerate(self.levels):
            at = f"{path}.levels[{i}]"
            check.whole(f"{at}.kept", lv.kept, 0)
            if isinstance(lv, VerifiedLayer):
                check.whole(f"{at}.width", lv.width, 0)
                check.probs(f"{at}.p_accept", list(lv.p_accept), optional=False)
                check.probs(f"{at}.survival", list(lv.survival), optional=False)
                check.prob(f"{at}.threshold", lv.threshold, optional=False)
