"""A ``beam`` or ``dsbd`` step told in plain words, and one of its forest's nodes inspected
("Dynamic-Width Speculative Beam Decoding", arXiv 2409.16560).

The tree-walk narrative (``viz.narrative``) tests siblings position by position; a beam layer is
tested as a whole, its drafts in draw order across every beam, against the joint law, so it is told
here layer by layer, from the trace alone:

* ``p_beam``: the target's joint law over the layer's candidates (beam, next token),
  ``T(softmax(logL_beam + log p(token | beam)))`` (Eq 1); ``q_beam`` the draft's, the law the drafts
  were drawn from (i.i.d.).
* the width: ``P(m = k)``, the law of the number of accepted drafts among the W_S drafts (Eqs 2-4,
  from p_beam and q_beam), its tail ``P(m ≥ K)`` (Eq 5) and the threshold t: W_L is the largest K
  with ``P(m ≥ K) ≥ t``, floored at W_min (Eqs 6-7); with ``dynamic`` off it stays W_min.
* the tests, in the words of the step's rule (``core.rule_words``, via ``viz.explain.describe_test``);
  a layer passes when W_L drafts were accepted (later drafts are skipped), else it fails: its beams
  are its accepted drafts, one draw from the final residual and fresh draws from p_beam.
* the beams kept (``DsbdState.kept``, ★ in the forest) and why, the best one, those set aside at
  EOS, and what the step committed.

``beam`` (beam sampling / search with the target alone) draws W beams i.i.d. from p_beam, or keeps
the W best candidates at T = 0: nothing is drafted or tested.
"""

from __future__ import annotations

from specviz.step_state import BeamStepState, BonusLayer, DsbdState, VerifiedLayer
from specviz.trace import DRAFTED, RunTrace, StepRecord, TreeNode
from specviz.viz.beams import _beams, _state, beam_rows
from specviz.viz.explain import (
    TESTED,
    StepIndex,
    beam_layer_reason,
    describe_test,
    escape_ws,
    is_greedy_step,
    node_decision,
)
from specviz.viz.narrative import _md
from specviz.viz.registry import register_view
from specviz.viz.style import fmt_prob

P_BEAM = (
    "p_beam, the target's joint law over the candidates (beam, next token): T(softmax(logL_beam + "
    "log p(token | beam))), DSBD Eq 1"
)
Q_BEAM = "q_beam, the draft's joint law over the same (beam, next token) candidates"
TAIL = 40  # characters of a beam's text quoted in the narrative


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _tok(n: TreeNode) -> str:
    return _md('"' + escape_ws(n.token_text) + '"')


def _probs(values: list[float]) -> str:
    return "[" + ", ".join(fmt_prob(v) for v in values) + "]"


def _quote(text: str) -> str:
    tail = text[-TAIL:]
    return _md(("…" if len(text) > TAIL else "") + '"' + escape_ws(tail) + '"')


def width_sentence(lv: VerifiedLayer, dynamic: bool = True) -> str:
    """How W_L of a verified layer was chosen, with the law behind it (Eqs 2-7)."""
    law, surv = lv.p_accept, lv.survival
    ws, width = lv.candidates, lv.width
    if not law:
        return f"width W_L = {width}."
    t, floor = lv.threshold, lv.min_width
    line = (
        f"P(m = k) for k = 0..{len(law) - 1}, the law of the number m of accepted drafts among the "
        f"W_S = {ws} (Eqs 2-4, from p_beam and q_beam): {_probs(law)}; P(m ≥ K): {_probs(surv)}. "
    )
    if not dynamic:
        return line + f"Dynamic width off: W_L = W_min = {width} (the law is shown for reference)."
    tilde = lv.unfloored
    line += f"The largest K with P(m ≥ K) ≥ t = {t:g} is {tilde} (Eq 7)"
    if tilde < floor:
        line += f", raised to W_min = {floor} (Eq 6)"
    line += f": **W_L = {width}**, passed with chance P(m ≥ {width}) = "
    line += f"{fmt_prob(surv[width]) if width < len(surv) else '0'}."
    return line


def _orphan(n: TreeNode, idx: StepIndex) -> str:
    """Why a draft had p_res = 0: its parent draft was not accepted, so its row of p_beam is 0."""
    parent = idx.nodes.get(n.parent) if n.parent is not None else None
    if n.status == "rejected" and not n.p_residual and parent is not None and parent.status != "accepted":
        return f" (its parent, node {parent.id}, was not accepted: p_beam is 0 on its row)"
    return ""


