"""The code's style is checked by the test command (issue 37 point 4): ``ruff format --check`` and ``ruff check``
(``[tool.ruff]`` in ``pyproject.toml``: line length 120, lint rules E, F, W, I) pass on the whole repository.
ruff is in the ``dev`` extras; to mend a finding: ``ruff format .`` and ``ruff check --fix .``."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "command", [["format", "--check"], ["check", "--output-format", "concise"]], ids=["format", "check"]
)
def test_ruff_passes_on_the_repository(command):
    args = [sys.executable, "-m", "ruff", *command, "--no-cache", "."]
    run = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        pytest.fail(f"ruff {' '.join(command)} . (exit {run.returncode}):\n{run.stdout}{run.stderr}", pytrace=False)
