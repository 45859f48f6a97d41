"""Draft-tree shapes: parent lists in BFS order, children in draw order, levels, ranks.

A ``TreeShape`` describes the *speculated* nodes of a tree. Its implicit root is the last committed
token (the row the verifier gets first); ``parents[i] == ROOT`` (-1) marks a child of that root.
Nodes are numbered breadth first and the children of every node are listed in **draw order**
(rank 1 = drawn first), which is the order verification must visit them (MCSD, arXiv:2401.06706,
Algorithms 1-2; Sequoia, arXiv:2402.12374, Algorithm 1 and Def. 3.1). ``level`` counts edges from
the root (root children are level 1).

A k-config is written ``4x2x2`` (``parse_k_config`` states the grammar: ASCII digits joined by a
lowercase ``x``, nothing else). Size conventions differ between the papers and are kept apart here: MCSD's ``k1xk2x...``
config counts speculated nodes (``4x2x2`` has 28); Sequoia's tree size ``n`` and depth ``d`` count the root
(``n - 1`` speculated nodes, at most ``d - 1`` speculated levels, at most ``d`` tokens per step).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property

from specviz.errors import InvalidParameterError
from specviz.validation import shown

ROOT = -1
MAX_K_CONFIG_NODES = 1024
MAX_K_CONFIG_DEPTH = 32


@dataclass(frozen=True)
class TreeShape:
    """Parent pointers of the speculated nodes, BFS order, siblings in draw order (see module docstring)."""

    parents: tuple[int, ...]

    def __post_init__(self) -> None:
        for i, par in enumerate(self.parents):
            if not (par == ROOT or 0 <= par < i):
                raise ValueError(f"node {i} has parent {par}: a parent must precede its child")
        levels = self.levels
        if any(levels[i] < levels[i - 1] for i in range(1, len(levels))):
            raise ValueError("nodes must be listed breadth first")

    def __len__(self) -> int:
        return len(self.parents)

    @cached_property
    def levels(self) -> tuple[int, ...]:
        """Edges from the root: 1 for the root's children."""
        out: list[int] = []
        for par in self.parents:
            out.append(1 if par == ROOT else out[par] + 1)
        return tuple(out)

    @cached_property
    def children(self) -> dict[int, tuple[int, ...]]:
        """Node (``ROOT`` included) -> its children in draw order; every node has an entry."""
        kids: dict[int, list[int]] = {ROOT: [], **{i: [] for i in range(len(self))}}
        for i, par in enumerate(self.parents):
            kids[par].append(i)
        return {k: tuple(v) for k, v in kids.items()}

    @cached_property
    def ranks(self) -> tuple[int, ...]:
        """1-based position of each node among its siblings (draw order)."""
        seen: dict[int, int] = {}
        out = []
        for par in self.parents:
            seen[par] = seen.get(par, 0) + 1
            out.append(seen[par])
        return tuple(out)

    @property
    def depth(self) -> int:
        """Speculated levels (0 for an empty tree)."""
        return max(self.levels, default=0)

    def level_widths(self) -> list[int]:
        """Number of nodes at levels 1, 2, ..."""
        widths = [0] * self.depth
        for lv in self.levels:
            widths[lv - 1] += 1
        return widths

    def truncate(self, max_level: int) -> "TreeShape":
        """The subtree of nodes at level <= ``max_level`` (BFS order keeps it a prefix)."""
        keep = sum(1 for lv in self.levels if lv <= max_level)
        return TreeShape(self.parents[:keep])

    def with_root(self) -> list[int]:
        """Root-inclusive parent list (Sequoia convention): node 0 is the root, node i + 1 is node i."""
        return [ROOT] + [0 if par == ROOT else par + 1 for par in self.parents]

    @classmethod
    def from_root_parents(cls, parents: list[int]) -> "TreeShape":
        """Inverse of ``with_root``: drop node 0 (the root) of a root-inclusive parent list."""
        if not parents or parents[0] != ROOT:
            raise ValueError("a root-inclusive parent list starts with the root (parent -1)")
        return cls(tuple(ROOT if par == 0 else par - 1 for par in parents[1:]))


