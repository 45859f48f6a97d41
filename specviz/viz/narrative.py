"""A step told in plain words, and the step a view should open on.

``step_narrative`` walks the verification the way the algorithm did (``specviz.core.acceptance``):
what was drafted, then position by position the candidates in draw order with the test each faced
(``u`` against ``a``, stated by the step's own rule, ``core.rule_words``: ``min(1, p_res / q)`` for the
exact rules, MCSD Eqs. 3-4; ``min(1, (p + eps) / q)`` for over-acceptance; an exact match at
temperature 0), what was accepted, what the step's last token was drawn from (the law that rule
resamples from, e.g. the residual ``norm(max(0, p − q))``, Leviathan et al. 2023 Algorithm 1, or the
target after a fully accepted path), and what the step bought. A greedy step that drafted copies says why
(``copies_line``: with replacement at T = 0 every draw is the draft's argmax) and what the trace says
became of them (never tested after an accepted first, rejected after a rejected one, as the text view
shows them). It reads only the trace: a v1 step (no
positions, no ``p_residual``) gets the same story without the numbers it does not carry.
"""

from __future__ import annotations

from typing import Callable

from specviz.core import rule_words
from specviz.core.rule_words import RuleWords, Source
from specviz.trace import DRAFTED, PositionRecord, RunTrace, StepRecord, TreeNode
from specviz.viz.explain import (
    TESTED,
    StepIndex,
    copies,
    describe_test,
    escape_ws,
    is_greedy_step,
    not_reached_reason,
    position_of,
    produced_source,
    token_label,
)
from specviz.viz.style import fmt_prob

TOP_RESIDUAL = 3
_MD_SPECIAL = "\\`*_[]~|$#"


def _md(text: str) -> str:
    """Token text made inert in Markdown (rendered with HTML allowed): entities for & < >, a backslash
    before Markdown's specials, so a token "<b>" or "**" reads as itself."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join("\\" + c if c in _MD_SPECIAL else c for c in text)


def _tok(node: TreeNode) -> str:
    return _md(token_label(node))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _drafted_line(step: StepRecord, idx: StepIndex, algorithm: str) -> str:
    drafted = [n for n in step.forest if n.status in DRAFTED]
    if not drafted:
        if algorithm == "ar":
            return "**Drafted** nothing: `ar` asks the target alone for one token."
        return "**Drafted** nothing this step (no draft tokens fit in what was left to generate)."
    widths: dict[int, int] = {}
    for n in drafted:
        widths[n.depth] = widths.get(n.depth, 0) + 1
    levels = len(widths)
    roots = len({n.root for n in drafted})
    chain = roots == 1 and all(len(g) == 1 for g in idx.groups.values())
    if chain:
        shape = f"a chain of {_plural(len(drafted), 'token')}"
    else:
        kind = f"a forest of {roots} trees" if roots > 1 else "a tree"
        n_roots = sum(1 for n in drafted if n.parent is None)
        shape = (
            f"{kind}: {_plural(len(drafted), 'node')} over {_plural(levels, 'level')} "
            f"(widths {', '.join(str(widths[d]) for d in sorted(widths))}; {_plural(n_roots, 'root')})"
        )
    calls = f" in {_plural(step.draft_calls, 'draft call')}" if step.draft_calls else ""
    return f"**Drafted** {shape}{calls}."


def copies_line(step: StepRecord, greedy: bool) -> str | None:
    """Why a greedy step drafted the same token more than once (None when it did not): siblings drawn
    with replacement at T = 0 are i.i.d. draws from a point mass on the draft's argmax."""
    copy = copies(step)
    if not greedy or not copy:
        return None
    nodes = {n.id: n for n in step.forest}
    counts: dict[int, int] = {}
    for orig in copy.values():
        counts[orig] = counts.get(orig, 0) + 1
    drafted = ", ".join(f"{n + 1} × {_tok(nodes[o])}" for o, n in counts.items())
    fates = {nodes[o].status for o in counts}
    if fates == {"accepted"}:
        fate = "The first was accepted, so its copies were never tested (later siblings are skipped)."
    elif fates == {"rejected"}:
        fate = (
            "The first was rejected, so its copies were rejected too: a token that is not the target's argmax "
            "fails each time."
        )
    else:
        fate = "A copy after an accepted first is never tested; after a rejected one it is rejected too."
    return (
        f"**Copies** ({drafted}): the siblings are drawn with replacement, and at T = 0 the draft's warped law "
        f"is a point mass on its argmax, so every i.i.d. draw is the same token. {fate}"
    )


