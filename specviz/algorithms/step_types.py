"""The step loop's vocabulary: what its parts hand each other in one step (``step_loop`` drives them).

* ``Plan`` (with DSBD's ``LayerWidth``): what a controller asks the drafter to draft, handed over
  frozen; the drafter never sees the controller;
* ``DraftedTree``: what a drafter proposed, as the verifier walks it;
* ``Recorded``, ``Commit``, ``StepResult``: a verifier's part of the ``StepRecord``, the tokens a step
  commits, and what the controller learns from;
* the three roles: ``Drafter`` and ``Verifier`` (protocols) and ``Controller`` (the neutral base).

**Plan.** The drafter gets the template ``shape`` (cut to the token budget by the step loop) and the
expansion decisions, as two functions it calls while drafting:

* ``go_on(tree, node)`` after **every** drafted token: whether to draft on beneath it (EESD's
  stop-after-each-token rule, Liu et al. 2024, arXiv 2406.03853, Algorithm 1);
* ``keep(tree, level, nodes)`` after each drafted level: which of its nodes are expanded further.

For a beam forest (``dsbd``) the plan also carries ``width``, the beams drafted per layer (W_S) and
kept per step, and ``layer_width``, the per-layer width rule W_L^(l) of "Dynamic-Width Speculative
Beam Decoding" (arXiv 2409.16560, Eqs 2-7) that the layer verifier applies before each layer.
The decisions only choose what is *expanded*: every drafted node stays in the tree, so each sibling
group is still drawn as the acceptance rule assumes and losslessness is untouched.

**DraftedTree.** Nodes are numbered in proposal order, which is breadth first (the target's pending
indices); ``children`` lists each node's children in **draw order** (the order the rule must test
them; MCSD, arXiv:2401.06706, §3; Sequoia, arXiv:2402.12374, Algorithm 1). ``parent_q[v]`` is the
draft distribution the children of ``v`` were drawn from (a one-hot for a deterministic drafter such
as prompt lookup), ``q_draw[i]`` the probability node i had when drawn (shown in the trace),
``root[i]`` the tree / beam the node belongs to in a forest (0 for a single tree).

Kept apart from the loop so that controllers, drafters and verifiers name these types without
importing the loop that drives them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

import torch

from specviz.core import beams as B
from specviz.core.trees import ROOT, TreeShape
from specviz.step_state import ControllerState
from specviz.trace import PositionRecord, TreeNode

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


# ---- what a drafter proposed ------------------------------------------------------------------------


@dataclass
class DraftedTree:
    """The realised tree of one step (BFS order, siblings in draw order; see the module docstring)."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    template: list[int] = field(default_factory=list)  # template node each node realises
    q_draw: list[float] = field(default_factory=list)
    duplicate: list[bool] = field(default_factory=list)
    root: list[int] = field(default_factory=list)
    children: dict[int, list[int]] = field(default_factory=lambda: {ROOT: []})
    parent_q: dict[int, torch.Tensor] = field(default_factory=dict)
    draft_index: dict[int, int] = field(default_factory=dict)  # node -> draft pending index

    def __len__(self) -> int:
        return len(self.tokens)

    def add(self, token: int, parent: int, template: int, q: float, duplicate: bool = False, root: int = 0) -> int:
        i = len(self.tokens)
        self.tokens.append(token)
        self.parents.append(parent)
        self.template.append(template)
        self.q_draw.append(q)
        self.duplicate.append(duplicate)
        self.root.append(root)
        self.children[i] = []
        self.children[parent].append(i)
        return i

    def rank(self, node: int) -> int:
        """1-based draw order of ``node`` among its siblings."""
        return self.children[self.parents[node]].index(node) + 1

    def level(self, node: int) -> int:
        """Edges from the root (1 for the root's children)."""
        lv = 0
        while node != ROOT:
            node, lv = self.parents[node], lv + 1
        return lv


# ---- what a controller asks for ---------------------------------------------------------------------


def draft_on(tree: DraftedTree, node: int) -> bool:
    """The neutral per-token decision: always draft on."""
    return True


def keep_all(tree: DraftedTree, level: int, nodes: list[int]) -> list[int]:
    """The neutral per-level decision: expand every node."""
    return nodes


@dataclass(frozen=True)
class LayerWidth:
    """DSBD's width rule (Eqs 2-7, ``core.beams.width_rule``): W_L^(l) from (p_beam, q_beam) of a layer
    with ``drafts`` (W_S) drafts, the threshold t and the floor W_min; fixed at W_min unless ``dynamic``."""

    drafts: int
    min_width: int
    threshold: float
    dynamic: bool

    def choose(self, p_beam: torch.Tensor, q_beam: torch.Tensor) -> B.WidthChoice:
        return B.width_rule(p_beam, q_beam, self.drafts, self.threshold, self.min_width, self.dynamic)


@dataclass(frozen=True)
class Plan:
    """One step's drafting plan (see the module docstring)."""

    shape: TreeShape
    go_on: Callable[[DraftedTree, int], bool] = draft_on
    keep: Callable[[DraftedTree, int, list[int]], list[int]] = keep_all
    width: int = 1
    layer_width: LayerWidth | None = None

    def cut(self, levels: int) -> "Plan":
        """The plan with its template cut to ``levels`` levels (the draft tokens still allowed)."""
        return replace(self, shape=self.shape.truncate(max(levels, 0)))


# ---- what a step did --------------------------------------------------------------------------------

# a produced token: (token id, kind: draft / resampled / bonus, its node id in the step's forest or None)
Produced = tuple[int, str, "int | None"]