K_CONFIG_GRAMMAR = (
    f"widths in ASCII digits joined by a lowercase x, like 4x2x2: no spaces, signs, underscores or "
    f"leading zeros, at most {MAX_K_CONFIG_DEPTH} levels and {MAX_K_CONFIG_NODES} nodes"
)
_K_CONFIG = re.compile(r"[0-9]+(?:x[0-9]+)*")  # ASCII only: ``int`` would also read "4_0", "+4", " 4", "٤", "４"


def parse_k_config(text: str) -> tuple[int, ...]:
    """``"4x2x2"`` -> ``(4, 2, 2)``: k_d children under every node of level d - 1 (MCSD §4.4).

    The grammar, and nothing else: ``k ("x" k)*``, each width ``k`` a whole number >= 1 in the ASCII
    digits 0-9 without a leading zero, the separator a lowercase ``x`` with no space around it; at
    most ``MAX_K_CONFIG_DEPTH`` levels and ``MAX_K_CONFIG_NODES`` drafted nodes (``k_config_size``)."""
    if not isinstance(text, str) or not text:
        raise InvalidParameterError(f"k_config must be text: {K_CONFIG_GRAMMAR}; got {shown(text)}.")
    if not _K_CONFIG.fullmatch(text):
        raise InvalidParameterError(f"k_config {shown(text)} is not a tree shape: {K_CONFIG_GRAMMAR}.")
    parts = text.split("x")
    if any(p.startswith("0") for p in parts):
        if any(int(p) == 0 for p in parts):
            raise InvalidParameterError(f"k_config {shown(text)}: every level needs at least one child per node.")
        raise InvalidParameterError(f"k_config {shown(text)} has a width with a leading zero: {K_CONFIG_GRAMMAR}.")
    if len(parts) > MAX_K_CONFIG_DEPTH:
        raise InvalidParameterError(f"k_config {shown(text)} has {len(parts)} levels; at most {MAX_K_CONFIG_DEPTH}.")
    ks = tuple(int(p) for p in parts) if all(len(p) <= 4 for p in parts) else ()  # a 5-digit width is too many
    total = k_config_size(ks) if ks else MAX_K_CONFIG_NODES + 1
    if total > MAX_K_CONFIG_NODES:
        raise InvalidParameterError(
            f"k_config {shown(text)} drafts {total if ks else 'over ' + str(MAX_K_CONFIG_NODES)} nodes per step; at "
            f"most {MAX_K_CONFIG_NODES}: use smaller widths."
        )
    return ks


def k_config_size(ks: tuple[int, ...]) -> int:
    """Speculated nodes of a k-config: sum over levels of prod(k_1..k_d) (MCSD §4.4)."""
    return sum(math.prod(ks[: d + 1]) for d in range(len(ks)))


def k_config_shape(ks: tuple[int, ...]) -> TreeShape:
    """The ``k1 x k2 x ...`` tree in BFS order: the node with local index j at level d + 1 has parent
    local index ``j // k[d]`` at level d, so siblings are consecutive in draw order (MCSD §3.3, Fig. 2)."""
    parents: list[int] = []
    offset, width = 0, 1  # offset of the previous level (the root is not a node), its width
    for d, k in enumerate(ks):
        start = len(parents)
        for j in range(width * k):
            parents.append(ROOT if d == 0 else offset + j // k)
        offset, width = start, width * k
    return TreeShape(tuple(parents))


def chain_shape(n: int) -> TreeShape:
    """A chain of ``n`` speculated nodes (chain SD)."""
    return TreeShape(tuple([ROOT] + list(range(n - 1))) if n else ())


def path_weights(shape: TreeShape, acceptance: list[float]) -> list[float]:
    """f(v) = product of p_rank along the root-to-v path (Sequoia Def. 3.3); ranks beyond the vector get 0."""
    f: list[float] = []
    for i, par in enumerate(shape.parents):
        r = shape.ranks[i]
        p = acceptance[r - 1] if r <= len(acceptance) else 0.0
        f.append(p * (1.0 if par == ROOT else f[par]))
    return f


def expected_tokens(shape: TreeShape, acceptance: list[float]) -> float:
    """F(T) = 1 + sum_v f(v): expected tokens per step under positional acceptance (Sequoia Prop. 3.4)."""
    return 1.0 + sum(path_weights(shape, acceptance))
