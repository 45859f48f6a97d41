"""A step's logit lens, read from the target's hidden states of its verify call (``record_lens``).

The verify call of a drafted tree (``tree_verifier``: row 0 after the committed context, row 1 + i
after node i) already computes every layer's hidden state at the positions that produced the step's
committed tokens: the context's last row and the accepted path's rows. ``step_lens`` reads them
through the target's final norm and head (``models.logit_lens``): no extra target call. Proposals of
another shape (DSBD's forests, beam sampling) record no lens. The early-exit layer marked is the
pair's (EESD, Liu et al. 2024, arXiv 2406.03853, Sec. 3.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specviz.algorithms.step_types import DraftedTree
from specviz.algorithms.tree_verifier import TreeOutcome
from specviz.models.logit_lens import MAX_POSITIONS, lens_top1, shown_layers
from specviz.trace import CommittedToken, LayerLens

if TYPE_CHECKING:
    from specviz.algorithms.decoder import Decoder


def step_lens(
    dec: "Decoder", proposal: Any, outcome: Any, committed: list[CommittedToken], n_before: int
) -> LayerLens | None:
    """The lens of the positions that produced ``committed`` (at most ``MAX_POSITIONS``), from the
    target's last call (``CachedLM.last_hidden``); ``None`` for a proposal that is no drafted tree."""
    hidden = dec.target.last_hidden
    if hidden is None or not committed or not isinstance(proposal, DraftedTree) or not isinstance(outcome, TreeOutcome):
        return None
    n = hidden[0].shape[-2]
    first = n - 1 - len(proposal)  # the row after the committed context
    rows = [first] + [first + 1 + v for v in outcome.path]
    rows = rows[: min(len(committed), MAX_POSITIONS)]
    n_layers = len(hidden) - 1
    layers = shown_layers(n_layers)
    ids, probs = lens_top1(dec.pair.target, hidden, rows, layers, dec.pair.vocab_size)
    start = dec.prompt_len + n_before - 1  # the token the first position reads
    reads = [dec.text(t) for t in dec.tokens[start : start + len(rows)]]
    exit_layer = dec.pair.early_exit.exit_layer if dec.pair.early_exit is not None else None
    return LayerLens(
        layers=layers,
        n_layers=n_layers,
        reads=reads,
        ids=ids,
        texts=[[dec.text(t) for t in row] for row in ids],
        probs=probs,
        exit_layer=exit_layer,
    )


def lens_of_step(pair: Any, trace: Any, index: int) -> LayerLens:
    """The lens of step ``index`` of ``trace`` (a ``RunTrace`` that ran on ``pair``) on request: one
    target call over the prompt and the output up to the step's last producing position, its hidden
    states read at the positions that produced the step's committed tokens (at most ``MAX_POSITIONS``).
    On those positions the states equal the verify call's (same tokens, same positions; up to float
    rounding of the tree attention's mask), so this is the view ``record_lens`` would have recorded."""
    import torch

    from specviz.errors import SpecvizError
    from specviz.models.logit_lens import hidden_states_of

    if trace.pair.get("target") != pair.describe().get("target"):
        raise SpecvizError("This run was made with another target than the pair loaded now: load its pair first.")
    if not 0 <= index < len(trace.steps):
        raise SpecvizError(f"There is no step {index + 1} in this run.")
    step = trace.steps[index]
    n = min(len(step.committed), MAX_POSITIONS)
    if n == 0:
        raise SpecvizError(f"Step {index + 1} committed no token.")
    start = len(trace.prompt_ids) + step.n_before - 1
    ids = list(trace.prompt_ids) + list(trace.output_ids[: step.n_before + n - 1])
    hidden = hidden_states_of(pair.target, torch.tensor([ids]))
    n_layers = len(hidden) - 1
    layers = shown_layers(n_layers)
    top, probs = lens_top1(pair.target, hidden, list(range(start, start + n)), layers, pair.vocab_size)
    exit_layer = pair.early_exit.exit_layer if pair.early_exit is not None else None
    return LayerLens(
        layers=layers,
        n_layers=n_layers,
        reads=[pair.decode_token(t) for t in ids[start : start + n]],
        ids=top,
        texts=[[pair.decode_token(t) for t in row] for row in top],
        probs=probs,
        exit_layer=exit_layer,
    )