@dataclass(frozen=True)
class Recorded:
    """A verifier's part of the ``StepRecord``, a pure function of its outcome: the step's ``forest``
    (drafted nodes with their statuses, then the target's own tokens), ``positions``, ``tv`` (TV(p, q)
    per tested position of a tree walk; None where the walk has no such positions) and ``rule`` (the
    acceptance rule's ``record()``)."""

    forest: list[TreeNode]
    positions: list[PositionRecord]
    rule: dict[str, Any]
    tv: list[float] | None = None


@dataclass(frozen=True)
class Commit:
    """The tokens a step commits, in order, and whether the run ends after them (``final``: a beam run
    that reached its budget or has no live beam left)."""

    tokens: list[Produced]
    final: bool = False


@dataclass(frozen=True)
class StepResult:
    """One finished step for ``Controller.update`` / ``Controller.state``: its ``index``, the ``plan``
    (cut to the budget), the drafter's ``proposal`` (a ``DraftedTree`` or a ``DraftForest``), the
    verifier's ``outcome`` and the number of tokens it ``produced``."""

    index: int
    plan: Plan
    proposal: Any
    outcome: Any
    produced: int

    @property
    def shape(self) -> TreeShape:
        return self.plan.shape

    @property
    def tree(self) -> Any:
        return self.proposal

    @property
    def path(self) -> list[int]:
        """The accepted path (node ids) of a tree walk."""
        return self.outcome.path


# ---- the three roles --------------------------------------------------------------------------------


class Drafter(Protocol):
    """What proposes the tokens the target verifies (``drafters``: the implementations):

    * ``propose(dec, plan, rule)``: draft at most the template ``plan.shape`` (cut to the budget by the
      step loop), drawing each sibling group as ``rule.replacement`` requires and asking the plan's
      ``go_on`` after every drafted token and ``keep`` after every level which nodes to expand further;
      ``parent_q`` must hold the exact distribution each sibling group was drawn from;
    * ``observe(dec, proposal, outcome)``: what verification kept, to keep its own state in step;
    * ``fed``: the tokens each forward it has made so far fed (its length is its call count)."""

    @property
    def fed(self) -> Sequence[int]: ...

    def propose(self, dec: "Decoder", plan: Plan, rule: Any) -> Any: ...

    def observe(self, dec: "Decoder", proposal: Any, outcome: Any) -> None: ...


class Verifier(Protocol):
    """The target's side of a step, in the step loop's order:

    1. ``rule(dec)``: the acceptance rule in force (the drafter draws each sibling group as it
       requires); ``lossless(dec)``: whether that rule keeps the output law (set on the decoder once);
    2. ``budget(dec)``: how many draft levels the step may still propose (the plan is cut to it);
    3. ``score(dec, proposal)``: the one target call over the proposal (the only part timed as
       ``verify_ms``);
    4. ``decide(dec, proposal, scores, plan)``: walk the proposal with the rule and return a typed
       outcome of what happened (draws, statuses, the accepted path or the kept beams), recording nothing;
    5. ``commit(dec, proposal, outcome)``: keep what was accepted in the target's cache and return the
       tokens to commit (``Commit``);
    6. ``record(dec, proposal, outcome)``: the step's forest, positions, TV and rule for the trace
       (``Recorded``), a pure function of the outcome.

    Implementations: ``tree_verifier.TreeVerifier`` (the tree walk of every tree algorithm: MCSD,
    arXiv:2401.06706, Algorithm 2; Sequoia's Algorithm 1; chain SD as its one-branch case),
    ``beams.layer_verifier.LayerVerifier`` (DSBD's layer-by-layer walk of a beam forest, arXiv
    2409.16560, Algorithm 1, corrected) and ``beams.beam_verifier.BeamVerifier`` (a beam-sampling step
    with nothing drafted: ``beam``)."""

    def rule(self, dec: "Decoder") -> Any: ...

    def lossless(self, dec: "Decoder") -> bool: ...

    def budget(self, dec: "Decoder") -> int: ...

    def score(self, dec: "Decoder", proposal: Any) -> Any: ...

    def decide(self, dec: "Decoder", proposal: Any, scores: Any, plan: Plan) -> Any: ...

    def commit(self, dec: "Decoder", proposal: Any, outcome: Any) -> Commit: ...

    def record(self, dec: "Decoder", proposal: Any, outcome: Any) -> Recorded: ...


class Controller:
    """The policy that decides, step by step, what to draft; one object per run. The step loop calls
    ``step_plan(dec)`` before a step: the frozen ``Plan`` the drafter gets, by default ``plan(dec)``
    (the template ``TreeShape``) with the two expansion decisions ``go_on`` and ``keep``; after
    verification ``update(dec, result)`` with the ``StepResult``, then ``state(result)``: the typed
    ``step_state.ControllerState`` stored as ``StepRecord.controller`` (the only way controller state
    reaches the trace). Every hook here is the neutral choice; ``kind`` names its state's kind."""

    kind: str | None = None

    def plan(self, dec: "Decoder") -> TreeShape:
        raise NotImplementedError

    def step_plan(self, dec: "Decoder") -> Plan:
        return Plan(self.plan(dec), go_on=self.go_on, keep=self.keep)

    def go_on(self, tree: DraftedTree, node: int) -> bool:
        return True

    def keep(self, tree: DraftedTree, level: int, nodes: list[int]) -> list[int]:
        return nodes

    def update(self, dec: "Decoder", result: StepResult) -> None:
        return None

    def state(self, result: StepResult) -> ControllerState | None:
        return None
