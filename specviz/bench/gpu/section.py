"""One section of the GPU check as it is built (``Section``), reported to the worker's state file as it
goes, and the Markdown tables the sections write."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


class Section:
    """One section's report as it is built: Markdown lines, a status and a one-line note, and the
    time left of its budget (``left``). Every ``out`` writes the section so far to the state file,
    so a section stopped from outside keeps what it had measured."""

    def __init__(self, name: str, budget: float, state: Path):
        self.name, self.budget, self.state = name, budget, state
        self.start = time.monotonic()
        self.lines: list[str] = []
        self.status, self.note = "recorded", ""
        self.facts: dict[str, Any] = {}
        self._event("start")

    def left(self) -> float:
        return self.budget - (time.monotonic() - self.start)

    def out(self, *lines: str) -> None:
        self.lines.extend(lines)
        self._event("partial")

    def _event(self, kind: str) -> None:
        event = {
            "event": kind,
            "section": self.name,
            "seconds": time.monotonic() - self.start,
            "status": self.status,
            "note": self.note,
            "lines": self.lines,
            "facts": self.facts,
        }
        with open(self.state, "a") as fh:
            fh.write(json.dumps(event, default=str) + "\n")

    def done(self) -> None:
        self._event("done")


def table(header: list[str], rows: list[list[Any]], align: str | None = None) -> list[str]:
    align = align or "|".join("---" for _ in header)
    return ["| " + " | ".join(header) + " |", "|" + align + "|"] + ["| " + " | ".join(map(str, r)) + " |" for r in rows]
