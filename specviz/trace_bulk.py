"""The value checks of ``trace_check`` in bulk: ``steps_pass`` says True only for steps every check of
``trace_check.check_step`` passes (but the free-form controller and rule objects, which
``trace_check._check_free_form`` checks); False sends them to ``trace_check``'s step-by-step path, which
says why or, if nothing is wrong after all (a value of a type this fast path does not take, such as a
numpy number), passes them. Every field of every step, node, committed token and position is checked a
column at a time, with exact types first (what ``json.loads`` makes), in C where it can be, no path
written (issue #23: a large upload's replay)."""

from __future__ import annotations

from itertools import accumulate, chain
from operator import attrgetter
from typing import Any

from specviz.trace import NODE_STATUSES, TOKEN_KINDS, CommittedToken, PositionRecord, StepRecord, TreeNode
from specviz.trace_values import MAX_INT, MAX_MS, MAX_POSITION_IDS, MAX_ROOT, PROB_SLACK

_NONE = type(None)


def _column(objs: list[Any], name: str) -> list[Any]:
    return list(map(attrgetter(name), objs))


def _ints_in(xs: list[Any], lo: int, hi: int | None) -> bool:
    """Every x an ``int`` (not bool) in [lo, hi) (``hi`` None: no bound)."""
    return not xs or set(map(type, xs)) == {int} and min(xs) >= lo and (hi is None or max(xs) < hi)


def _numbers_in(xs: list[Any], lo: float, hi: float, optional: bool = False) -> bool:
    """Every x a finite ``int`` or ``float`` in [lo, hi] (None too when ``optional``)."""
    kinds = set(map(type, xs))
    if not kinds <= ({int, float, _NONE} if optional else {int, float}):
        return False
    values = list(filter(None, xs)) if _NONE in kinds else xs  # what filter drops (None, 0) is in range
    if not values:
        return True
    if not (min(values) >= lo and max(values) <= hi):
        return False
    total = sum(values)  # finite numbers in [lo, hi]: a NaN among them makes the sum NaN
    return total == total


def _texts_ok(xs: list[Any]) -> bool:
    """Every x a ``str`` that encodes as UTF-8 (``text``)."""
    if not xs:
        return True
    if set(map(type, xs)) != {str}:
        return False
    joined = "".join(xs)  # a lone surrogate stays one when joined
    if joined.isascii():
        return True
    try:
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lists(xs: list[Any], optional: bool) -> bool:
    return set(map(type, xs)) <= ({list, _NONE} if optional else {list})


def _items(lists: list[Any]) -> list[Any]:
    return list(chain.from_iterable(filter(None, lists)))


BLOCK = 128  # steps checked together: their objects stay in the processor's cache over a block's passes


def steps_pass(steps: list[StepRecord], vocab: int | None, max_depth: int | None, max_items: int) -> bool:
    """Whether every step passes every check of ``trace_check.check_step`` (but the free-form objects), with
    at most ``max_items`` nodes, committed tokens or positions a step; ``BLOCK`` steps at a time."""
    produced = 0
    try:
        for start in range(0, len(steps), BLOCK):
            block = steps[start : start + BLOCK]
            if not _block_pass(block, start, produced, vocab, max_depth, max_items):
                return False
            produced += sum(map(len, _column(block, "committed")))
    except (TypeError, ValueError, OverflowError, AttributeError):  # a value not as written: the slow path says
        return False
    return True


def _block_pass(
    steps: list[StepRecord], start: int, produced: int, vocab: int | None, max_depth: int | None, max_items: int
) -> bool:
    """Whether the steps ``start``, ``start + 1``, ... (``produced`` tokens committed before them) pass."""
    if not steps:
        return True
    if set(map(type, steps)) != {StepRecord} or _column(steps, "index") != list(range(start, start + len(steps))):
        return False
    forests, committed, positions = (_column(steps, name) for name in ("forest", "committed", "positions"))
    if not (_lists(forests, False) and _lists(committed, False) and _lists(positions, False)):
        return False
    counts = list(map(len, committed))
    if _column(steps, "n_before") != list(accumulate(counts[:-1], initial=produced)):
        return False
    if max(max(map(len, forests)), max(counts), max(map(len, positions))) > max_items:
        return False
    nodes, tokens, records = _items(forests), _items(committed), _items(positions)
    if not (
        set(map(type, nodes)) <= {TreeNode}
        and set(map(type, tokens)) <= {CommittedToken}
        and set(map(type, records)) <= {PositionRecord}
    ):
        return False
    return (
        _nodes_pass(nodes, vocab, max_depth)
        and _tokens_pass(tokens, vocab)
        and _records_pass(records, vocab)
        and _step_fields_pass(steps)
        and _references_pass(forests, committed, positions, nodes, tokens, records)
    )


def _nodes_pass(nodes: list[TreeNode], vocab: int | None, max_depth: int | None) -> bool:
    ids, parents, depths, token_ids_ = (_column(nodes, k) for k in ("id", "parent", "depth", "token_id"))
    if not (
        _ints_in(ids, 0, MAX_INT + 1)
        and _ints_in(depths, 0, None)
        and _ints_in(token_ids_, 0, vocab)
        and set(map(type, parents)) <= {int, _NONE}
        and _ints_in(_column(nodes, "root"), 0, MAX_ROOT)
        and _texts_ok(_column(nodes, "token_text"))
    ):
        return False
    if max_depth is not None and nodes and max(depths) > max_depth:
        return False
    statuses = _column(nodes, "status")
    if not (set(map(type, statuses)) <= {str} and set(statuses) <= set(NODE_STATUSES)):
        return False
    for key in ("q", "p", "accept_prob", "draw", "p_residual", "q_draft"):
        if not _numbers_in(_column(nodes, key), 0.0, 1.0 + PROB_SLACK, optional=True):
            return False
    return True


