"""Is a trace's content coherent? The value checks every reading of a trace (``RunTrace.from_json`` and
``from_dict``, so an upload's replay too) runs once the schema's types are checked (issue #21 point 5,
issue #23, issue #35 point 15).

``check_trace(trace)`` raises ``TraceFormatError`` with a sentence naming the field path
(``steps[3].forest[2].parent``) and what is allowed there; it returns ``None`` for a trace every
view can draw. What it holds a trace to is what the engine writes (``specviz.algorithms``):

* probabilities (node ``q``/``p``/``accept_prob``/``draw``/``p_residual``/``q_draft``, a position's ``p``/``q``/
  ``final_residual``/``residual_mass``, ``tv``) are finite and in [0, 1] (up to ``PROB_SLACK`` above 1
  for float32 rounding); a position's ``residual`` finite and >= 0 (``residual_values`` says why);
* token ids are whole numbers >= 0, below ``pair.shared_vocab_size`` when the trace gives it;
* node ids are unique within a step; a parent is a node of the same step or null; a root (no parent)
  has depth 0 and a child its parent's depth + 1 (so no cycles); a committed token's node, if any,
  is a node of the step with the same token; positions' lists have one entry per id;
* steps are in order, each ``n_before`` counts the tokens committed before it, ``output_ids`` is
  the steps' committed tokens end to end, calls match the per-call logs when those were recorded;
* timings are finite numbers >= 0, sampling settings and the seed are in their ranges, a registered
  algorithm's parameters pass its own checks; a step's controller state, typed when the trace was
  read (``step_state``: a field of the wrong type is refused there, named), has values the views can
  draw (beams, widths' laws, theory probes, Sequoia's predicted tokens, ``dyntree``'s ``cum_q``);
* the run's ``drafter`` (v5) is null or an object with a ``kind`` and a ``name`` in text;
* a step's ``lens`` (``LayerLens``, only when recorded): its layers increasing in [1, ``n_layers``], the
  last ``n_layers``, at most ``MAX_LENS_LAYERS`` of them and at most ``MAX_LENS_POSITIONS`` positions, no
  more than the step committed; per layer one token id, text and probability a position; the exit
  layer null or one of the target's layers;
* a step's ``rule`` (v4) is an object naming its rule; a rule ``core.rule_words`` knows has only its
  own parameters, in their ranges (the views state its formula with them); another name is told
  without a formula.

A trace that passes is checked in bulk (``_steps_pass``, ``specviz/trace_bulk.py``: every field of every step, node,
committed token and position a column at a time, in C where it can be, no path written); anything that does not
pass it goes through ``check_step`` step by step, which names the first problem.

The work is linear in the trace's size, and bounded: at most ``MAX_STEPS`` steps and
``MAX_ITEMS`` nodes, committed tokens or positions a step. An algorithm name this specviz does not
register is allowed (the replayed column says so): a trace is data, and a newer specviz may write one.
"""

from __future__ import annotations

from typing import Any, Iterable

from specviz import trace_bulk, validation
from specviz.core import rule_words
from specviz.errors import SpecvizError, TraceFormatError
from specviz.step_state import BeamStepState, ControllerState
from specviz.trace import (
    NODE_STATUSES,
    TOKEN_KINDS,
    LayerLens,
    RunTrace,
    StepRecord,
    gc_paused,
)
from specviz.trace_bulk import BLOCK  # noqa: F401  (re-exported: the steps the bulk check takes together)
from specviz.trace_values import (
    MAX_BEAM_DEPTH,
    MAX_INT,
    MAX_ITEMS,
    MAX_LAYER,
    MAX_LENS_LAYERS,
    MAX_LENS_POSITIONS,
    MAX_MS,
    MAX_NAME,
    MAX_POSITION_IDS,
    MAX_ROOT,
    MAX_STEPS,
    _count,
    _finite_ok,
    _is_real,
    _is_whole,
    _refuse,
    finite,
    plain_json,
    prob,
    probs,
    residual_values,
    text,
    token_ids,
    whole,
)

# ---- run-level settings ------------------------------------------------------------------------------


