"""Every rule is described by its own words (issue #23, point 1): ``core.rule_words``.

A step records the rule that decided it (``StepRecord.rule``), and the views state each test, resample
and bonus from that record. Here the rules' formulas are checked against the rules themselves on random
laws, and, for every registered algorithm at T = 0 and T > 0 on a tiny pair, every tested node's sentence
is read back: the numbers it states are the recorded p, q, u and residual, its formula recomputed from
them gives the a the rule used, the outcome is "accepted" iff u < a, and a resampled or bonus token's
sentence names a law that gives that token positive probability in the trace. So a new rule cannot be
described by another rule's formula.
"""

from __future__ import annotations

import functools
import html
import re

import pytest
import torch
from tiny import tiny_pair

import specviz
from specviz.core import beams as B
from specviz.core import rule_words
from specviz.core.rules import ExactMatch, MultiCandidate, OverAcceptance, PointMass
from specviz.errors import TraceFormatError
from specviz.models.loading import attach_early_exit
from specviz.trace import RunTrace, StepRecord
from specviz.trace_check import check_trace
from specviz.viz.beam_story import beam_narrative
from specviz.viz.distribution import distribution_figure
from specviz.viz.explain import TESTED, StepIndex, describe_test, node_decision, position_of
from specviz.viz.narrative import step_narrative
from specviz.viz.style import fmt_prob

# ---------------------------------------------------------------- the rules' formulas are the rules


def laws(seed: int, vocab: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(vocab, generator=g) ** 3
    q = torch.rand(vocab, generator=g) ** 3
    p[seed % vocab] = 0.0  # a token the target never makes
    return p / p.sum(), q / q.sum()


RULES = [
    MultiCandidate(True),
    MultiCandidate(False),
    OverAcceptance(0.0),
    OverAcceptance(0.05),
    OverAcceptance(0.05, "target"),
    OverAcceptance(0.02, lam=0.4),
    OverAcceptance(0.0, "target", lam=0.7),
    PointMass(),
]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: str(r.record()))
def test_each_rules_stated_formula_is_its_schedule(rule):
    for seed in range(40):
        p, q = laws(seed)
        cands = torch.multinomial(
            q, 3, replacement=rule.replacement, generator=torch.Generator().manual_seed(seed)
        ).tolist()
        sched = rule.schedule(p, q, cands)
        words = rule.words()
        assert words.record == rule.record()
        rejected: list[int] = []
        for j, x in enumerate(cands):
            test = words.test(
                p=float(p[x]),
                p_res=float(sched.residuals[j][x]),
                q=sched.draft_probs[j],
                earlier=j,
                duplicate=x in rejected,
            )
            assert test.value() == pytest.approx(sched.accept_probs[j], rel=1e-5, abs=1e-7), (j, test)
            rejected.append(x)
        source = words.resample(len(cands))
        final = {"p": p, "residual": sched.final_residual, "final_residual": sched.final_residual}[source.law]
        assert torch.allclose(final, sched.final_residual, atol=1e-6), source  # names the law drawn from


def test_the_dsbd_layer_rule_states_its_formula():
    for literal in (False, True):
        words = rule_words.words({"name": "dsbd_layer", "literal_ratio": literal})
        for seed in range(20):
            p, q = laws(seed, 12)
            drafts = torch.multinomial(q, 4, replacement=True, generator=torch.Generator().manual_seed(seed)).tolist()
            v = B.verify_layer(p, q, drafts, 2, torch.Generator().manual_seed(seed), paper_literal_ratio=literal)
            for j, x in enumerate(drafts):
                if v.status[j] != "skipped":
                    test = words.test(p=float(p[x]), p_res=v.p_residual[j], q=float(q[x]))
                    assert test.value() == pytest.approx(v.accept_probs[j], rel=1e-9), (literal, j)


def test_exact_match_words():
    words = ExactMatch().words()
    assert words.greedy and words.test(p=1.0, p_res=1.0, q=0.3, accepted=True).value() == 1.0
    assert words.test(p=0.0, p_res=0.0, q=0.3).value() == 0.0
    assert words.resample(2).law == "argmax"