def _where(key_parent: int | None, idx: StepIndex, root: int, multi_root: bool) -> str:
    if key_parent is None:
        return f"At the committed text (tree {root})" if multi_root else "At the committed text"
    parent = idx.nodes.get(key_parent)
    return f"After {_tok(parent)} (node {key_parent})" if parent is not None else f"After node {key_parent}"


def _test_lines(step: StepRecord, idx: StepIndex, greedy: bool) -> list[str]:
    """One bullet per tested position, its candidates in draw order with their tests."""
    out = []
    tested = [(k, g) for k, g in idx.groups.items() if any(n.status in TESTED for n in g)]
    tested.sort(key=lambda kg: (kg[1][0].depth, kg[0][1]))
    multi_root = len({n.root for n in step.forest}) > 1
    copy = copies(step)
    for (parent, root), group in tested:
        cands = []
        skipped = []
        order = {n.id: i for i, n in enumerate(group, 1)}
        for n in group:
            if n.status in TESTED:
                of = f", a copy of ({order[copy[n.id]]})" if n.id in copy else ""
                cands.append(f"{_tok(n)}: {describe_test(n, idx, greedy)}{of}")
            elif n.status == "not_reached":
                skipped.append(n)
        head = _where(parent, idx, root, multi_root)
        if len(cands) == 1:
            line = f"- {head}: {cands[0]}."
        else:
            items = "; ".join(f"({i}) {c}" for i, c in enumerate(cands, 1))
            line = f"- {head}, {len(cands)} candidates in draw order: {items}."
        if skipped:
            names = ", ".join(_tok(n) for n in skipped)
            accepted = next((n.id for n in group if n.status == "accepted"), None)
            what = "copies of the accepted draft: " if all(copy.get(n.id) == accepted for n in skipped) else ""
            line += f" Never tested: {names} ({what}an earlier sibling was accepted, so later ones are skipped)."
        out.append(line)
    return out


def _token_text(tid: int, texts: dict[int, str], decode: Callable[[int], str] | None) -> str:
    if tid in texts:
        return _md('"' + escape_ws(texts[tid]) + '"')
    if decode is not None:
        try:
            return _md('"' + escape_ws(decode(tid)) + '"')
        except Exception:  # a decoder that cannot read this id: show the id
            pass
    return f"id {tid}"


def law_values(pos: PositionRecord, source: Source) -> list[float] | None:
    """The recorded values of the law ``source`` names on ``pos.ids`` (None if not recorded)."""
    if source.law == "final_residual":
        return pos.final_residual if pos.final_residual is not None else pos.residual
    if source.law == "residual":
        return pos.residual
    if source.law in ("p", "argmax"):
        return pos.p
    return None


def _residual_bits(
    pos: PositionRecord, texts: dict[int, str], decode: Callable[[int], str] | None, source: Source, words: RuleWords
) -> str:
    bits = []
    if pos.texts is not None:  # trace v2 records the texts of the ids it keeps
        texts = {**texts, **dict(zip(pos.ids, pos.texts))}
    if pos.residual_mass is not None:
        if words.rejection_is_tv:
            bits.append(
                f"residual mass Σ max(0, p − q) = TV(p, q) = {fmt_prob(pos.residual_mass)}, the chance a "
                f"single draft here is rejected"
            )
        else:
            bits.append(
                f"TV(p, q) = {fmt_prob(pos.residual_mass)}, the exact rule's chance of rejecting a single "
                f"draft here ({words.rejection_words})"
            )
    dist = law_values(pos, source)
    if dist:
        top = sorted(zip(pos.ids, dist), key=lambda t: -t[1])[:TOP_RESIDUAL]
        bits.append(
            f"top of the {source.label}: "
            + ", ".join(f"{_token_text(t, texts, decode)} {fmt_prob(v)}" for t, v in top if v > 0)
        )
    return "; ".join(bits)


