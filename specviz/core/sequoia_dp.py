"""Sequoia's tree construction: the bounded-depth dynamic program and the hardware-aware size choice.

Conventions (Sequoia, arXiv:2402.12374, §3.1): a tree's *size* n counts the root (the last committed token), so
n - 1 tokens are speculated; its *depth* d counts levels including the root, so a step yields at most
d tokens. The acceptance vector ``p = (p_1, ..., p_K)`` is **joint**: p_k = P(the k-th drafted
child is the accepted one), so sum p_k <= 1 (Def. 3.2).

``solve`` fills T[m][l][b] = best expected tokens of a tree of size exactly m, at most l levels, b root
children (paper App. C.2.2, Algorithm 5 with infeasible states at -inf instead of the printed ``not
b``; ``literal_init=True`` keeps the printed form), vectorised over l, O(M^2 L K).
``G(n, d) = max_b T[n][d][b]``; the tree is rebuilt from the stored splits breadth first.
``choose_size_depth`` maximises ``Speedup(n, d) = G(n, d) / (t(n) + (d - 1) c)`` (paper Eq. 1) over
measured verify times; we charge d - 1 draft calls because that is what the engine makes for a
d-level tree (the paper writes d c).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from specviz.core.trees import ROOT, TreeShape

NEG = -np.inf


@dataclass
class SequoiaDP:
    """DP tables for sizes 1..max_size and depths 1..max_depth (see module docstring)."""

    acceptance: tuple[float, ...]
    max_size: int
    max_depth: int
    T: np.ndarray = field(repr=False)  # [M+1, L+1, K+1]
    Tmax: np.ndarray = field(repr=False)  # [M+1, L+1] = G
    Targ: np.ndarray = field(repr=False)  # best number of root children
    Y: np.ndarray = field(repr=False)  # best split y for (m, l, b >= 2)

    def value(self, n: int, d: int) -> float:
        """G(n, d): best expected tokens per step, size exactly n, at most d levels (-inf if impossible)."""
        if n < 1 or d < 1 or n > self.max_size:
            return NEG
        return float(self.Tmax[n, min(d, self.max_depth)])

    def feasible(self, n: int, d: int) -> bool:
        return np.isfinite(self.value(n, d))

    def largest_feasible(self, n: int, d: int) -> int:
        """The largest size <= n that fits in d levels with at most K children per node."""
        while n > 1 and not self.feasible(n, d):
            n -= 1
        return max(n, 1)

    def tree(self, n: int, d: int) -> list[int]:
        """Root-inclusive parent list (node 0 = root, BFS ids, children in rank order) of the G(n, d) tree."""
        d = min(d, self.max_depth)
        if not self.feasible(n, d):
            raise ValueError(f"no tree of size {n} fits in {d} levels with at most {len(self.acceptance)} children")
        states = [(n, d, int(self.Targ[n, d]))]
        parents = [ROOT]
        i = 0
        while i < len(states):
            for child in self._children(states[i]):
                states.append(child)
                parents.append(i)
            i += 1
        return parents

    def shape(self, n: int, d: int) -> TreeShape:
        """The G(n, d) tree as a ``TreeShape`` of its n - 1 speculated nodes."""
        return TreeShape.from_root_parents(self.tree(n, d))

    def _children(self, state: tuple[int, int, int]) -> list[tuple[int, int, int]]:
        """Ordered child states (size, depth bound, root children) of the subtree ``state``."""
        m, depth, b = state
        out = []
        while b >= 1:
            if b == 1:
                out.append((m - 1, depth - 1, int(self.Targ[m - 1, depth - 1])))
                break
            y = int(self.Y[m, depth, b])
            out.append((m - y, depth - 1, int(self.Targ[m - y, depth - 1])))
            m, b = y, b - 1
        return out[::-1]


def solve(
    acceptance: list[float] | tuple[float, ...], max_size: int, max_depth: int, literal_init: bool = False
) -> SequoiaDP:
    """Run the bounded-depth DP (Algorithm 5, corrected) for all sizes <= max_size, depths <= max_depth.

    ``literal_init=True``: Algorithm 5 as printed (WRONG; for comparison): line 7 sets the infeasible
    T[1][l][b >= 1] to ``not b`` = 0 instead of -inf and line 13 runs b up to K, so states with b >= m
    root children get finite values, and where such a state ties the optimum the stored split picks
    it and ``tree`` rebuilds a tree larger than n. The 0 * -inf guard for p_b = 0 is kept in both forms.
    """
    p = np.asarray([0.0] + [float(x) for x in acceptance], dtype=np.float64)
    if np.any(p < 0) or p.sum() > 1 + 1e-9:
        raise ValueError("the acceptance vector holds joint probabilities: each >= 0, summing to <= 1")
    K, M, L = len(p) - 1, int(max_size), int(max_depth)
    T = np.full((M + 1, L + 1, K + 1), NEG)
    Y = np.zeros((M + 1, L + 1, K + 1), dtype=np.int64)
    Tmax = np.full((M + 1, L + 1), NEG)
    Targ = np.zeros((M + 1, L + 1), dtype=np.int64)
    T[1, 1:, 0] = 1.0
    if literal_init:
        T[1, 1:, 1:] = 0.0  # not b for b >= 1: a one-node tree "with b root children", worth 0
    Tmax[1, 1:] = 1.0
    for m in range(2, M + 1):
        if L < 2 or K < 1:
            break
        below = Tmax[m - 1, 1:L]  # best subtree of size m - 1, depth <= l - 1, for l = 2..L
        T[m, 2:, 1] = np.where(np.isfinite(below), 1.0 + p[1] * np.where(np.isfinite(below), below, 0.0), NEG)
        for b in range(2, (K if literal_init else min(K, m - 1)) + 1):  # b >= m is infeasible
            left = T[1:m, 2:, b - 1]  # y = 1..m-1: the first b - 1 branches, size y
            right = Tmax[m - 1 : 0 : -1, 1:L]  # last branch: size m - y, depth <= l - 1
            ok = np.isfinite(left) & np.isfinite(right)
            vals = np.where(ok, np.where(ok, left, 0.0) + p[b] * np.where(ok, right, 0.0), NEG)
            best = np.argmax(vals, axis=0)
            T[m, 2:, b] = vals[best, np.arange(vals.shape[1])]
            Y[m, 2:, b] = best + 1
        Targ[m, 2:] = np.argmax(T[m, 2:, :], axis=1)
        Tmax[m, 2:] = T[m, 2:, :].max(axis=1)
    return SequoiaDP(tuple(float(x) for x in p[1:]), M, L, T, Tmax, Targ, Y)


@dataclass
class SizeChoice:
    """The hardware-aware optimum and the surface it was picked from (for the app's speedup curve)."""

    n: int
    d: int
    speedup: float
    sizes: list[int]
    depths: list[int]
    table: list[list[float | None]]  # table[i][j] = Speedup(sizes[i], depths[j]); None if infeasible
    best_per_size: list[dict]  # per size: best d, its G and speedup


def choose_size_depth(
    dp: SequoiaDP, verify_ms: dict[int, float], draft_ms: float, max_depth: int | None = None
) -> SizeChoice:
    """Maximise G(n, d) * t(1) / (t(n) + (d - 1) c) over the measured sizes n and d <= max_depth.

    ``verify_ms[n]``: measured time of one target call on n tokens (must include n = 1);
    ``draft_ms``: one draft call. Speedups are relative to plain decoding at t(1) per token.
    """
    if 1 not in verify_ms:
        raise ValueError("verify_ms must include the 1-token time t(1)")
    t1 = verify_ms[1]
    sizes = sorted(n for n in verify_ms if 1 <= n <= dp.max_size)
    depths = list(range(1, min(max_depth or dp.max_depth, dp.max_depth) + 1))
    table: list[list[float | None]] = []
    best = (1.0, 1, 1)
    per_size = []
    for n in sizes:
        row: list[float | None] = []
        row_best = (NEG, None)
        for d in depths:
            g = dp.value(n, d)
            if not np.isfinite(g):
                row.append(None)
                continue
            s = g * t1 / (verify_ms[n] + (d - 1) * draft_ms)
            row.append(float(s))
            if s > row_best[0] + 1e-12:
                row_best = (s, d)
            if s > best[0] + 1e-12:
                best = (float(s), n, d)
        table.append(row)
        if row_best[1] is not None:
            per_size.append(
                {
                    "n": n,
                    "d": row_best[1],
                    "expected_tokens": dp.value(n, row_best[1]),
                    "verify_ms": verify_ms[n],
                    "speedup": float(row_best[0]),
                }
            )
    return SizeChoice(best[1], best[2], best[0], sizes, depths, table, per_size)
