"""Sequoia's DP (``core.sequoia_dp``) finds the best tree: its value equals a brute-force maximum over
every ordered tree of up to 9 nodes (size exactly n, at most d levels, at most K children), its tree
achieves that value, and its expected tokens match a Monte-Carlo simulation of positional acceptance.
Algorithm 5's printed initialisation (``literal_init=True``) gives states with no tree a value."""

import functools
import random

import numpy as np
import pytest

from specviz.core.sequoia_dp import choose_size_depth, solve
from specviz.core.trees import TreeShape, expected_tokens, k_config_shape, parse_k_config
from specviz.errors import InvalidParameterError

VECTORS = [
    (0.55, 0.15, 0.07, 0.04, 0.03, 0.02, 0.015, 0.01),
    (0.8, 0.1, 0.05),
    (0.3, 0.3, 0.2),  # not decreasing
    (0.2, 0.0, 0.5, 0.1),  # a zero entry (0 * -inf must not appear)
    (0.9,),  # chains only
]


def all_trees(n: int, d: int, k: int) -> list:
    """Every ordered tree of exactly ``n`` nodes, at most ``d`` levels, at most ``k`` children per node.
    A tree is the tuple of its child subtrees."""

    @functools.lru_cache(maxsize=None)
    def forests(size: int, depth: int, slots: int) -> tuple:
        if size == 0:
            return ((),)
        if slots == 0 or depth == 0:
            return ()
        return tuple(
            (tree,) + rest
            for first in range(1, size + 1)
            for tree in trees(first, depth)
            for rest in forests(size - first, depth, slots - 1)
        )

    @functools.lru_cache(maxsize=None)
    def trees(size: int, depth: int) -> tuple:
        return forests(size - 1, depth - 1, k)

    return list(trees(n, d))


def value(tree, p) -> float:
    """F(T) = 1 + sum_i p_i F(child_i) (Sequoia Prop. 3.4)."""
    return 1.0 + sum((p[i] if i < len(p) else 0.0) * value(c, p) for i, c in enumerate(tree))


def brute_force(p, n, d):
    return max((value(t, p) for t in all_trees(n, d, len(p))), default=float("-inf"))


@pytest.mark.parametrize("p", VECTORS, ids=range(len(VECTORS)))
def test_dp_equals_brute_force_up_to_9_nodes(p):
    dp = solve(p, 9, 9)
    for n in range(1, 10):
        for d in range(1, 10):
            best = brute_force(p, n, d)
            got = dp.value(n, d)
            if best == float("-inf"):
                assert got == float("-inf"), (n, d)
                continue
            assert got == pytest.approx(best, abs=1e-12), (n, d)
            shape = dp.shape(n, d)
            assert len(shape) == n - 1 and shape.depth <= d - 1
            assert max((len(c) for c in shape.children.values()), default=0) <= len(p)
            assert expected_tokens(shape, list(p)) == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("p", VECTORS, ids=range(len(VECTORS)))
def test_literal_init_gives_states_with_no_tree_a_value(p):
    """T(m, l, b) (best tree of size m, <= l levels, exactly b root children) against enumeration: the
    corrected table is exact; Algorithm 5 as printed (T[1][l][b] = not b) makes states with b >= m,
    which no tree has, finite, and agrees exactly everywhere else (table, G and trees)."""
    size = 8
    fixed, literal = solve(p, size, size), solve(p, size, size, literal_init=True)
    no_tree_valued = []
    for m in range(1, size + 1):
        for d in range(1, size + 1):
            trees = all_trees(m, d, len(p))
            for b in range(len(p) + 1):
                best = max((value(t, p) for t in trees if len(t) == b), default=float("-inf"))
                if best == float("-inf"):
                    assert fixed.T[m, d, b] == best, (m, d, b)
                    if np.isfinite(literal.T[m, d, b]):
                        no_tree_valued.append((m, d, b))
                else:
                    assert fixed.T[m, d, b] == pytest.approx(best, abs=1e-12), (m, d, b)
                    assert literal.T[m, d, b] == fixed.T[m, d, b], (m, d, b)
    assert all(b >= m for m, d, b in no_tree_valued)
    assert all(literal.T[1, d, b] == 0.0 for d in range(1, size + 1) for b in range(1, len(p) + 1))
    if len(p) >= 2:  # "a 2-node tree with 2 root children", worth p_2
        assert literal.T[2, 2, 2] == p[1] and (2, 2, 2) in no_tree_valued
    assert np.array_equal(literal.Tmax, fixed.Tmax)
    assert all(
        literal.tree(n, d) == fixed.tree(n, d)
        for n in range(1, size + 1)
        for d in range(1, size + 1)
        if fixed.feasible(n, d)
    )


