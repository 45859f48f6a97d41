"""The training corpus: the running Python's own standard-library source (PSF licence).

Every machine that runs specviz has this corpus offline, so the bundled pair can be rebuilt anywhere
with no download. The file list is deterministic: directories are walked in sorted order, and each
file goes to the held-out split or the training split by a hash of its path relative to the stdlib
root (so the split of a given file never depends on which other files exist). Different Python
versions ship different stdlib sources, so the exact corpus depends on the interpreter; the build
records the Python version, file counts and a SHA-256 of the corpus next to the trained models.

Left out: ``site-packages``/``dist-packages`` (third-party code, other licences), ``__pycache__``,
``encodings`` (mostly generated charmap tables) and files over ``max_file_bytes`` (generated data
such as ``pydoc_data/topics.py``), none of which looks like the Python a user would prompt with.
"""

from __future__ import annotations

import hashlib
import os
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

EXCLUDED_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__", "encodings", "pydoc_data"})


@dataclass
class Corpus:
    """Texts of the training and held-out files, in a deterministic order."""

    root: str
    train_files: list[str] = field(default_factory=list)
    heldout_files: list[str] = field(default_factory=list)
    train_texts: list[str] = field(default_factory=list)
    heldout_texts: list[str] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        h = hashlib.sha256()
        for name, text in zip(self.train_files + self.heldout_files, self.train_texts + self.heldout_texts):
            h.update(name.encode())
            h.update(b"\0")
            h.update(text.encode("utf-8", "surrogatepass"))
            h.update(b"\0")
        return h.hexdigest()

    def describe(self) -> dict:
        return {
            "source": "Python standard library *.py files (PSF licence)",
            "root": self.root,
            "train_files": len(self.train_files),
            "heldout_files": len(self.heldout_files),
            "train_chars": sum(map(len, self.train_texts)),
            "heldout_chars": sum(map(len, self.heldout_texts)),
            "sha256": self.sha256,
        }


def stdlib_root() -> str:
    return sysconfig.get_paths()["stdlib"]


def list_source_files(root: str | os.PathLike, max_file_bytes: int = 200_000) -> list[str]:
    """Relative paths of the ``*.py`` files under ``root`` in sorted walk order."""
    root = str(root)
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in EXCLUDED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if not name.endswith(".py"):
                continue
            full = os.path.join(dirpath, name)
            try:
                if os.path.getsize(full) > max_file_bytes or os.path.islink(full):
                    continue
            except OSError:
                continue
            out.append(os.path.relpath(full, root).replace(os.sep, "/"))
    return out


def is_heldout(relpath: str, heldout_percent: float) -> bool:
    """Stable split: the file's path hash decides, independent of the other files."""
    bucket = int.from_bytes(hashlib.sha1(relpath.encode()).digest()[:4], "big") % 10_000
    return bucket < heldout_percent * 100


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    return text if text.strip() else None


def build_corpus(
    root: str | os.PathLike | None = None,
    heldout_percent: float = 4.0,
    max_files: int | None = None,
    max_file_bytes: int = 200_000,
    include_tests: bool = True,
) -> Corpus:
    """Read the corpus. ``max_files`` keeps only the first files of the sorted list (for tiny test runs).

    Tabs are expanded to four spaces and line endings normalised, so indentation is one token family.
    """
    root = str(root or stdlib_root())
    files = list_source_files(root, max_file_bytes=max_file_bytes)
    if not include_tests:
        files = [f for f in files if not any(part in ("test", "tests", "idle_test") for part in f.split("/"))]
    if max_files is not None:
        # Spread a small slice over the whole list rather than taking one package's files.
        step = max(1, len(files) // max_files)
        files = files[::step][:max_files]
    corpus = Corpus(root=root)
    for rel in files:
        text = _read(Path(root) / rel)
        if text is None:
            continue
        if is_heldout(rel, heldout_percent):
            corpus.heldout_files.append(rel)
            corpus.heldout_texts.append(text)
        else:
            corpus.train_files.append(rel)
            corpus.train_texts.append(text)
    if not corpus.train_texts:
        raise RuntimeError(f"no Python source files found under {root!r}")
    if not corpus.heldout_texts:  # tiny slices: hold out the last training file instead
        corpus.heldout_files.append(corpus.train_files.pop())
        corpus.heldout_texts.append(corpus.train_texts.pop())
    return corpus