def check_drafter(drafter: Any) -> None:
    """``RunTrace.drafter`` (v5): null, or an object naming its ``kind`` and ``name`` in text (the token
    export writes the name), the rest plain JSON."""
    if drafter is None:
        return
    plain_json("drafter", drafter)
    for key in ("kind", "name"):
        if not isinstance(drafter.get(key), str) or not 0 < len(drafter[key]) <= MAX_NAME:
            raise _refuse(f"drafter.{key}", f"a text of 1 to {MAX_NAME} characters", drafter.get(key))


def vocab_size(pair: dict[str, Any]) -> int | None:
    """The shared vocabulary size the trace's ``pair`` records (``ModelPair.describe``), if it does."""
    v = pair.get("shared_vocab_size")
    return None if v is None else whole("pair.shared_vocab_size", v, 1)


def check_sampling(sampling: dict[str, Any]) -> None:
    """``temperature`` 0 or in [1e-3, 100], ``top_k`` a whole number >= 0, ``top_p`` in (0, 1], where given."""
    if "temperature" in sampling:
        t = sampling["temperature"]
        if not (_is_real(t) and (t == 0 or validation.MIN_TEMPERATURE <= t <= validation.MAX_TEMPERATURE)):
            raise _refuse(
                "sampling.temperature",
                f"0 (greedy) or a number in [{validation.MIN_TEMPERATURE:g}, {validation.MAX_TEMPERATURE:g}]",
                t,
            )
    if "top_k" in sampling:
        whole("sampling.top_k", sampling["top_k"], 0, MAX_INT + 1)
    if "top_p" in sampling:
        p = sampling["top_p"]
        if not (_is_real(p) and 0 < p <= 1):
            raise _refuse("sampling.top_p", "a number in (0, 1]", p)


def _registered() -> dict[str, Any]:
    """The registered algorithms (``specviz.algorithms``, imported on the first check, not with this module);
    none where torch or transformers is not installed: a trace is then checked as one of an algorithm this
    specviz does not register (its parameters plain values), so reading and drawing traces needs neither."""
    try:
        from specviz.algorithms import ALGORITHMS
    except ImportError as exc:
        if (exc.name or "").split(".")[0] in ("torch", "transformers"):
            return {}
        raise
    return ALGORITHMS


def check_params(algorithm: str, params: dict[str, Any]) -> None:
    """A registered algorithm's declared parameters pass its own ``Param.validate``; other names are shown as
    they are (a parameter of a newer specviz), so they need only be plain values."""
    spec = _registered().get(algorithm)
    declared = {p.name: p for p in spec.params} if spec is not None else {}
    for name, value in params.items():
        path = f"params.{name}"
        if name in declared:
            try:
                declared[name].validate(value, algorithm)
            except SpecvizError as exc:
                raise TraceFormatError(f"Malformed trace: {path}: {exc}") from None
        elif not (value is None or isinstance(value, (str, bool)) or _is_whole(value) or _finite_ok(value)):
            raise _refuse(path, "a plain value (text, a finite number, true/false or null)", value)


# ---- controller state: its values (its types were checked when it was read, ``step_state``) ---------------


def check_controller(path: str, c: ControllerState, nodes: int | None = None) -> None:
    """The values of a step's typed state that views draw, checked by the state's own
    ``check_values`` next to its type (``step_state``: beams, theory probes, Sequoia, ``dyntree``);
    ``nodes``: the step's drafted nodes."""
    c.check_values(path, nodes)


