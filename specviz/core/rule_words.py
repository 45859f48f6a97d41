"""What each acceptance rule says: a test's formula with the numbers it used, what a rejection
resamples from and what a bonus is drawn from (issue #23: one source for every rule's words).

The rule that decides a step records itself there as ``StepRecord.rule = {"name": ..., parameters}``
(``record()`` of ``core.rules.MultiCandidate`` / ``ExactMatch`` / ``OverAcceptance`` and
``algorithms.beams.layer_verifier.LayerRule``; ``beam`` records its draw); ``words(record)`` turns it back into the
``RuleWords`` every view states, so a rule cannot be described by another rule's formula. Pure
Python, no torch: the views read it without importing a model or an algorithm. A step without the
record (schema <= 3) is told as before (``words(None)``): the plain rule, exact match at T = 0.

p is the target's warped law, q the draft's (the papers' letters are mapped to these):

* ``multi_candidate`` (``replacement``): ``a = min(1, p_res(x) / q(x))``, ``p_res`` the target after
  the earlier siblings' rejections (``p`` for the first: chain SD, Leviathan et al. 2023 Alg. 1; with
  replacement MCSD Eqs. 3-4 = SpecInfer). Without replacement ``q̄`` is q without the earlier
  siblings, renormalised (MCSD Eq. 10; Sequoia Alg. 1), uniform over the tokens not rejected yet once
  q has no mass left (Sequoia Alg. 1 line 12). All rejected: the final residual.
* ``over_acceptance`` (``eps``, ``lam``, ``residual``): ``b = min(1, (p + eps) / q)``, with lam
  ``a = 1 − (1 − lam)(1 − b)``; a rejection draws from ``norm(max(0, p − q))`` (``opt``,
  Decoding-OPT) or from p itself (``target``, Decoding-UNO) (theory paper §4, Thms 4-5).
* ``point_mass``: siblings chosen deterministically (``dyntree``), so each one's proposal law is a point
  mass: ``a = p`` for the first, ``a = p_res`` for later ones, ``p_res`` the target without the earlier
  siblings, renormalised (``min(1, p_res/1)``; SpecExec, arXiv 2406.02532). All rejected: p without every
  sibling, renormalised.
* ``exact_match``: T = 0; accepted iff the token is the target's argmax.
* ``dsbd_layer`` (``literal_ratio``): a layer's drafts tested in turn against the joint ``p_beam``,
  ``a = min(1, p_res / q)`` with ``p_res`` p_beam residualised by the rejections since the layer's
  last acceptance (DSBD Alg. 1, corrected; ``literal_ratio``: its printed ``min(1, q / p_res)``).
  ``dsbd_greedy``: T = 0, accepted iff the target's beam search keeps it.
* ``beam_sampling`` / ``beam_search``: nothing is tested; beams are drawn from ``p_beam`` (DSBD Eq 1)
  or are the W best candidates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

Number = float | None


@dataclass(frozen=True)
class Test:
    """One test as its rule states it: ``a = formula`` over ``values`` ((name, number) in the order
    written; None: not in this trace) and ``note`` (what a name means here); ``compute(**values)`` is
    the formula itself. A test stated in words (exact match, a duplicate sibling: a is 0 or 1) has
    no ``formula`` and a ``sentence`` instead."""

    formula: str = ""
    values: tuple[tuple[str, Number], ...] = ()
    note: str = ""
    sentence: str = ""
    compute: Callable[..., float] | None = None

    def value(self) -> float | None:
        """a recomputed from ``values`` by the formula (None when a value is missing or there is none)."""
        vals = dict(self.values)
        if self.compute is None or any(v is None for v in vals.values()):
            return None
        return self.compute(**vals)


@dataclass(frozen=True)
class Source:
    """What a produced token was drawn from: ``words`` (follows "drawn from"), ``label`` (a legend's
    noun), ``why`` (when, if the rule says) and ``law``, the ``PositionRecord`` vector that holds that law on the
    recorded ids: ``residual``, ``final_residual`` or ``p``; ``argmax``: the mode of ``p``; ``""``: not recorded."""

    words: str
    label: str
    law: str
    why: str = ""  # when it is drawn, if the rule says (a bonus: after the path's drafts were accepted)


def _why(drafted: bool) -> str:
    return "every draft token before it was accepted" if drafted else "nothing was drafted"


def _ratio(num: float, den: float) -> float:
    return 1.0 if den <= 0 else min(1.0, num / den)


class RuleWords:
    """The words of one rule (module docstring). ``greedy``: a T = 0 rule (a is 0 or 1, no draw);
    ``rejection_is_tv``: one draft's rejection chance is TV(p, q) (theory paper Thm 1)."""

    record: dict[str, Any] = {}
    greedy = False
    rejection_is_tv = True
    rejection_words = "this rule's is Σ (1 − a) q"  # said after TV(p, q) when rejection_is_tv is False

    def test(
        self,
        *,
        p: Number,
        p_res: Number,
        q: Number,
        earlier: int = 0,
        duplicate: bool = False,
        fallback: bool = False,
        accepted: bool = False,
    ) -> Test:
        """The test of a candidate with target ``p``, residual target ``p_res``, draft ``q`` (as drawn),
        ``earlier`` rejected siblings before it (``duplicate``: one had its token), drawn by the
        uniform ``fallback`` (its q was 0), and its outcome."""
        raise NotImplementedError

    def resample(self, rejected: int) -> Source:
        """The law drawn from after ``rejected`` candidates at a position were all rejected."""
        raise NotImplementedError

    def bonus(self, drafted: bool) -> Source:
        """The law a token is drawn from after the path's drafts were all accepted (``drafted``) or
        where nothing was drafted."""
        return Source("the target p", "target p", "p", _why(drafted))


