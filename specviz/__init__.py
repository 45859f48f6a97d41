"""specviz: run speculative decoding of real language models step by step and record every step.

Public API: ``load_pair``, ``decode``, ``stream``, ``ALGORITHMS``, ``RunTrace``.

The trace and the errors are imported at once; the names that need torch and transformers (the
algorithms, decoding, loading) on first use (PEP 562), so that reading a trace, checking one or
drawing its figures (``specviz.trace``, ``specviz.trace_check``, ``specviz.viz``) does not load them.
"""

from __future__ import annotations

import importlib
from typing import Any

from specviz import trace_io  # noqa: F401,E402  registers the reading every RunTrace.from_json does
from specviz.errors import (
    InvalidParameterError,
    ModelLoadError,
    PromptError,
    SpecvizError,
    TokenizerMismatchError,
    TraceFormatError,
    UnknownAlgorithmError,
)
from specviz.trace import CommittedToken, PositionRecord, RunTrace, StepRecord, TreeNode

__version__ = "0.1.0"
_LAZY = {
    "ALGORITHMS": "specviz.algorithms",
    "LiveRun": "specviz.decoding",
    "decode": "specviz.decoding",
    "stream": "specviz.decoding",
    "ModelPair": "specviz.models.loading",
    "load_pair": "specviz.models.loading",
}
__all__ = [
    "ALGORITHMS",
    "CommittedToken",
    "InvalidParameterError",
    "LiveRun",
    "ModelLoadError",
    "ModelPair",
    "PositionRecord",
    "PromptError",
    "RunTrace",
    "SpecvizError",
    "StepRecord",
    "TokenizerMismatchError",
    "TraceFormatError",
    "TreeNode",
    "UnknownAlgorithmError",
    "decode",
    "load_pair",
    "stream",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value  # once
        return value
    raise AttributeError(f"module 'specviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