def _produced_line(
    step: StepRecord, idx: StepIndex, greedy: bool, decode: Callable[[int], str] | None, algorithm: str
) -> str | None:
    last = next((n for n in reversed(step.forest) if n.status in ("resampled", "bonus")), None)
    if last is None:
        return None
    texts = {n.token_id: n.token_text for n in step.forest}
    pos = position_of(step, last)
    source = produced_source(last, idx, greedy)
    if step.rule is None and last.status == "bonus" and last.p == 1.0 and not idx.groups:
        source = rule_words.words(None, greedy=True).bonus(False)  # an older trace's target-only step at T = 0
    if last.status == "resampled":
        rejected = [n for n in idx.drafted_at(last) if n.status == "rejected"]
        line = (
            f"**Resampled** {_tok(last)}" + ("" if greedy else f" (p = {fmt_prob(last.p)})") + f" from {source.words}"
        )
        if greedy:
            line += ": every draft here was rejected" if len(rejected) > 1 else ": the draft here was rejected"
        elif pos is not None:
            bits = _residual_bits(pos, texts, decode, source, idx.words)
            if bits:
                line += f": {bits}"
        return line + "."
    p = "" if greedy or source.law == "argmax" else f" (p = {fmt_prob(last.p)})"
    if algorithm == "ar" or not idx.groups:
        return f"**Drew** {_tok(last)} from {source.words}{p}."
    return (
        f"**Bonus** {_tok(last)} drawn from {source.words}{p} after the last draft on the path was accepted: "
        f"one more token at no extra call."
    )


def feature_line(step: StepRecord, drafter: dict) -> str:
    """How a feature drafter (EAGLE-3 style, ``RunTrace.drafter`` kind ``feature``) drafted ``step``."""
    if step.index == 0 and not step.n_drafted:
        return (
            "The feature head drafts from the target's own hidden states, which exist only once the "
            "target has read the prompt: this first call reads it and drafts nothing (EAGLE's prefill)."
        )
    layers = ", ".join(str(x) for x in drafter.get("layers") or []) or "?"
    vocab = drafter.get("draft_vocab")
    size = f"{vocab:,}" if isinstance(vocab, int) else "its"
    return (
        f"The **feature head** drafted it: the first token from the target's own hidden states (layers "
        f"{layers}) at the last verified position, read from the previous target call (no extra call), "
        f"deeper tokens from the head's own output feature. It proposes only {size} tokens of the target's "
        f"vocabulary (q = 0 for the rest): any other token enters the text only through the residual."
    )


def step_narrative(
    step: StepRecord, algorithm: str, decode: Callable[[int], str] | None = None, drafter: dict | None = None
) -> str:
    """Markdown telling what ``step`` did; ``decode`` (optional) names token ids that no node carries;
    ``drafter`` (``RunTrace.drafter``): a feature drafter's step says where its tokens came from."""
    idx = StepIndex(step)
    greedy = is_greedy_step(step)
    out = [
        f"**Step {step.index + 1}** · `{algorithm}`" + (" · greedy (T = 0)" if greedy else ""),
        "",
        _drafted_line(step, idx, algorithm),
    ]
    why_copies = copies_line(step, greedy)
    if why_copies:
        out += ["", why_copies]
    if (drafter or {}).get("kind") == "feature":
        out += ["", feature_line(step, drafter)]
    tests = _test_lines(step, idx, greedy)
    if tests:
        out += ["", "**Tests** (accept when u < a):", *tests]
        skipped_deep = [
            n
            for n in step.forest
            if n.status == "not_reached" and not not_reached_reason(n, idx).startswith("never tested")
        ]
        if skipped_deep:
            out.append(
                f"- {_plural(len(skipped_deep), 'more drafted node')} never verified: below a rejected or "
                f"skipped token."
            )
    accepted = [n for n in step.forest if n.status == "accepted"]
    drafted = step.n_drafted
    if drafted:
        if accepted:
            toks = " ".join(_tok(n) for n in accepted)
            out += ["", f"**Accepted** {len(accepted)} of {drafted} drafted: {toks}."]
        else:
            out += ["", f"**Accepted** none of the {drafted} drafted."]
    produced = _produced_line(step, idx, greedy, decode, algorithm)
    if produced:
        out += ["", produced]
    n = len(step.committed)
    out += [
        "",
        f"**Bought** +{_plural(n, 'token')} for {_plural(step.target_calls, 'target call')} and "
        f"{_plural(step.draft_calls, 'draft call')}.",
    ]
    return "\n".join(out)


def informative_step(trace: RunTrace) -> int:
    """The step (0-based) a view should open on after a run: the largest tree (most drafted nodes)
    that had a rejection, else the largest tree; ties go to a step that also accepted something,
    then to the latest. So a run that ends with a trivial "drafted 0" step opens on a real one."""
    if not trace.steps:
        return 0

    def score(i: int) -> tuple:
        s = trace.steps[i]
        rejected = any(n.status == "rejected" for n in s.forest)
        return (rejected, s.n_drafted, s.n_accepted > 0, i)

    return max(range(len(trace.steps)), key=score)


__all__ = ["informative_step", "step_narrative"]