class MultiCandidateWords(RuleWords):
    """``min(1, p_res / q)`` (MCSD Alg. 1-2, Sequoia Alg. 1; one candidate: chain SD)."""

    def __init__(self, replacement: bool = True):
        self.replacement = replacement
        self.record = {"name": "multi_candidate", "replacement": replacement}

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        if duplicate and self.replacement:
            return Test(
                sentence="a = 0: the same token as an earlier rejected sibling (its residual mass is 0)",
                values=(("p_res", p_res),),
                compute=lambda p_res: 0.0,
            )
        pn = "p_res" if earlier else "p"
        pv = p_res if p_res is not None or earlier else p
        qn, note = "q", ""
        if earlier and not self.replacement:
            qn = "q̄"
            note = (
                "q̄ = 1/N: q had no mass left, so the draw was uniform over the N tokens not rejected yet, "
                "Sequoia Alg. 1 line 12"
                if fallback
                else f"q̄: q without the {earlier} earlier sibling{'s' if earlier != 1 else ''}, renormalised"
            )
        return Test(f"min(1, {pn}/{qn})", ((pn, pv), (qn, q)), note, compute=lambda **v: _ratio(v[pn], v[qn]))

    def resample(self, rejected: int) -> Source:
        if rejected <= 1:
            return Source("the residual norm(max(0, p − q))", "residual", "residual")
        how = (
            "each takes norm(max(0, p_res − q)) again, q unchanged"
            if self.replacement
            else "each takes norm(max(0, p_res − q̄)), then drops the rejected token from q̄"
        )
        return Source(f"the final residual after {rejected} rejections ({how})", "final residual", "final_residual")


class PointMassWords(RuleWords):
    """A deterministic proposal: ``a = p_res(x)``, the multi-candidate rule with q a point mass on x."""

    rejection_is_tv = False  # a chosen draft x is rejected with 1 − p_res(x), not TV(p, q)
    rejection_words = "this rule rejects a chosen draft x with 1 − p(x)"
    record = {"name": "point_mass"}

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        if not earlier:
            return Test(
                "p",
                (("p", p_res if p_res is not None else p),),
                "x was chosen, not drawn: its proposal law is a point mass, so a = min(1, p/1)",
                compute=lambda p: p,
            )
        return Test(
            "p_res",
            (("p_res", p_res),),
            f"p_res: p without the {earlier} earlier sibling{'s' if earlier != 1 else ''}, renormalised; "
            "x was chosen, not drawn, so a = min(1, p_res/1)",
            compute=lambda p_res: p_res,
        )

    def resample(self, rejected: int) -> Source:
        return Source(
            f"the final residual: p without the {rejected} chosen sibling{'s' if rejected != 1 else ''}, "
            "renormalised (SpecExec)",
            "final residual",
            "final_residual",
        )