def check_lens(path: str, lens: LayerLens, committed: int, vocab: int | None) -> None:
    """A step's logit lens (module docstring); ``committed``: the step's committed tokens."""
    whole(f"{path}.n_layers", lens.n_layers, 1, MAX_LAYER + 1)
    layers = lens.layers
    if (
        not isinstance(layers, list)
        or not 0 < len(layers) <= MAX_LENS_LAYERS
        or not all(_is_whole(x) and 1 <= x <= lens.n_layers for x in layers)
        or any(a >= b for a, b in zip(layers, layers[1:]))
        or layers[-1] != lens.n_layers
    ):
        raise _refuse(
            f"{path}.layers",
            f"1 to {MAX_LENS_LAYERS} increasing layers in [1, n_layers], the last n_layers ({lens.n_layers})",
            layers,
        )
    if lens.exit_layer is not None:
        whole(f"{path}.exit_layer", lens.exit_layer, 1, lens.n_layers + 1)
    reads = lens.reads
    most = min(MAX_LENS_POSITIONS, committed)
    if not isinstance(reads, list) or not 0 < len(reads) <= most:
        raise _refuse(
            f"{path}.reads", f"1 to {most} texts (a position per committed token, at most {MAX_LENS_POSITIONS})", reads
        )
    for i, t in enumerate(reads):
        text(f"{path}.reads[{i}]", t)
    n = len(reads)
    for name in ("ids", "texts", "probs"):
        rows = getattr(lens, name)
        if (
            not isinstance(rows, list)
            or len(rows) != len(layers)
            or not all(isinstance(r, list) and len(r) == n for r in rows)
        ):
            raise _refuse(
                f"{path}.{name}", f"{len(layers)} lists (one per layer) of {n} entries (one per position)", rows
            )
    for j, (ids, texts, ps) in enumerate(zip(lens.ids, lens.texts, lens.probs)):
        token_ids(f"{path}.ids[{j}]", ids, vocab)
        probs(f"{path}.probs[{j}]", ps, n, optional=False)
        for i, t in enumerate(texts):
            text(f"{path}.texts[{j}][{i}]", t)


def _check_state(at: str, step: StepRecord) -> None:
    state = step.controller
    plain_json(f"{at}.controller", state.to_json())
    check_controller(f"{at}.controller", state, len(step.forest))


# ---- steps ---------------------------------------------------------------------------------------------


def check_step(step: StepRecord, at: str, vocab: int | None, max_depth: int | None) -> None:
    """One step's forest, committed tokens, positions, calls, timings and controller."""
    for name, limit in (("forest", MAX_ITEMS), ("committed", MAX_ITEMS), ("positions", MAX_ITEMS)):
        _count(f"{at}.{name}", getattr(step, name), limit, name if name != "forest" else "nodes")
    nodes = _check_forest(step, at, vocab, max_depth)
    _check_committed(step, at, vocab, nodes)
    _check_positions(step, at, vocab, nodes)
    probs(f"{at}.tv", step.tv)
    _check_calls(step, at)
    if step.controller is not None:
        _check_state(at, step)
    if step.lens is not None:
        check_lens(f"{at}.lens", step.lens, len(step.committed), vocab)
    if step.rule is not None:
        plain_json(f"{at}.rule", step.rule)
        why = rule_words.check_record(step.rule, f"{at}.rule")
        if why:
            raise TraceFormatError(f"Malformed trace: {why}.")


def _check_forest(step: StepRecord, at: str, vocab: int | None, max_depth: int | None) -> dict[int, int]:
    """The step's nodes: unique ids, parents in the step, depths from the root; returns id -> index."""
    nodes: dict[int, int] = {}  # id -> index in the forest
    for j, n in enumerate(step.forest):
        where = f"{at}.forest[{j}]"
        whole(f"{where}.id", n.id, 0, MAX_INT + 1)
        if n.id in nodes:
            raise TraceFormatError(
                f"Malformed trace: {where}.id is {n.id}, the id of {at}.forest[{nodes[n.id]}] "
                "too; node ids must be unique within a step."
            )
        nodes[n.id] = j
    for j, n in enumerate(step.forest):
        where = f"{at}.forest[{j}]"
        if n.parent is None:
            if n.depth != 0:
                raise _refuse(f"{where}.depth", "0 for a root (a node without parent)", n.depth)
        else:
            if not _is_whole(n.parent) or n.parent not in nodes:
                raise _refuse(f"{where}.parent", "the id of a node of the same step, or null", n.parent)
            want = step.forest[nodes[n.parent]].depth + 1
            if n.depth != want:
                raise _refuse(f"{where}.depth", f"its parent's depth + 1 ({want})", n.depth)
        if max_depth is not None and n.depth > max_depth:
            raise _refuse(f"{where}.depth", f"at most {max_depth} in a beam forest", n.depth)
        whole(f"{where}.token_id", n.token_id, 0, vocab)
        text(f"{where}.token_text", n.token_text)
        for key in ("q", "p", "accept_prob", "draw", "p_residual", "q_draft"):
            prob(f"{where}.{key}", getattr(n, key))
        if n.status not in NODE_STATUSES:
            raise _refuse(f"{where}.status", f"one of {', '.join(NODE_STATUSES)}", n.status)
        whole(f"{where}.root", n.root, 0, MAX_ROOT)
    return nodes


