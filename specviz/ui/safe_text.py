"""Text from visitors and from the file system, made safe to show in the page.

``md_text`` escapes a string for Markdown (a model name typed as ``<img src=x>`` shows as text, not
as an element); ``display_name`` turns a model path into what the page and the traces show (relative
to the project, or the directory's own name: never the server's absolute path); ``hide_paths`` does
the same to every absolute path inside a message.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# what could start markup inside a line (a name or message never starts one): emphasis, code,
# links and images, tables, strikethrough, autolinks ("https:"); < > & are HTML-escaped
_MD_SPECIAL = re.compile(r"([\\`*_\[\]()!#|~:])")
# an absolute path: "/" or "X:\" not preceded by a word character, ":" or "/" (so URLs, hub ids
# "owner/name" and "package:DIST/FILE" are left alone), up to whitespace, a quote or a bracket
_ABS_PATH = re.compile(r"(?<![\w:/.~\\-])(?:/|[A-Za-z]:\\)[^\s'\"`<>|,;()\[\]{}]+")


def md_text(text: object) -> str:
    """``text`` as literal Markdown: HTML escaped, Markdown punctuation backslashed, on one line."""
    flat = " ".join(str(text).split())
    return _MD_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))


def display_name(name: str | None) -> str | None:
    """A model name as shown and recorded: an absolute path becomes relative to the project when it
    is inside it (``assets/draft``), else its last component; hub ids and other names are unchanged."""
    if not name:
        return name
    p = Path(name)
    if not (p.is_absolute() or re.match(r"[A-Za-z]:\\", name)):
        return name
    try:
        if not p.is_absolute():
            raise ValueError(name)
        return p.resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        return re.split(r"[\\/]", name.rstrip("\\/"))[-1] or "(a local directory)"


def hide_paths(message: str) -> str:
    """``message`` with every absolute path replaced by its ``display_name``."""

    def short(match: re.Match[str]) -> str:
        path = match.group(0)
        tail = len(path) - len(path.rstrip(".:"))  # the sentence's own full stop or colon
        return str(display_name(path[: len(path) - tail] or path)) + path[len(path) - tail :]

    return _ABS_PATH.sub(short, str(message))