def test_records_are_checked_and_old_traces_get_the_plain_rule():
    assert rule_words.words(None).record == {"name": "multi_candidate", "replacement": True}
    assert rule_words.words(None, greedy=True).greedy
    assert rule_words.check_record({"name": "over_acceptance", "eps": 0.1, "lam": 0.0, "residual": "opt"}) is None
    assert rule_words.check_record({"name": "from_a_newer_specviz", "k": 3}) is None
    assert "no formula" in rule_words.words({"name": "from_a_newer_specviz"}).test(p=0.1, p_res=0.1, q=0.2).sentence
    for bad, word in [
        ({"name": "over_acceptance", "eps": -1}, "rule.eps"),
        ({"name": "exact_match", "x": 1}, "'x'"),
        ({"name": 3}, "text 'name'"),
        ([], "object"),
        ({"name": "over_acceptance", "residual": "uno"}, "rule.residual"),
    ]:
        assert word in rule_words.check_record(bad), bad


# ---------------------------------------------------------------- every algorithm's trace, read back

VOCAB = 16
PROMPT = [1, 2, 3, 1, 2]
EXTRA = {"sequoia": {"acceptance": "0.5,0.2,0.1"}}
RUNS = [(name, t, EXTRA.get(name, {})) for name in specviz.ALGORITHMS for t in (0.0, 1.0)] + [
    ("biased_sd", 1.0, {"eps": 0.05, "residual": "target", "top_k": 3}),  # top-k: rejections, so resamples
    ("biased_sd", 1.0, {"eps": 0.02, "lam": 0.4}),
    ("mcsd", 1.0, {"replacement": True, "k_config": "4x1", "top_k": 2}),  # i.i.d. from 2 tokens: duplicates
    ("sequoia", 1.0, {"acceptance": "0.5,0.2,0.1,0.1", "size": 6, "depth": 2, "top_k": 3}),  # past q's support
    ("dsbd", 1.0, {"literal_ratio": True}),
]


@functools.lru_cache(maxsize=None)
def pair():
    return attach_early_exit(tiny_pair("llama", vocab=VOCAB, draft="noisy", noise=0.5), 1)  # eesd drafts with it


@functools.lru_cache(maxsize=None)
def run(name: str, temperature: float, extra: tuple) -> RunTrace:
    kw = dict(extra)
    top_k = kw.pop("top_k", 0)
    trace = specviz.decode(
        pair(), name, PROMPT, max_new_tokens=6 if temperature else 4, temperature=temperature, top_k=top_k, seed=1, **kw
    )
    return RunTrace.from_json(trace.to_json())  # as a replay reads it: the rule travels in the file


def runs():
    return [(name, t, extra, run(name, t, tuple(sorted(extra.items())))) for name, t, extra in RUNS]


NUM = r"(?:1−)?[0-9.]+(?:e-?[0-9]+)?"
NAME = r"[a-z_]+̄?"
VALUES = rf"(?P<vals>{NAME} = {NUM}(?:, {NAME} = {NUM})*)(?: \((?P<note>.*)\))?"
WITH_DRAW = re.compile(
    rf"^u = (?P<u>{NUM}) (?P<op>[<≥]) a = (?P<a>{NUM}) = (?P<f>.+?) with {VALUES} → "
    rf"(?P<out>accepted|rejected)$"
)
NO_DRAW = re.compile(rf"^a = (?P<f>.+?) = (?P<a>{NUM}) with {VALUES}: (?P<out>accepted|rejected) with no draw$")
SENTENCE = re.compile(r"^(?P<s>[^→]+) → (?P<out>accepted|rejected)$")


def number(text: str) -> float:
    return 1.0 - float(text[2:]) if text.startswith("1−") else float(text)


def evaluate(formula: str, values: dict[str, float]) -> float:
    """The stated formula as arithmetic (a ratio over 0 is 1: the literal DSBD ratio says so)."""
    expr = formula.replace("−", "-").replace("·", "*").replace("q̄", "q_bar")
    names = {k.replace("q̄", "q_bar"): v for k, v in values.items()}
    try:
        return float(eval(expr, {"__builtins__": {}, "min": min}, names))  # noqa: S307 - our own formula text
    except ZeroDivisionError:
        return 1.0


