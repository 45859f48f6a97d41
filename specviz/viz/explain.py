"""Why each node of a step ended as it did, in words: shared by the tree hover, the token tooltips
and the step narrative, so all three say the same thing.

The words are the rule's own (``core.rule_words``): a step records the rule that decided it
(``StepRecord.rule``), and every test is stated by that rule's formula with the numbers the trace
holds for the node (``p``, ``p_residual``, ``q``, the draw ``u``), every resample by the law that rule
draws from, every bonus likewise. The siblings at a position are tested in draw order; the first
with ``u < a`` is accepted and the later ones are never tested. A step without the record (schema
<= 3) is told by the plain rule, ``a = min(1, p_res / q)`` (MCSD Eqs. 3-4, Sequoia Algorithm 1), and
by exact match where every test was one (temperature 0: ``a`` is 0 or 1, no draw). A v1 trace has
no ``p_residual``: the text then says the residual was used without giving its value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specviz.core import rule_words
from specviz.core.rule_words import RuleWords, Source, Test
from specviz.step_state import DsbdState
from specviz.trace import DRAFTED, TESTED, PositionRecord, StepRecord, TreeNode
from specviz.viz.style import fmt_prob

Key = tuple[int | None, int]  # (parent node id, root) of a sibling group / verified position


def group_key(node: TreeNode) -> Key:
    """The position a node was drafted at: its parent, and for roots (parent ``None``) also its tree."""
    return (node.parent, node.root if node.parent is None else 0)


@dataclass
class StepIndex:
    """Lookups over one step's forest: nodes by id and drafted siblings per position, in draw order."""

    step: StepRecord
    nodes: dict[int, TreeNode] = field(default_factory=dict)
    groups: dict[Key, list[TreeNode]] = field(default_factory=dict)
    words: RuleWords = field(init=False)

    def __post_init__(self) -> None:
        for n in self.step.forest:
            self.nodes[n.id] = n
            if n.status in DRAFTED:
                self.groups.setdefault(group_key(n), []).append(n)
        self.words = step_words(self.step)

    def siblings(self, node: TreeNode) -> list[TreeNode]:
        """The drafted nodes at ``node``'s position (itself included), in draw order."""
        return self.groups.get(group_key(node), [node])

    def drafted_at(self, node: TreeNode) -> list[TreeNode]:
        """The drafted nodes at the position ``node`` was drafted or produced at (may be empty)."""
        return self.groups.get(group_key(node), [])

    def earlier_rejected(self, node: TreeNode) -> list[TreeNode]:
        out = []
        for s in self.siblings(node):
            if s.id == node.id:
                break
            if s.status == "rejected":
                out.append(s)
        return out

    def accepted_sibling(self, node: TreeNode) -> TreeNode | None:
        return next((s for s in self.siblings(node) if s.status == "accepted" and s.id != node.id), None)

    def position(self, node: TreeNode) -> PositionRecord | None:
        """The verified position ``node`` was drafted (or produced) at, if the step recorded it."""
        return position_of(self.step, node)


def copies(step: StepRecord) -> dict[int, int]:
    """Drafted node id -> the id of the first earlier sibling at its position with the same token: a
    copy. Only sampling with replacement drafts copies (at T = 0 every draw is the draft's argmax); a
    copy after an accepted original is never tested (``not_reached``), after a rejected one it is
    rejected too (its token is not the argmax either; at T > 0 its residual mass is 0)."""
    first: dict[tuple[Key, int], int] = {}
    out: dict[int, int] = {}
    for n in step.forest:
        if n.status in DRAFTED:
            orig = first.setdefault((group_key(n), n.token_id), n.id)
            if orig != n.id:
                out[n.id] = orig
    return out


def position_of(step: StepRecord, node: TreeNode) -> PositionRecord | None:
    """The ``PositionRecord`` whose ``parent`` is ``node.parent`` (for roots, the one of its tree,
    else any roots' position); ``None`` for v1 traces or when positions were not recorded."""
    same = [r for r in step.positions if r.parent == node.parent]
    if node.parent is None and len(same) > 1:
        return next((r for r in same if r.root == node.root), same[0])
    return same[0] if same else None