def test_literal_init_rebuilds_a_tree_over_the_size_budget_on_a_tie():
    """p = (0, 1): the best 4-node, 3-level tree is worth 2. As printed, Algorithm 5 values "root with an
    empty first slot and a 3-node second child" (T[1][3][1] = 0 plus 1 * G(3, 2) = 2) the same, the
    stored split takes it, and the rebuilt tree has 5 nodes, worth 3, more than any 4-node tree."""
    p = (0.0, 1.0)
    fixed, literal = solve(p, 4, 3), solve(p, 4, 3, literal_init=True)
    assert fixed.value(4, 3) == literal.value(4, 3) == brute_force(p, 4, 3) == 2.0
    assert literal.T[1, 3, 1] + p[1] * literal.value(3, 2) == literal.T[4, 3, 2] == 2.0
    assert fixed.Y[4, 3, 2] == 2 and literal.Y[4, 3, 2] == 1
    assert fixed.tree(4, 3) == [-1, 0, 0, 2] and expected_tokens(fixed.shape(4, 3), list(p)) == 2.0
    assert literal.tree(4, 3) == [-1, 0, 0, 2, 2]
    assert expected_tokens(literal.shape(4, 3), list(p)) == 3.0 > brute_force(p, 4, 3)


def simulate(shape: TreeShape, p, runs: int, seed: int = 0) -> float:
    """Mean tokens per step when the accepted child rank at each node is drawn from p (joint law)."""
    rng = random.Random(seed)
    total = 0
    cum = [sum(p[: i + 1]) for i in range(len(p))]
    for _ in range(runs):
        node, tokens = -1, 1
        while True:
            u = rng.random()
            rank = next((i + 1 for i, c in enumerate(cum) if u < c), None)
            kids = shape.children[node]
            if rank is None or rank > len(kids):
                break
            node, tokens = kids[rank - 1], tokens + 1
        total += tokens
    return total / runs


@pytest.mark.parametrize("p,n,d", [(VECTORS[0], 40, 12), (VECTORS[1], 16, 6), (VECTORS[2], 24, 4)])
def test_expected_tokens_match_monte_carlo(p, n, d):
    dp = solve(p, n, d)
    runs = 40000
    mc = simulate(dp.shape(n, d), p, runs)
    # tokens per step has variance < d^2; 5 sigma
    assert abs(mc - dp.value(n, d)) < 5 * d / runs**0.5


def test_worked_example_from_the_spec():  # a hand-checked DP example
    p = VECTORS[0]
    dp = solve(p, 40, 12)
    assert dp.value(40, 12) == pytest.approx(3.263, abs=5e-4)
    assert [1] + dp.shape(40, 12).level_widths() == [1, 7, 10, 9, 5, 6, 1, 1]
    assert dp.value(40, 4) == pytest.approx(3.047, abs=5e-4)
    assert [1] + dp.shape(40, 4).level_widths() == [1, 8, 15, 16]


def test_infeasible_sizes_fall_back_to_the_largest_that_fits():
    dp = solve((0.5, 0.2), 20, 3)  # at most 1 + 2 + 4 = 7 nodes in 3 levels with 2 children each
    assert dp.value(8, 3) == float("-inf") and dp.largest_feasible(20, 3) == 7


def test_hardware_aware_choice_maximises_the_speedup():
    dp = solve(VECTORS[0], 64, 10)
    flat = {1: 10.0, 8: 10.0, 16: 10.0, 32: 10.0, 64: 10.0}
    choice = choose_size_depth(dp, flat, draft_ms=0.0)
    assert choice.n == 64 and choice.speedup == pytest.approx(dp.value(64, 10))  # free verification: biggest tree
    steep = {1: 10.0, 8: 12.0, 16: 20.0, 32: 40.0, 64: 80.0}
    choice = choose_size_depth(dp, steep, draft_ms=1.0)
    best = max(
        (dp.value(n, d) * 10 / (steep[n] + (d - 1)), n, d) for n in steep for d in range(1, 11) if dp.feasible(n, d)
    )
    assert (choice.speedup, choice.n, choice.d) == pytest.approx(best)
    assert choice.n < 64


def test_k_config_shapes():
    shape = k_config_shape(parse_k_config("4x2x2"))
    assert len(shape) == 28 and shape.level_widths() == [4, 8, 16]
    assert shape.children[-1] == (0, 1, 2, 3) and shape.children[0] == (4, 5) and shape.children[4] == (12, 13)
    assert shape.truncate(2).level_widths() == [4, 8]
    assert TreeShape.from_root_parents(shape.with_root()) == shape
    for bad in ("", "4x0", "ax2", "64x64x64"):
        with pytest.raises(InvalidParameterError):
            parse_k_config(bad)
