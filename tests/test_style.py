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


MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60


def _sizes() -> tuple[list[str], list[str]]:
    """Every module of the package over ``MAX_MODULE_LINES`` lines and every function (a method, a nested
    one) over ``MAX_FUNCTION_LINES``, from its ``def`` to its last line, decorators left out."""
    import ast

    modules, functions = [], []
    for path in sorted((ROOT / "specviz").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(ROOT).as_posix()
        if source.count("\n") > MAX_MODULE_LINES:
            modules.append(f"{name}: {source.count(chr(10))} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    functions.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return modules, functions


def test_no_module_over_450_lines_and_no_function_over_60():
    """Issue 37 point 4: a module has one job and a function does one thing, split by what the parts do;
    this holds the line counts so the code base stays readable as it grows."""
    modules, functions = _sizes()
    assert not modules and not functions, "\n".join(["over the limits:", *modules, *functions])


def test_the_size_check_sees_a_long_function(tmp_path, monkeypatch):
    """The check above reads what it should: a 61-line function and a 451-line module are reported, a
    60-line function in a 450-line module is not."""
    package = tmp_path / "specviz"
    package.mkdir()
    for name, n in (("long", 61), ("fits", 60)):
        body = "\n".join(f"    x{i} = {i}" for i in range(n - 1))
        (package / f"{name}.py").write_text(f"def f():\n{body}\n" + "\n" * (390 - (n == 60)))
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    modules, functions = _sizes()
    assert functions == ["specviz/long.py:1 f: 61 lines"] and modules == ["specviz/long.py: 451 lines"]
