"""Every module the docs name exists (issue 37 point 4): the README and ``docs/*.md`` named modules that a
reorganisation had removed (``controllers.py``, ``plans.py``, ``outcomes.py``, ``step_state.py``, ...), and
a newcomer following them found nothing. Checked: each ``specviz/``, ``tests/`` or ``scripts/`` path, each
bare module file name in backticks (``tree_verifier.py``) and each dotted ``specviz.`` name in backticks
(a module, or a name the package exports)."""

from __future__ import annotations

import re
from pathlib import Path

import specviz

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
PATH = re.compile(r"(?<![\w/.-])((?:specviz|tests|scripts)/[\w./-]*\w/?)")
BACKTICKED = re.compile(r"`([^`\s]+)`")
FILE_NAME = re.compile(r"(?<![\w/])([A-Za-z_]\w*\.(?:py|sh))\b")


def references(text: str, pattern: re.Pattern) -> list[tuple[int, str]]:
    """``(line, match)`` of each match of ``pattern``'s first group in ``text``."""
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in pattern.finditer(text)]


def modules() -> set[str]:
    """Every module of the package as a dotted name (a package by its own name)."""
    out = set()
    for f in (ROOT / "specviz").rglob("*.py"):
        parts = f.relative_to(ROOT).with_suffix("").parts
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def missing_references(name: str, text: str) -> list[str]:
    """What ``text`` (the document ``name``) names that is not in the repository, one line each."""
    files = {f.name for f in ROOT.rglob("*") if f.suffix in (".py", ".sh") and ".git" not in f.parts}
    mods = modules()
    out = [f"{name}:{line}: {p}" for line, p in references(text, PATH) if not (ROOT / p.rstrip("/")).exists()]
    for line, token in references(text, BACKTICKED):
        if "/" not in token:
            out += [f"{name}:{line}: {f}" for f in FILE_NAME.findall(token) if f not in files]
        dotted = re.fullmatch(r"specviz((?:\.\w+)+)\(?\)?", token)
        if dotted:
            parts = ("specviz" + dotted.group(1)).split(".")
            if parts[1] not in specviz.__all__ and not any(
                ".".join(parts[:k]) in mods for k in range(2, len(parts) + 1)
            ):
                out.append(f"{name}:{line}: {token}")
    return out


def test_every_module_the_docs_name_exists():
    found = [m for doc in DOCS for m in missing_references(doc.relative_to(ROOT).as_posix(), doc.read_text())]
    assert not found, "named in the docs, not in the repository:\n" + "\n".join(found)


def test_the_check_sees_each_kind_of_reference():
    text = (
        "see `specviz/algorithms/controllers.py` and `plans.py`, the `specviz.verifiers.Verifier`\n"
        "and specviz/step_state.py; `specviz/algorithms/step_types.py`, `tree_verifier.py`, `specviz.decode`,\n"
        "`specviz.trace.RunTrace`, `specviz/step_state/`, `scripts/test.sh` and `gc.collect` are there\n"
    )
    assert missing_references("x.md", text) == [
        "x.md:1: specviz/algorithms/controllers.py",
        "x.md:2: specviz/step_state.py",
        "x.md:1: plans.py",
        "x.md:1: specviz.verifiers.Verifier",
    ]