class OverAcceptanceWords(RuleWords):
    """``b = min(1, (p + eps) / q)``, ``a = 1 − (1 − lam)(1 − b)``; OPT or UNO residual (theory paper §4)."""

    rejection_is_tv = False  # it rejects sum (1 - a) q <= TV(p, q)

    def __init__(self, eps: float = 0.0, lam: float = 0.0, residual: str = "opt"):
        self.eps, self.lam, self.residual = eps, lam, residual
        self.record = {"name": "over_acceptance", "eps": eps, "lam": lam, "residual": residual}

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        pn = "p_res" if earlier and self.residual == "opt" else "p"
        pv = p_res if p_res is not None or pn == "p_res" else p
        b = f"min(1, ({pn} + eps)/q)"
        values: tuple[tuple[str, Number], ...] = ((pn, pv), ("q", q), ("eps", self.eps))

        def compute(**v: float) -> float:
            s = _ratio(v[pn] + v["eps"], v["q"])
            return 1.0 - (1.0 - v["lam"]) * (1.0 - s) if "lam" in v else s

        if self.lam:
            return Test(f"1 − (1 − lam)·(1 − {b})", values + (("lam", self.lam),), compute=compute)
        return Test(b, values, compute=compute)

    def resample(self, rejected: int) -> Source:
        if self.residual == "target":
            return Source(
                "the target p itself (Decoding-UNO: not a residual, so the rejected draft can come back)",
                "target p",
                "p",
            )
        src = MultiCandidateWords(True).resample(rejected)
        return Source(f"{src.words} (Decoding-OPT)", src.label, src.law)


class ExactMatchWords(RuleWords):
    """T = 0: accepted iff the token is the target's argmax (its warped p is one-hot)."""

    greedy = True
    record = {"name": "exact_match"}

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        return Test(
            sentence=f"exact match at T = 0: it is {'' if accepted else 'not '}the target's argmax",
            values=(("p", p),),
            compute=lambda p: 1.0 if p == 1.0 else 0.0,
        )

    def resample(self, rejected: int) -> Source:
        return Source("the target's argmax (T = 0)", "target argmax", "argmax")

    def bonus(self, drafted: bool) -> Source:
        return Source("the target's argmax (T = 0)", "target argmax", "argmax", _why(drafted))


class DsbdLayerWords(RuleWords):
    """One beam layer against the joint p_beam (DSBD, arXiv 2409.16560, Alg. 1 corrected, Eq 1)."""

    rejection_is_tv = False  # a layer passes on W acceptances; one row's TV is no rejection chance

    def __init__(self, literal_ratio: bool = False):
        self.literal_ratio = literal_ratio
        self.record = {"name": "dsbd_layer", "literal_ratio": literal_ratio}

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        note = "p_res: the layer's joint p_beam after its rejections since the last acceptance"
        if self.literal_ratio:
            return Test(
                "min(1, q/p_res)",
                (("q", q), ("p_res", p_res)),
                note + "; Alg. 1's printed ratio, 1 when p_res = 0: not exact",
                compute=lambda q, p_res: _ratio(q, p_res),
            )
        return Test("min(1, p_res/q)", (("p_res", p_res), ("q", q)), note, compute=lambda p_res, q: _ratio(p_res, q))

    def resample(self, rejected: int) -> Source:
        return Source(
            "the layer's final residual p_res (fewer than W drafts were accepted: the layer failed, DSBD Alg. 1)",
            "layer residual",
            "final_residual",
        )

    def bonus(self, drafted: bool) -> Source:
        return Source(
            "p_beam, the joint law of the beams' continuations (DSBD Eq 1: a bonus layer, or a fresh "
            "beam after a failed layer)",
            "p_beam",
            "p",
        )