def is_exact_match(node: TreeNode) -> bool:
    """A test with no randomness because the target was one-hot (temperature 0): ``a`` is 0 or 1,
    no draw, and ``p`` (one-hot) equals ``a``. Read off the node: for steps without a rule record."""
    return (
        node.draw is None
        and node.accept_prob in (0.0, 1.0)
        and node.p in (0.0, 1.0)
        and node.accept_prob == node.p
        and node.status in TESTED
    )


def is_greedy_step(step: StepRecord) -> bool:
    """A temperature-0 step: its rule is a T = 0 rule; without a rule record, every tested node was an
    exact-match test (``False`` if none was tested)."""
    if step.rule is not None:
        return rule_words.words(step.rule).greedy
    tested = [n for n in step.forest if n.status in TESTED]
    return bool(tested) and all(is_exact_match(n) for n in tested)


def step_words(step: StepRecord) -> RuleWords:
    """The words of the rule that decided ``step`` (``core.rule_words``; the plain rule for a step
    without the record, exact match when every test was one)."""
    return rule_words.words(step.rule, greedy=step.rule is None and is_greedy_step(step))


def token_label(node: TreeNode) -> str:
    """A token as quoted text for prose: ``"ab"`` with whitespace escaped (newline as ⏎)."""
    return '"' + escape_ws(node.token_text) + '"'


def escape_ws(text: str) -> str:
    """Whitespace made visible for prose: newline ↵ (as in the token view), tab ⇥, carriage return ␍."""
    return text.replace("\r", "␍").replace("\n", "↵").replace("\t", "⇥") or "∅"


def _words(node: TreeNode, idx: StepIndex | None, greedy: bool | None) -> RuleWords:
    """The rule words for ``node``: its step's record; without one the plain rule, or exact match
    when ``greedy`` says so (by default when the node reads as one)."""
    if idx is not None and idx.step.rule is not None:
        return idx.words
    if greedy or (greedy is None and is_exact_match(node)):
        return rule_words.words(None, greedy=True)
    return rule_words.words(None)


def node_test(node: TreeNode, idx: StepIndex | None = None, greedy: bool | None = None) -> Test | None:
    """The test ``node`` faced, as its rule states it (None if it was not tested)."""
    if node.status not in TESTED or node.accept_prob is None:
        return None
    earlier = idx.earlier_rejected(node) if idx is not None else []
    pos = idx.position(node) if idx is not None else None
    fallback = False
    if pos is not None and pos.q is not None and node.token_id in pos.ids:
        fallback = pos.q[pos.ids.index(node.token_id)] == 0.0  # drawn by the uniform fallback (Sequoia)
    return _words(node, idx, greedy).test(
        p=node.p,
        p_res=node.p_residual,
        q=node.q,
        earlier=len(earlier),
        duplicate=any(s.token_id == node.token_id for s in earlier),
        fallback=fallback,
        accepted=node.status == "accepted",
    )


def describe_test(node: TreeNode, idx: StepIndex | None = None, greedy: bool | None = None) -> str:
    """The test ``node`` faced and its outcome in its rule's words, e.g.
    ``u = 0.41 < a = 0.73 = min(1, p_res/q) with p_res = 0.5, q = 0.68 → accepted``.

    ``greedy`` forces the exact-match wording for a step without a rule record (temperature 0); by
    default it is read off the node."""
    test = node_test(node, idx, greedy)
    if test is None:
        return ""
    a = node.accept_prob
    outcome = "accepted" if node.status == "accepted" else "rejected"
    if not test.formula:
        return f"{test.sentence} → {outcome}"
    given = [f"{name} = {fmt_prob(v)}" for name, v in test.values if v is not None]
    missing = [name for name, v in test.values if v is None]
    with_ = "with " + ", ".join(given)
    if missing:
        with_ += f" ({', '.join(missing)} not recorded in this trace)"
    if test.note:
        with_ += f" ({test.note})"
    if node.draw is None:
        how = "with no draw" if a in (0.0, 1.0) else "(no draw recorded)"
        return f"a = {test.formula} = {fmt_prob(a)} {with_}: {outcome} {how}"
    op = "<" if node.draw < a else "≥"
    return f"u = {fmt_prob(node.draw)} {op} a = {fmt_prob(a)} = {test.formula} {with_} → {outcome}"


