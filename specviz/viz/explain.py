"""Why each node of a step ended as it did, in words: shared by the tree hover, the token tooltips
and the step narrative, so all three say the same thing.

The rule being explained is the multi-candidate verification of ``specviz.core.acceptance``: at a
position the drafted siblings are tested in draw order; candidate i is accepted with probability
``a_i = min(1, p_res(x_i) / q(x_i))`` where ``p_res`` is the target after the earlier siblings were
rejected (``p`` itself for the first one; MCSD Eqs. 3-4, Sequoia Algorithm 1); the first i with
``u_i < a_i`` is accepted and the later siblings are never tested. If every sibling is rejected the
token is drawn from the final residual. At temperature 0 the warped target is one-hot and the test is
an exact match with the target's argmax (``a`` is 0 or 1, no draw). A v1 trace has no ``p_residual``:
the text then says the residual was used without giving its value.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from specviz.trace import PositionRecord, StepRecord, TreeNode
from specviz.viz.style import fmt_prob

DRAFTED = ("accepted", "rejected", "not_reached")
TESTED = ("accepted", "rejected")

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

    def __post_init__(self) -> None:
        for n in self.step.forest:
            self.nodes[n.id] = n
            if n.status in DRAFTED:
                self.groups.setdefault(group_key(n), []).append(n)

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


def position_of(step: StepRecord, node: TreeNode) -> PositionRecord | None:
    """The ``PositionRecord`` whose ``parent`` is ``node.parent`` (for roots, the one of its tree,
    else any roots' position); ``None`` for v1 traces or when positions were not recorded."""
    same = [r for r in step.positions if r.parent == node.parent]
    if node.parent is None and len(same) > 1:
        return next((r for r in same if r.root == node.root), same[0])
    return same[0] if same else None


def is_exact_match(node: TreeNode) -> bool:
    """A test with no randomness because the target was one-hot (temperature 0): ``a`` is 0 or 1,
    no draw, and ``p`` (one-hot) equals ``a``."""
    return (node.draw is None and node.accept_prob in (0.0, 1.0) and node.p in (0.0, 1.0)
            and node.accept_prob == node.p and node.status in TESTED)


def is_greedy_step(step: StepRecord) -> bool:
    """Every tested node was an exact-match test (a temperature-0 step); ``False`` if none was tested."""
    tested = [n for n in step.forest if n.status in TESTED]
    return bool(tested) and all(is_exact_match(n) for n in tested)


def token_label(node: TreeNode) -> str:
    """A token as quoted text for prose: ``"ab"`` with whitespace escaped (newline as ⏎)."""
    return '"' + escape_ws(node.token_text) + '"'


def escape_ws(text: str) -> str:
    """Whitespace made visible for prose: newline ↵ (as in the token view), tab ⇥, carriage return ␍."""
    return text.replace("\r", "␍").replace("\n", "↵").replace("\t", "⇥") or "∅"


def describe_test(node: TreeNode, idx: StepIndex | None = None, greedy: bool | None = None) -> str:
    """The test ``node`` faced and its outcome, e.g.
    ``u = 0.41 < a = 0.73 = min(1, p_res/q) with p_res = 0.5, q = 0.68 → accepted``.

    ``greedy`` forces the exact-match wording (temperature 0); by default it is read off the node."""
    if node.status not in TESTED or node.accept_prob is None:
        return ""
    a = node.accept_prob
    outcome = "accepted" if node.status == "accepted" else "rejected"
    if greedy or (greedy is None and is_exact_match(node)):
        if node.status == "accepted":
            return "exact match at T = 0: it is the target's argmax → accepted"
        return "exact match at T = 0: it is not the target's argmax → rejected"
    earlier = idx.earlier_rejected(node) if idx is not None else []
    dup = any(s.token_id == node.token_id for s in earlier)
    if node.p_residual is not None:
        p_name = "p_res" if earlier else "p"
        p_val = node.p_residual
    elif earlier:
        p_name, p_val = "p_res", None  # residual used, value not in this (v1) trace
    else:
        p_name, p_val = "p", node.p
    if dup and a == 0.0:
        return f"a = 0: the same token as an earlier rejected sibling (its residual mass is 0) → {outcome}"
    ratio = f"min(1, {p_name}/q)"
    if p_val is not None:
        with_ = f"with {p_name} = {fmt_prob(p_val)}, q = {fmt_prob(node.q)}"
    else:
        with_ = f"with q = {fmt_prob(node.q)} ({p_name} not recorded in this trace)"
    if node.draw is None:
        how = "with no draw" if a in (0.0, 1.0) else "(no draw recorded)"
        return f"a = {ratio} = {fmt_prob(a)} {with_}: {outcome} {how}"
    op = "<" if node.draw < a else "≥"
    return f"u = {fmt_prob(node.draw)} {op} a = {fmt_prob(a)} = {ratio} {with_} → {outcome}"


def not_reached_reason(node: TreeNode, idx: StepIndex) -> str:
    """Why a drafted node was never tested. Walks up to the first ancestor (or the node itself) whose
    position was tested: that one was either rejected, or skipped because an earlier sibling at its
    position was accepted (later siblings are never tested)."""
    cur = node
    seen: set[int] = set()
    while cur.id not in seen:
        seen.add(cur.id)
        acc = idx.accepted_sibling(cur)
        parent = idx.nodes.get(cur.parent) if cur.parent is not None else None
        parent_ok = parent is None or parent.status == "accepted"
        if cur.status == "not_reached" and parent_ok and acc is not None:
            if cur is node:
                return (f"never tested: an earlier sibling, {token_label(acc)} (node {acc.id}), was accepted at this "
                        f"position, so the later siblings are skipped")
            return (f"never verified: the token {token_label(cur)} on its path was never tested (an earlier "
                    f"sibling, {token_label(acc)}, was accepted there)")
        if cur.status == "rejected" and cur is not node:
            return f"never verified: the token {token_label(cur)} on its path was rejected"
        if parent is None:
            break
        cur = parent
    return "never verified: the verification walk stopped before this position"


def node_decision(node: TreeNode, idx: StepIndex, greedy: bool | None = None) -> str:
    """One line on how ``node`` ended: its test, why it was not reached, or what it was drawn from."""
    if node.status == "resampled":
        if greedy:
            return "the target's argmax (T = 0), taken after every draft at this position was rejected"
        rejected = [s for s in idx.drafted_at(node) if s.status == "rejected"]
        if len(rejected) > 1:
            return (f"drawn from the final residual after {len(rejected)} rejections at this position (the residual "
                    f"norm(max(0, p − q)) taken once per rejected sibling)")
        return "drawn from the residual norm(max(0, p − q)) after the draft at this position was rejected"
    if node.status == "bonus":
        parent = idx.nodes.get(node.parent) if node.parent is not None else None
        if parent is None and not idx.groups:
            return "drawn from the target p (nothing was drafted)"
        return "drawn from the target p (every draft token before it was accepted)"
    if node.status == "not_reached":
        return not_reached_reason(node, idx)
    line = describe_test(node, idx, greedy)
    return line or node.status