def _check_committed(step: StepRecord, at: str, vocab: int | None, nodes: dict[int, int]) -> None:
    """The committed tokens: ids, texts, kinds, and the node each names (same token)."""
    for j, c in enumerate(step.committed):
        where = f"{at}.committed[{j}]"
        whole(f"{where}.token_id", c.token_id, 0, vocab)
        text(f"{where}.text", c.text)
        if c.kind not in TOKEN_KINDS:
            raise _refuse(f"{where}.kind", f"one of {', '.join(TOKEN_KINDS)}", c.kind)
        if c.node_id is not None:
            if not _is_whole(c.node_id) or c.node_id not in nodes:
                raise _refuse(f"{where}.node_id", "the id of a node of the same step, or null", c.node_id)
            node = step.forest[nodes[c.node_id]]
            if node.token_id != c.token_id:
                raise _refuse(f"{where}.token_id", f"the token of node {c.node_id} ({node.token_id})", c.token_id)


def _check_positions(step: StepRecord, at: str, vocab: int | None, nodes: dict[int, int]) -> None:
    """The position records: parents in the step, one p (q, residual, text) per id."""
    for j, r in enumerate(step.positions):
        where = f"{at}.positions[{j}]"
        if r.parent is not None and (not _is_whole(r.parent) or r.parent not in nodes):
            raise _refuse(f"{where}.parent", "the id of a node of the same step, or null", r.parent)
        whole(f"{where}.root", r.root, 0, MAX_ROOT)
        _count(f"{where}.ids", r.ids if isinstance(r.ids, list) else [], MAX_POSITION_IDS, "ids")
        token_ids(f"{where}.ids", r.ids, vocab)
        n = len(r.ids)
        probs(f"{where}.p", r.p, n, optional=False)
        for key in ("q", "final_residual"):
            probs(f"{where}.{key}", getattr(r, key), n)
        residual_values(f"{where}.residual", r.residual, n)
        prob(f"{where}.residual_mass", r.residual_mass)
        if r.texts is not None:
            if not isinstance(r.texts, list) or len(r.texts) != n:
                raise _refuse(f"{where}.texts", f"a list of {n} strings (one per id) or null", r.texts)
            for i, t in enumerate(r.texts):
                text(f"{where}.texts[{i}]", t)


def _check_calls(step: StepRecord, at: str) -> None:
    """The timings, the call counts and the tokens each call fed (one entry per call when recorded)."""
    for key, v in step.timings.items():
        text(f"{at}.timings (a key)", key)
        finite(f"{at}.timings.{key}", v, 0.0, MAX_MS)
    whole(f"{at}.target_calls", step.target_calls, 0, MAX_INT + 1)
    whole(f"{at}.draft_calls", step.draft_calls, 0, MAX_INT + 1)
    for name in ("target_fed", "draft_fed"):
        fed = getattr(step, name)
        if not isinstance(fed, list) or not all(_is_whole(x) and 0 <= x <= MAX_INT for x in fed):
            raise _refuse(f"{at}.{name}", f"a list of token counts (whole numbers in [0, {MAX_INT}])", fed)
    if step.target_fed:  # recorded since schema 3: one entry per call
        for name in ("target", "draft"):
            calls, fed = getattr(step, f"{name}_calls"), getattr(step, f"{name}_fed")
            if calls != len(fed):
                raise _refuse(f"{at}.{name}_calls", f"the number of entries of {at}.{name}_fed ({len(fed)})", calls)