class DsbdGreedyWords(RuleWords):
    """T = 0: a draft is accepted iff the target's beam search keeps it (its W best candidates)."""

    greedy = True
    rejection_is_tv = False
    record = {"name": "dsbd_greedy"}

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        return Test(
            sentence=f"beam search at T = 0: it is {'' if accepted else 'not '}one of the target's W best "
            f"candidates of the layer"
        )

    def resample(self, rejected: int) -> Source:
        return Source(
            "the target's beam search at T = 0 (one of its W best candidates, not drafted)", "target beam search", ""
        )

    def bonus(self, drafted: bool) -> Source:
        return self.resample(0)


class BeamWords(RuleWords):
    """Beam sampling (i.i.d. from p_beam, DSBD Eq 1) or beam search (T = 0): nothing is tested."""

    rejection_is_tv = False

    def __init__(self, greedy: bool = False):
        self.greedy = greedy
        self.record = {"name": "beam_search" if greedy else "beam_sampling"}

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        return Test(sentence="not tested: beams are drawn from the target alone")

    def resample(self, rejected: int) -> Source:
        return self.bonus(False)

    def bonus(self, drafted: bool) -> Source:
        if self.greedy:
            return Source("beam search at T = 0 (one of the W best candidates by log-likelihood)", "beam search", "")
        return Source(
            "p_beam, the joint law of every beam's continuations, i.i.d. (beam sampling, DSBD Eq 1)", "p_beam", "p"
        )


class UnknownWords(RuleWords):
    """A rule this specviz does not know (a newer trace): its numbers, no formula."""

    def __init__(self, name: str):
        self.record = {"name": name}
        self.rejection_is_tv = False
        self.name = name

    def test(self, *, p, p_res, q, earlier=0, duplicate=False, fallback=False, accepted=False) -> Test:
        return Test(sentence=f"by the rule {self.name!r}, which this specviz does not know (no formula shown)")

    def resample(self, rejected: int) -> Source:
        return Source(f"the law the rule {self.name!r} resamples from (unknown to this specviz)", "resampled from", "")


# name -> (the record's parameters and their check, the words)
_BOOL = (lambda v: isinstance(v, bool), "true or false")
RULES: dict[str, tuple[dict[str, tuple[Callable[[Any], bool], str]], Callable[..., RuleWords]]] = {
    "multi_candidate": ({"replacement": _BOOL}, MultiCandidateWords),
    "over_acceptance": (
        {
            "eps": (lambda v: _real(v) and 0 <= v <= 1, "a number in [0, 1]"),
            "lam": (lambda v: _real(v) and 0 <= v <= 1, "a number in [0, 1]"),
            "residual": (lambda v: v in ("opt", "target"), "'opt' or 'target'"),
        },
        OverAcceptanceWords,
    ),
    "point_mass": ({}, PointMassWords),
    "exact_match": ({}, ExactMatchWords),
    "dsbd_layer": ({"literal_ratio": _BOOL}, DsbdLayerWords),
    "dsbd_greedy": ({}, DsbdGreedyWords),
    "beam_sampling": ({}, lambda: BeamWords(False)),
    "beam_search": ({}, lambda: BeamWords(True)),
}


def _real(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_record(record: Any, path: str = "rule") -> str | None:
    """Why ``record`` is no rule record (a sentence naming ``path`` and the key), or None. A name this
    specviz does not know is allowed (``UnknownWords``); a known one's parameters must be its own."""
    if not isinstance(record, dict) or not isinstance(record.get("name"), str):
        return f"{path} must be an object with a text 'name', got {record!r:.60}"
    spec = RULES.get(record["name"])
    if spec is None:
        return None
    params = spec[0]
    for key, value in record.items():
        if key != "name" and key not in params:
            return (
                f"{path} has the key {key!r}, which the rule {record['name']!r} does not have (its keys: "
                f"{', '.join(params) or 'none'})"
            )
        if key != "name" and not params[key][0](value):
            return f"{path}.{key} must be {params[key][1]}, got {value!r:.60}"
    return None


def words(record: dict[str, Any] | None, greedy: bool = False) -> RuleWords:
    """The words of the rule ``record`` names; None (a trace older than the record): the plain rule,
    or exact match when ``greedy``."""
    if record is None:
        return ExactMatchWords() if greedy else MultiCandidateWords(True)
    spec = RULES.get(record.get("name"))
    if spec is None:
        return UnknownWords(str(record.get("name")))
    return spec[1](**{k: v for k, v in record.items() if k != "name"})