def _tokens_pass(tokens: list[CommittedToken], vocab: int | None) -> bool:
    node_ids, committed_ids = _column(tokens, "node_id"), _column(tokens, "token_id")
    return (
        _ints_in(committed_ids, 0, vocab)
        and set(map(type, node_ids)) <= {int, _NONE}
        and _texts_ok(_column(tokens, "text"))
        and set(map(type, kinds := _column(tokens, "kind"))) <= {str}
        and set(kinds) <= set(TOKEN_KINDS)
    )


def _records_pass(records: list[PositionRecord], vocab: int | None) -> bool:
    record_parents = _column(records, "parent")
    ids_lists, p_lists = _column(records, "ids"), _column(records, "p")
    optional = {k: _column(records, k) for k in ("q", "final_residual", "residual", "texts")}
    if not (
        set(map(type, record_parents)) <= {int, _NONE}
        and _ints_in(_column(records, "root"), 0, MAX_ROOT)
        and _lists(ids_lists, False)
        and _lists(p_lists, False)
        and all(_lists(v, True) for v in optional.values())
        and _numbers_in(_column(records, "residual_mass"), 0.0, 1.0 + PROB_SLACK, optional=True)
    ):
        return False
    sizes = list(map(len, ids_lists))
    if sizes and max(sizes) > MAX_POSITION_IDS or list(map(len, p_lists)) != sizes:
        return False
    for values in optional.values():
        if any(v is not None and len(v) != n for v, n in zip(values, sizes)):
            return False
    hi = vocab if vocab is not None else MAX_INT + 1
    return (
        _ints_in(_items(ids_lists), 0, hi)
        and _texts_ok(_items(optional["texts"]))
        and _numbers_in(
            _items(p_lists) + _items(optional["q"]) + _items(optional["final_residual"]), 0.0, 1.0 + PROB_SLACK
        )
        and _numbers_in(_items(optional["residual"]), 0.0, 2.0 + PROB_SLACK)
    )


def _step_fields_pass(steps: list[StepRecord]) -> bool:
    """The step's own fields: TV, timings, call counts and the tokens each call fed."""
    tvs, timings = _column(steps, "tv"), _column(steps, "timings")
    if not (
        _lists(tvs, True)
        and _numbers_in(_items(tvs), 0.0, 1.0 + PROB_SLACK)
        and set(map(type, timings)) == {dict}
        and _texts_ok(list(chain.from_iterable(timings)))
        and _numbers_in(list(chain.from_iterable(map(dict.values, timings))), 0.0, MAX_MS)
    ):
        return False
    calls = {k: _column(steps, k) for k in ("target_calls", "draft_calls")}
    fed = {k: _column(steps, k) for k in ("target_fed", "draft_fed")}
    if not (
        all(_ints_in(v, 0, MAX_INT + 1) for v in calls.values())
        and all(_lists(v, False) for v in fed.values())
        and all(_ints_in(_items(v), 0, MAX_INT + 1) for v in fed.values())
    ):
        return False
    for target_calls, draft_calls, target_fed, draft_fed in zip(*calls.values(), *fed.values()):
        if target_fed and (target_calls != len(target_fed) or draft_calls != len(draft_fed)):
            return False
    return True


def _references_pass(
    forests: list[Any],
    committed: list[Any],
    positions: list[Any],
    nodes: list[TreeNode],
    tokens: list[CommittedToken],
    records: list[PositionRecord],
) -> bool:
    """What refers to a node of the same step: parents (a root at depth 0, a child one below its parent),
    committed tokens' nodes and their tokens, positions' parents."""
    ids, parents, depths, token_ids_ = (_column(nodes, k) for k in ("id", "parent", "depth", "token_id"))
    node_ids, committed_ids = _column(tokens, "node_id"), _column(tokens, "token_id")
    record_parents = _column(records, "parent")
    at_node = at_token = at_record = 0
    for forest, tokens_, records_ in zip(forests, committed, positions):
        k, m, r = len(forest), len(tokens_), len(records_)
        step_ids = ids[at_node : at_node + k]
        depth_of = dict(zip(step_ids, depths[at_node : at_node + k]))
        if len(depth_of) != k:
            return False
        for parent, depth in zip(parents[at_node : at_node + k], depths[at_node : at_node + k]):
            if depth != (0 if parent is None else depth_of.get(parent, -2) + 1):
                return False
        if m:
            token_of = dict(zip(step_ids, token_ids_[at_node : at_node + k]))
            for node_id, token in zip(node_ids[at_token : at_token + m], committed_ids[at_token : at_token + m]):
                if node_id is not None and token_of.get(node_id, -1) != token:
                    return False
        if r and not all(p is None or p in depth_of for p in record_parents[at_record : at_record + r]):
            return False
        at_node, at_token, at_record = at_node + k, at_token + m, at_record + r
    return True