def check_trace(trace: RunTrace) -> None:
    """Raise ``TraceFormatError`` (field path and allowed range) unless ``trace`` is coherent (module docstring)."""
    if not isinstance(trace, RunTrace):
        raise TraceFormatError(f"Not a trace: {type(trace).__name__}.")
    text("algorithm", trace.algorithm)
    if not 0 < len(trace.algorithm) <= validation.MAX_TEXT:
        raise _refuse("algorithm", f"a name of 1 to {validation.MAX_TEXT} characters", trace.algorithm)
    for name in ("params", "pair", "sampling"):
        plain_json(name, getattr(trace, name))
    check_params(trace.algorithm, trace.params)
    vocab = vocab_size(trace.pair)
    check_sampling(trace.sampling)
    whole("seed", trace.seed, 0, validation.MAX_SEED + 1)
    rows = trace.pair.get("target_vocab_rows")
    token_ids("prompt_ids", trace.prompt_ids, max(rows, vocab or 0) if _is_whole(rows) else vocab)
    token_ids("output_ids", trace.output_ids, vocab)
    for name in ("prompt_text", "output_text", "finish_reason"):
        text(name, getattr(trace, name))
    text("user_text", trace.user_text, optional=True)
    check_drafter(trace.drafter)
    _count("steps", trace.steps, MAX_STEPS, "steps")
    first = trace.steps[0].controller if trace.steps else None
    beam = isinstance(first, BeamStepState)  # drawn by viz.beams (is_beam_trace)
    with gc_paused():
        if _steps_pass(trace.steps, vocab, MAX_BEAM_DEPTH if beam else None):
            _check_free_form(trace.steps, vocab)
        else:
            _check_steps(trace.steps, vocab, MAX_BEAM_DEPTH if beam else None)
    produced = sum(len(s.committed) for s in trace.steps)
    _check_output(trace.output_ids, (c.token_id for s in trace.steps for c in s.committed), produced)


def _check_steps(steps: list[StepRecord], vocab: int | None, max_depth: int | None) -> None:
    """The steps one by one: in order, each counting what the steps before it committed, each coherent."""
    produced = 0
    for i, step in enumerate(steps):
        at = f"steps[{i}]"
        if step.index != i:
            raise _refuse(f"{at}.index", f"{i} (steps in order from 0)", step.index)
        if step.n_before != produced:
            raise _refuse(f"{at}.n_before", f"the tokens committed by the steps before it ({produced})", step.n_before)
        check_step(step, at, max_depth=max_depth, vocab=vocab)
        produced += len(step.committed)


def _steps_pass(steps: list[StepRecord], vocab: int | None, max_depth: int | None) -> bool:
    """Whether every step passes ``check_step`` (but the free-form objects, ``_check_free_form``), checked
    in bulk (``trace_bulk.steps_pass``) under this module's ``MAX_ITEMS``."""
    return trace_bulk.steps_pass(steps, vocab, max_depth, MAX_ITEMS)


def _check_free_form(steps: list[StepRecord], vocab: int | None = None) -> None:
    """What ``_steps_pass`` leaves to ``check_step`` for steps that pass it: each step's controller state, lens and
    rule record, in step order (a step's controller before its rule, as ``check_step`` does them). A rule
    record the same as one that passed (the same keys, value types and values) passes."""
    passed: set[tuple[Any, ...]] = set()
    for i, step in enumerate(steps):
        at = f"steps[{i}]"
        if step.controller is not None:
            _check_state(at, step)
        if step.lens is not None:
            check_lens(f"{at}.lens", step.lens, len(step.committed), vocab)
        rule = step.rule
        if rule is not None:
            key = _rule_key(rule)
            if key is not None and key in passed:
                continue
            plain_json(f"{at}.rule", rule)
            why = rule_words.check_record(rule, f"{at}.rule")
            if why:
                raise TraceFormatError(f"Malformed trace: {why}.")
            if key is not None:
                passed.add(key)


def _rule_key(rule: Any) -> tuple[Any, ...] | None:
    """A rule record as a hashable key (keys, exact value types, values), or None if a value is no scalar."""
    if type(rule) is not dict:
        return None
    key = []
    for k, v in rule.items():
        if type(v) not in (str, int, float, bool, type(None)) or type(k) is not str:
            return None
        key.append((k, type(v), v))
    return tuple(key)


def _check_output(output: list[int], committed: Iterable[int], n: int) -> None:
    if len(output) != n:
        raise TraceFormatError(
            f"Malformed trace: output_ids has {len(output)} tokens but the steps committed {n}; "
            "it must be their committed tokens end to end."
        )
    for k, (a, b) in enumerate(zip(output, committed)):
        if a != b:
            raise _refuse(f"output_ids[{k}]", f"committed token number {k + 1} of the steps ({b})", a)


__all__ = ["MAX_ITEMS", "MAX_POSITION_IDS", "MAX_STEPS", "check_trace"]
