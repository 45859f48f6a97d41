"""specviz: run speculative decoding of real language models step by step and record every step.

Public API (DESIGN.md): ``load_pair``, ``decode``, ``stream``, ``ALGORITHMS``, ``RunTrace``.
"""
from specviz.algorithms import ALGORITHMS
from specviz.decoding import LiveRun, decode, stream
from specviz.errors import (InvalidParameterError, ModelLoadError, PromptError, SpecvizError,
                            TokenizerMismatchError, TraceFormatError, UnknownAlgorithmError)
from specviz.models.loading import ModelPair, load_pair
from specviz.trace import CommittedToken, PositionRecord, RunTrace, StepRecord, TreeNode

__version__ = "0.1.0"
__all__ = [
    "ALGORITHMS", "CommittedToken", "InvalidParameterError", "LiveRun", "ModelLoadError", "ModelPair",
    "PositionRecord", "PromptError", "RunTrace", "SpecvizError", "StepRecord", "TokenizerMismatchError", "TraceFormatError",
    "TreeNode", "UnknownAlgorithmError", "decode", "load_pair", "stream",
]