def expected_formulas(name: str, trace: RunTrace) -> set[str]:
    """The formulas each algorithm's rule may state at T > 0 (what the paper's rule computes)."""
    if name == "biased_sd":
        b = "min(1, (p + eps)/q)"
        return {f"1 − (1 − lam)·({'1 − ' + b})"} if trace.params["lam"] else {b}
    if name == "dsbd":
        return {"min(1, q/p_res)" if trace.params["literal_ratio"] else "min(1, p_res/q)"}
    if name == "dyntree":  # chosen siblings: a point-mass proposal, a = p_res (p for the first)
        return {"p", "p_res"}
    without = name == "sequoia" or (name == "mcsd" and not trace.params["replacement"])
    return {"min(1, p/q)", "min(1, p_res/q̄)" if without else "min(1, p_res/q)"}


def recorded(name: str, node) -> float:
    """The trace's own number for a name the sentence uses."""
    return {"p": node.p_residual, "p_res": node.p_residual, "q": node.q, "q̄": node.q}[name]


def check_test(name: str, trace: RunTrace, step: StepRecord, idx: StepIndex, node, seen: set) -> str:
    text = describe_test(node, idx)
    a, u = node.accept_prob, node.draw
    accepted = node.status == "accepted"
    assert "not recorded" not in text, text
    m = WITH_DRAW.match(text) or NO_DRAW.match(text)
    if m is None:  # a test stated in words: a is 0 or 1, no draw
        m = SENTENCE.match(text)
        assert m and u is None and a in (0.0, 1.0) and (a == 1.0) == accepted, text
        s = m.group("s")
        if trace.sampling["temperature"] == 0 and name == "dsbd":
            assert s.startswith("beam search at T = 0: it is " + ("" if accepted else "not ")), s
        elif trace.sampling["temperature"] == 0:
            assert s == f"exact match at T = 0: it is {'' if accepted else 'not '}the target's argmax", s
            assert node.p == (1.0 if accepted else 0.0)  # the warped target is one-hot: accepted iff argmax
        else:
            assert s.startswith("a = 0: the same token as an earlier rejected sibling") and a == 0.0, s
            assert node.p_residual == 0.0 and name in ("mcsd", "specinfer", "batch_sd"), (name, s)
            seen.add("duplicate")
        return text
    assert trace.sampling["temperature"] > 0, text
    formula, vals = m.group("f"), dict(kv.split(" = ") for kv in m.group("vals").split(", "))
    assert formula in expected_formulas(name, trace), (name, formula)
    assert m.group("a") == fmt_prob(a), text
    if "u" in m.groupdict() and m.group("u") is not None:
        assert u is not None and m.group("u") == fmt_prob(u) and (m.group("op") == "<") == (u < a), text
        assert (u < a) == accepted, text  # the stated outcome is the draw's
        seen.add("draw")
    else:
        assert u is None and a in (0.0, 1.0) and (a == 1.0) == accepted, text
    params = {k: trace.params[k] for k in ("eps", "lam") if k in vals}
    for key, shown in vals.items():  # the stated numbers are the trace's
        assert shown == fmt_prob(params[key] if key in params else recorded(key, node)), (key, text)
    if "p" in vals and name != "dsbd":
        assert node.p_residual == pytest.approx(node.p, rel=1e-5, abs=1e-9), text  # "p" is the untouched target
    exact = {k: float(params[k]) if k in params else recorded(k, node) for k in vals}
    assert evaluate(formula, exact) == pytest.approx(a, rel=1e-4, abs=1e-6), text  # the formula is the rule's a
    stated = {k: number(v) for k, v in vals.items()}
    assert evaluate(formula, stated) == pytest.approx(number(m.group("a")), rel=1.2e-2, abs=1e-6), text
    if m.group("note") and "uniform" in m.group("note"):  # Sequoia's fallback: q̄ is uniform over what is left
        left = VOCAB - len(idx.earlier_rejected(node))
        assert node.q == pytest.approx(1 / left), text
        seen.add("fallback")
    seen.add(formula)
    return text


LAW_WORDS = [
    ("the target p itself (Decoding-UNO", "p"),
    ("final residual", "final_residual"),
    ("the residual norm(max(0, p − q))", "residual"),
    ("argmax", "argmax"),
    ("the target p", "p"),
    ("p_beam", "p"),
]


