"""Exception types a user can act on. Every message names what was wrong and what to do."""

from __future__ import annotations


class SpecvizError(Exception):
    """Base class for every error specviz raises on purpose.

    ``param``: the Python parameter the message is about (``top_p``), when it is about one;
    ``subject``: the words the message opens with that name it (``top_p (1 disables it)``,
    ``sd: parameter 'gamma'``). ``specviz.validation`` sets both (``validation.about``), so a front end
    can name the parameter its own way (the CLI: ``--top-p``) without parsing the sentence."""

    param: str | None = None
    subject: str | None = None


class ModelLoadError(SpecvizError):
    """A model or tokenizer could not be loaded (unknown id, missing path, offline, out of memory)."""


class TokenizerMismatchError(SpecvizError):
    """Draft and target do not share a vocabulary, so speculative decoding between them is meaningless."""


class InvalidParameterError(SpecvizError, ValueError):
    """A sampling or algorithm parameter is outside its valid range."""


class PromptError(SpecvizError, ValueError):
    """The prompt is empty or does not fit in the model's context window."""


class UnknownAlgorithmError(SpecvizError, KeyError):
    """No algorithm with that name is registered."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class TraceFormatError(SpecvizError, ValueError):
    """A trace file is malformed, from an unknown schema version, or too large."""


class DeviceError(SpecvizError):
    """The device ran out of memory or failed (a CUDA error) while decoding."""
