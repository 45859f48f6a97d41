"""Out-of-memory and CUDA failures during decoding, turned into a ``DeviceError`` a user can act on."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

from specviz.errors import DeviceError

_CUDA_MARKERS = ("CUDA error", "CUBLAS_STATUS", "CUDNN_STATUS", "cuDNN error", "device-side assert", "NCCL error")


def device_message(exc: BaseException) -> str | None:
    """The user-facing message for an out-of-memory or device failure, ``None`` for any other error."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    oom = isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or (
        isinstance(exc, RuntimeError) and ("out of memory" in str(exc).lower() or "can't allocate memory" in str(exc))
    )
    if oom:
        return (
            f"Out of memory while decoding ({text}). Ask for fewer new tokens, a smaller tree (gamma, size, "
            f"k_config), a shorter prompt, or load a smaller pair or dtype."
        )
    if isinstance(exc, RuntimeError) and any(m in str(exc) for m in _CUDA_MARKERS):
        return (
            f"The GPU failed while decoding ({text}). The CUDA context may be unusable now: restart specviz; "
            f"if it happens again, run on --device cpu to get a readable error."
        )
    return None


@contextmanager
def device_errors() -> Iterator[None]:
    """Re-raise out-of-memory and CUDA failures inside the block as ``DeviceError``; others pass through."""
    try:
        yield
    except (RuntimeError, MemoryError) as exc:
        message = device_message(exc)
        if message is None:
            raise
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        raise DeviceError(message) from exc