def _layer_lines(
    step: StepRecord, idx: StepIndex, lv: BonusLayer | VerifiedLayer, dynamic: bool, greedy: bool
) -> list[str]:
    depth = lv.layer - 1
    if isinstance(lv, BonusLayer):
        return [
            f"**Bonus layer {lv.layer}**: every draft layer passed; {_plural(lv.kept, 'beam')} "
            f"drawn from {'the target beam search (T = 0)' if greedy else 'p_beam'} after the last layer's "
            f"accepted drafts: one more token at no extra call."
        ]
    head = f"**Layer {lv.layer}** ({_plural(lv.parents, 'parent beam')}, {lv.candidates} drafts)"
    out = [
        f"{head}: "
        + (
            "the target's beam search keeps its W_L best candidates; a draft is accepted iff it is "
            f"one of them (W_L = {lv.width})."
            if greedy
            else width_sentence(lv, dynamic)
        )
    ]
    nodes = [n for n in step.forest if n.depth == depth and n.status in DRAFTED]
    tests = [
        f"({i}) {_tok(n)} (beam {n.root}, node {n.id}): {describe_test(n, idx)}{_orphan(n, idx)}"
        for i, n in enumerate((n for n in nodes if n.status in TESTED), 1)
    ]
    if tests:
        rule = "" if greedy else " (accept when u < a)"
        out.append(f"- Tested in draw order{rule}: " + "; ".join(tests) + ".")
    skipped = [n for n in nodes if n.status == "not_reached"]
    if skipped and lv.passed:
        out.append(
            f"- Never tested: {', '.join(_tok(n) for n in skipped)} (W_L = {lv.width} drafts were already accepted)."
        )
    elif skipped:
        out.append(f"- Never tested: {', '.join(_tok(n) for n in skipped)} (below a rejected draft).")
    acc = lv.accepted
    if lv.passed:
        out.append(
            f"- Accepted {acc} of the {lv.width} needed: **passed**; its accepted drafts are the "
            f"beams layer {lv.layer + 1} extends."
        )
    elif greedy:
        out.append(
            f"- Accepted {acc} of the {lv.width} needed: **failed**; the step ends here: its beams are "
            f"the target's beam-search choices, drafted or not."
        )
    else:
        fill = max(lv.kept - acc - 1, 0)
        out.append(
            f"- Accepted {acc} of the {lv.width} needed: **failed**; the step ends here with its "
            f"{_plural(acc, 'accepted draft')}, one beam resampled from the layer's final residual"
            + (f" and {_plural(fill, 'fresh draw')} from p_beam" if fill else "")
            + " (DSBD Alg. 1)."
        )
    return out


def kept_reason(step: StepRecord, node: TreeNode) -> str:
    """Why a kept node is a beam: an accepted draft, a residual draw, a fresh or bonus draw."""
    st = _state(step)
    if not isinstance(st, DsbdState):
        return "beam search (one of the W best candidates)" if node.p is None else "drawn from p_beam"
    lv = st.levels[node.depth] if node.depth < len(st.levels) else None
    if node.status == "accepted":
        return f"accepted draft of layer {node.depth + 1}"
    if node.status == "resampled" and step.rule is not None and step.rule.get("name") == "dsbd_greedy":
        return f"kept by the target's beam search at layer {node.depth + 1} (not drafted)"
    if node.status == "resampled":
        return f"resampled from layer {node.depth + 1}'s final residual (the layer failed)"
    if isinstance(lv, BonusLayer):
        return "bonus layer: drawn from p_beam"
    return f"fresh draw from p_beam (layer {node.depth + 1} failed)"


def _kept(step: StepRecord) -> list[int]:
    """Trace node ids of the step's output beams: ``dsbd``'s ``kept``; every node of a ``beam`` step."""
    st = _state(step)
    return list(st.kept) if isinstance(st, DsbdState) else [n.id for n in step.forest]


def _kept_lines(trace: RunTrace, k: int) -> list[str]:
    step = trace.steps[k]
    rows = beam_rows(trace, k)
    kept = _kept(step)
    byid = {n.id: n for n in step.forest}
    listed = _beams(step)
    carried = set(listed.carried if listed is not None else range(len(rows)))
    items = []
    for i, nid in enumerate(kept):
        node = byid.get(nid)
        if node is None or i >= len(rows):
            continue
        r = rows[i]
        flags = [
            f
            for f, on in (
                ("best", r["best"]),
                ("finished at EOS, set aside", r["finished"]),
                ("not carried on", not r["finished"] and i not in carried),
            )
            if on
        ]
        items.append(
            f"- beam {i} {_quote(r['text'])}: {kept_reason(step, node)}, extending input beam {node.root} "
            f"(log-lik {r['loglik']:.2f})" + (f" · {', '.join(flags)}" if flags else "")
        )
    extra = [r for r in rows[len(kept) :] if r["finished"]]
    for r in extra:
        items.append(
            f"- beam {r['index']} {_quote(r['text'])}: the best finished beam of an earlier step"
            + (" · best" if r["best"] else "")
        )
    head = (
        f"**Kept** {_plural(len(kept), 'beam')} (★ in the forest); the best by mean log-probability is "
        f"the output if the run ends here:"
    )
    return [head, *items]


