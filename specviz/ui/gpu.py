"""``spaces.GPU`` where the ``spaces`` package is installed (Hugging Face ZeroGPU), a no-op elsewhere."""

from __future__ import annotations

import os
from typing import Any, Callable

GPU_DURATION_S = int(os.environ.get("SPECVIZ_GPU_DURATION", "120"))


def gpu(fn: Callable[..., Any], duration: int = GPU_DURATION_S) -> Callable[..., Any]:
    """Wrap ``fn`` in ``spaces.GPU(duration=...)`` when ``spaces`` is importable; return it unchanged otherwise.

    On ZeroGPU a GPU is attached only while a decorated function runs; the decorator passes
    generator functions through, so a run still streams step by step. Off ZeroGPU ``spaces.GPU``
    is itself a no-op, and without the package nothing is wrapped at all.
    """
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return fn
    return spaces.GPU(duration=duration)(fn)
