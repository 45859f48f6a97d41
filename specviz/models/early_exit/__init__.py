"""Early-exit draft model for EESD, on any Hugging Face decoder-only causal LM.

Liu et al., "Speculative Decoding via Early-exiting for Faster LLM Inference with Thompson Sampling
Control Mechanism" (arXiv 2406.03853), Eq. (1): ``p(y_t) = softmax(W^T · Norm(Layer_e(H_t^N)))``.
The target's embeddings and first ``N`` decoder layers (the frozen, shared trunk) produce ``H^N``
(= ``hidden_states[N]``, the residual stream before any final norm); one extra decoder layer,
initialised as a copy of the target's **last** layer, a copy of the final norm and an **untied** copy of
the LM head (``EarlyExitHead``) turn it into draft logits. Only the head is stored
(``early_exit.safetensors`` + ``early_exit.json``); the trunk is always the base model's.

The draft is run as a *stock* model of the base's own class with ``N + 1`` layers (``exit_model``):
its embeddings, position embeddings/rotary module and first ``N`` layers are the base's modules
(shared, not copied), its layer ``N`` is the exit layer, its final norm and LM head are the head's.
So masks, position ids and caches behave exactly as in the base architecture, and ``EarlyExitLM``
(a ``CachedLM``) drafts with the prefix + tree conventions of ``specviz.models.tree_forward``.
Works for every family whose backbone keeps its blocks in one ``ModuleList`` and has a final norm
(Llama, Qwen2/3, Mistral, GPT-2, GPT-NeoX, Phi, ...).

The package by concern: ``layout`` (architecture discovery: the backbone, its layer list and final
norm), ``head`` (``EarlyExitHead`` and the stock exit model built around it), ``cache``
(``EarlyExitLM``, the drafting ``CachedLM``, and ``SharedPrefixLayer``, the ``DynamicLayer`` that
reads the target's trunk KV), ``files`` (a head directory: ``early_exit.safetensors`` +
``early_exit.json``) and ``calibration`` (the file of Cali-TS's calibration head, saved beside it; the
head itself, ``CalibrationHead``, is algorithm maths in ``specviz.core.cali_ts``). Every name is also
importable from here.
"""

from specviz.models.early_exit.cache import EarlyExitLM, SharedPrefixLayer
from specviz.models.early_exit.calibration import (
    CALIBRATION_WEIGHTS,
    CalibrationHead,
    load_calibration,
    save_calibration,
)
from specviz.models.early_exit.files import (
    FORMAT,
    HEAD_CONFIG,
    HEAD_WEIGHTS,
    load_early_exit,
    read_early_exit_config,
    resolve_base,
    save_early_exit,
)
from specviz.models.early_exit.head import EarlyExitHead, build_exit_model
from specviz.models.early_exit.layout import NORM_NAMES, capture_output, final_norm, first_n, layout

__all__ = [
    "CALIBRATION_WEIGHTS",
    "FORMAT",
    "HEAD_CONFIG",
    "HEAD_WEIGHTS",
    "NORM_NAMES",
    "CalibrationHead",
    "EarlyExitHead",
    "EarlyExitLM",
    "SharedPrefixLayer",
    "build_exit_model",
    "capture_output",
    "final_norm",
    "first_n",
    "layout",
    "load_calibration",
    "load_early_exit",
    "read_early_exit_config",
    "resolve_base",
    "save_calibration",
    "save_early_exit",
]