def beam_narrative(trace: RunTrace, k: int) -> str:
    """Markdown telling what step ``k`` of a ``beam`` / ``dsbd`` trace did (module docstring)."""
    step = trace.steps[k]
    st = _state(step)
    greedy = is_greedy_step(step) or float(trace.sampling.get("temperature", 1.0)) == 0.0
    head = f"**Step {step.index + 1}** · `{trace.algorithm}` · " + ("greedy (T = 0)" if greedy else "sampled")
    before = _beams(trace.steps[k - 1]) if k else None
    n_in = (len(before.carried) if before is not None else 0) if k else 1
    out = [head, ""]
    if not isinstance(st, DsbdState):
        w = len(step.forest)
        if greedy:
            out.append(
                f"**Scored** every (beam, next token) candidate of {_plural(n_in, 'input beam')} in one "
                f"target call by logL_beam + log p(token | beam) and **kept** the {w} best (beam search)."
            )
        else:
            out.append(
                f"**Drew** {w} beams i.i.d. (with replacement) from {P_BEAM}, over "
                f"{_plural(n_in, 'input beam')}, in one target call: "
                + "; ".join(f"{_tok(n)} after beam {n.root} (p_beam = {fmt_prob(n.p)})" for n in step.forest)
                + ". Nothing is drafted or tested."
            )
    else:
        levels = st.levels
        drafted = [n for n in step.forest if n.status in DRAFTED]
        g = len(st.verified)
        calls = f", in {_plural(step.draft_calls, 'draft call')}" if step.draft_calls else ""
        if drafted:
            out.append(
                f"**Drafted** a forest from {_plural(n_in, 'input beam')}: {_plural(g, 'layer')} of W_S = "
                f"{st.drafts} drafts ({_plural(len(drafted), 'node')}), drawn i.i.d. from "
                f"{Q_BEAM}{calls}. "
                f"Each layer is tested as a whole against {P_BEAM}."
            )
        else:
            out.append("**Drafted** nothing this step (no room left under max new tokens).")
        idx = StepIndex(step)
        for lv in levels:
            out += ["", *_layer_lines(step, idx, lv, st.dynamic, greedy)]
        unverified = [n for n in drafted if n.depth >= len(levels) or isinstance(levels[n.depth], BonusLayer)]
        if unverified:
            out += [
                "",
                f"{_plural(len(unverified), 'drafted node')} in the layers after the last verified one "
                f"{'was' if len(unverified) == 1 else 'were'} never tested.",
            ]
    out += ["", *_kept_lines(trace, k)]
    n = len(step.committed)
    out += [
        "",
        f"**Bought** +{_plural(n, 'token')} (the prefix every beam now agrees on, or the best beam at the "
        f"end) for {_plural(step.target_calls, 'target call')} and {_plural(step.draft_calls, 'draft call')}.",
    ]
    return "\n".join(out)


def beam_node_story(trace: RunTrace, k: int, node_id: int) -> str:
    """Markdown on one clicked node of a beam forest: its beam, p_beam and q_beam, its test or what it
    was drawn from, its layer's width law, and whether it was kept and why."""
    step = trace.steps[k]
    node = next((n for n in step.forest if n.id == node_id), None)
    if node is None:
        return f"**Node {node_id}**: not in step {k + 1}'s forest (select a node of this step)."
    st = _state(step)
    idx = StepIndex(step)
    out = [
        f"**Selected: node {node.id}** {_tok(node)}, extending beam {node.root}, layer {node.depth + 1} · "
        f"{node.status.replace('_', ' ')}",
        ("- p_beam: none at T = 0" if node.p is None else f"- p_beam = {fmt_prob(node.p)}")
        + ("" if node.q is None else f", q_beam = {fmt_prob(node.q)}")
        + (f", p_res = {fmt_prob(node.p_residual)}" if node.p_residual is not None else "")
        + " (joint laws over the layer's (beam, token) candidates).",
    ]
    levels = st.levels if isinstance(st, DsbdState) else ()
    lv = levels[node.depth] if node.depth < len(levels) else None
    if node.status == "not_reached":
        decision = beam_layer_reason(node, step) or node_decision(node, idx)
    elif node.p is None and node.status in ("bonus", "resampled"):
        decision = "kept by beam search at T = 0 (scored by logL_beam + log p(token | beam); no law drawn from)"
    else:
        decision = node_decision(node, idx)
    if decision:
        out.append(f"- {decision}.")
    if isinstance(lv, VerifiedLayer) and isinstance(st, DsbdState) and not is_greedy_step(step):
        out.append(f"- Layer {lv.layer}'s width: {width_sentence(lv, st.dynamic)}")
    kept = _kept(step)
    if node.id in kept:
        out.append(f"- **Kept** as beam {kept.index(node.id)}: {kept_reason(step, node)}.")
    elif node.status == "accepted":
        out.append("- Not kept itself: its layer passed, so the beams go on through the next layer's drafts.")
    else:
        out.append("- Not kept.")
    return "\n".join(out)


@register_view(BeamStepState, "narrative")
def beam_story(trace: RunTrace, k: int, selected: int | None = None) -> str:
    """The narrative panel of a beam step: ``beam_narrative``, under the clicked node's story when a node
    is selected (its beam, p_beam / q_beam, layer law and fate)."""
    story = beam_narrative(trace, k)
    return story if selected is None else beam_node_story(trace, k, selected) + "\n\n---\n\n" + story


__all__ = ["beam_narrative", "beam_node_story", "beam_story", "kept_reason", "width_sentence"]