def produced_source(node: TreeNode, idx: StepIndex, greedy: bool | None = None) -> Source | None:
    """What a resampled or bonus ``node`` was drawn from, by its step's rule (None for a draft)."""
    words = idx.words if idx.step.rule is not None or greedy is None else rule_words.words(None, greedy=greedy)
    if node.status == "resampled":
        return words.resample(sum(1 for s in idx.drafted_at(node) if s.status == "rejected"))
    if node.status == "bonus":
        parent = idx.nodes.get(node.parent) if node.parent is not None else None
        return words.bonus(drafted=not (parent is None and not idx.groups))
    return None


def not_reached_reason(node: TreeNode, idx: StepIndex) -> str:
    """Why a drafted node was never tested. Walks up to the first ancestor (or the node itself) whose
    position was tested: that one was either rejected, or skipped because an earlier sibling at its
    position was accepted (later siblings are never tested). A ``dsbd`` layer is tested as a whole:
    ``beam_layer_reason``."""
    layered = beam_layer_reason(node, idx.step)
    if layered is not None:
        return layered
    cur = node
    seen: set[int] = set()
    while cur.id not in seen:
        seen.add(cur.id)
        acc = idx.accepted_sibling(cur)
        parent = idx.nodes.get(cur.parent) if cur.parent is not None else None
        parent_ok = parent is None or parent.status == "accepted"
        if cur.status == "not_reached" and parent_ok and acc is not None:
            if cur is node:
                return (
                    f"never tested: an earlier sibling, {token_label(acc)} (node {acc.id}), was accepted at this "
                    f"position, so the later siblings are skipped"
                )
            return (
                f"never verified: the token {token_label(cur)} on its path was never tested (an earlier "
                f"sibling, {token_label(acc)}, was accepted there)"
            )
        if cur.status == "rejected" and cur is not node:
            return f"never verified: the token {token_label(cur)} on its path was rejected"
        if parent is None:
            break
        cur = parent
    return "never verified: the verification walk stopped before this position"


def beam_layer_reason(node: TreeNode, step: StepRecord) -> str | None:
    """Why a drafted node of a ``dsbd`` step was never tested (None for other steps): its layer
    had accepted the W_L drafts it needed (the later ones are skipped, DSBD Alg. 1), or the step
    ended at an earlier layer that failed."""
    c = step.controller
    if not isinstance(c, DsbdState):
        return None
    levels = c.verified
    if node.depth < len(levels) and levels[node.depth].passed:
        return (
            f"never tested: layer {node.depth + 1} had already accepted the W_L = "
            f"{levels[node.depth].width} drafts it needed, so its later drafts are skipped"
        )
    if levels and levels[-1].passed:  # no parent left: every draft it accepted was EOS
        return (
            f"never verified: the step ended after layer {len(levels)}, whose accepted drafts all ended at "
            f"EOS, before this node's layer {node.depth + 1}"
        )
    return (
        f"never verified: the step ended at layer {len(levels)}, which failed, before this node's layer "
        f"{node.depth + 1}"
    )


def node_decision(node: TreeNode, idx: StepIndex, greedy: bool | None = None) -> str:
    """One line on how ``node`` ended: its test, why it was not reached, or what it was drawn from."""
    source = produced_source(node, idx, greedy)
    if source is not None:
        return f"drawn from {source.words}" + (f" ({source.why})" if source.why else "")
    if node.status == "not_reached":
        return not_reached_reason(node, idx)
    line = describe_test(node, idx, greedy)
    return line or node.status
