"""The logit lens: what each layer of the target would predict through the target's own output head.

Every layer's hidden state (Hugging Face ``hidden_states[i]``, the residual stream after decoder layer
``i``) is read out as the last layer's is: final norm, then LM head. The last entry of
``hidden_states`` is already normed, so the last layer's reading is the target's own logits, the same
head on the same vector. EESD (Liu et al. 2024, arXiv 2406.03853, Sec. 3.1, Eq. 1) drafts from the
state after its exit layer ``N`` (with a trained exit layer and head of its own); the lens at layer
``N`` shows what the target already "knows" there through its own head.
"""

from __future__ import annotations

import torch

from specviz.models.early_exit.layout import final_norm

MAX_LAYERS = 48  # rows of one step's view: deeper targets are shown at evenly spaced layers (the last always)
MAX_POSITIONS = 16  # columns of one step's view: the first positions of a longer step


def shown_layers(n_layers: int, cap: int = MAX_LAYERS) -> list[int]:
    """Layers 1..``n_layers`` when they fit under ``cap``, else ``cap`` of them evenly spaced, the last kept."""
    if n_layers <= cap:
        return list(range(1, n_layers + 1))
    step = n_layers / cap
    return sorted({max(1, round(step * (j + 1))) for j in range(cap - 1)} | {n_layers})


@torch.inference_mode()
def lens_top1(
    model: torch.nn.Module,
    hidden: tuple[torch.Tensor, ...],
    rows: list[int],
    layers: list[int],
    vocab_size: int | None = None,
) -> tuple[list[list[int]], list[list[float]]]:
    """Per layer in ``layers`` (``hidden_states`` indices, 1..L) and row in ``rows`` of a forward call's
    ``hidden`` (each ``[1, n, d]`` or ``[n, d]``): the top-1 token id of softmax(head(norm(h))) and its
    probability, over the first ``vocab_size`` logits (the tokenizer's tokens). Layer L reads
    ``hidden[L]`` (already normed) through the head alone: the target's own prediction."""
    last = len(hidden) - 1
    norm, head = final_norm(model), model.get_output_embeddings()
    idx = torch.tensor(rows, device=hidden[0].device)
    ids, probs = [], []
    for layer in layers:
        h = hidden[layer]
        h = (h[0] if h.dim() == 3 else h).index_select(0, idx)
        logits = head(h if layer == last else norm(h)).float()
        if vocab_size:
            logits = logits[:, :vocab_size]
        p, top = torch.softmax(logits, -1).max(-1)
        ids.append(top.tolist())
        probs.append(p.tolist())
    return ids, probs


@torch.inference_mode()
def hidden_states_of(model: torch.nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Every layer's hidden states of one plain forward over ``ids`` (``[1, n]``; no cache kept)."""
    device = next(model.parameters()).device
    return model(input_ids=ids.to(device), output_hidden_states=True, use_cache=False).hidden_states