def check_produced(name: str, trace: RunTrace, step: StepRecord, idx: StepIndex, node, seen: set) -> str:
    """The sentence names a law that could have produced the token, read from the position record."""
    text = node_decision(node, idx)
    assert text.startswith("drawn from "), text
    greedy = trace.sampling["temperature"] == 0
    if greedy and name in ("beam", "dsbd"):  # kept by the target's beam search: no law recorded to check
        assert "beam search at T = 0" in text, text
        return text
    phrase, law = next((w, law) for w, law in LAW_WORDS if w in text)
    if name == "biased_sd" and node.status == "resampled" and not greedy:
        want = "the target p itself" if trace.params["residual"] == "target" else "the residual norm"
        assert want in text, text
        seen.add(f"biased {trace.params['residual']}")
    pos = position_of(step, node)
    assert pos is not None and node.token_id in pos.ids, text
    values = {"p": pos.p, "argmax": pos.p, "residual": pos.residual, "final_residual": pos.final_residual}[law]
    at = values[pos.ids.index(node.token_id)]
    if law == "argmax":
        assert greedy and at == max(pos.p) == 1.0, text
    else:
        assert at > 0, (text, law, values)
    seen.add(f"{node.status} from {phrase}")
    return text


def test_every_algorithm_states_its_own_rule_with_the_recorded_numbers():
    seen: set[str] = set()
    for name, t, extra, trace in runs():
        check_trace(trace)
        rule = trace.steps[0].rule
        assert rule is not None and rule_words.check_record(rule) is None, (name, rule)
        shown_figure = False
        for step in trace.steps:
            idx = StepIndex(step)
            lines = []
            for node in step.forest:
                if node.status in TESTED:
                    lines.append(check_test(name, trace, step, idx, node, seen))
                elif node.status in ("resampled", "bonus"):
                    check_produced(name, trace, step, idx, node, seen)
            # a tree walk node by node; a beam step layer by layer (issue #23 point 2)
            story = html.unescape(
                beam_narrative(trace, step.index) if name in ("beam", "dsbd") else step_narrative(step, name)
            )
            assert all(line in story for line in lines), (name, story)
            tested = [n for n in step.forest if n.status in TESTED and n.draw is not None]
            if tested and not shown_figure:  # the distribution view's caption is the same sentence
                fig = distribution_figure(step, tested[0].id)
                captions = [html.unescape(a.text.replace("<br>", " ")) for a in fig.layout.annotations]
                assert describe_test(tested[0], idx) in captions, (name, captions)
                shown_figure = True
    assert {
        "draw",
        "duplicate",
        "fallback",
        "biased target",
        "biased opt",
        "min(1, p_res/q̄)",
        "p_res",
        "min(1, (p + eps)/q)",
        "min(1, q/p_res)",
        "1 − (1 − lam)·(1 − min(1, (p + eps)/q))",
    } <= seen, seen
    assert {
        "resampled from the residual norm(max(0, p − q))",
        "resampled from final residual",
        "resampled from the target p itself (Decoding-UNO",
        "resampled from argmax",
        "bonus from the target p",
        "bonus from p_beam",
    } <= seen, seen


def test_an_older_trace_without_the_rule_is_told_by_the_plain_rule():
    trace = RunTrace.from_dict(run("biased_sd", 1.0, (("eps", 0.05), ("residual", "target"), ("top_k", 3))).to_dict())
    step = next(s for s in trace.steps if any(n.status == "rejected" and n.draw is not None for n in s.forest))
    node = next(n for n in step.forest if n.status == "rejected" and n.draw is not None)
    assert "(p + eps)/q" in describe_test(node, StepIndex(step))
    step.rule = None  # as a schema 3 file has it
    assert "= min(1, p/q) with" in describe_test(node, StepIndex(step))
    data = trace.to_dict()
    data["schema_version"] = 3
    for s in data["steps"]:
        s.pop("rule")
    check_trace(RunTrace.from_dict(data))


def test_a_bad_rule_in_a_file_is_refused_by_name():
    data = run("biased_sd", 1.0, (("eps", 0.05), ("residual", "target"), ("top_k", 3))).to_dict()
    data["steps"][0]["rule"]["lam"] = 7
    with pytest.raises(TraceFormatError, match=r"steps\[0\]\.rule\.lam must be a number in \[0, 1\]"):
        check_trace(RunTrace.from_dict(data))
