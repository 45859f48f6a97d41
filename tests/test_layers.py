"""The layers the design promises: data flows models -> algorithms -> trace -> metrics/viz -> ui, so
nothing under ``specviz/viz`` imports the model, algorithm, decoding, UI or benchmark layers.

Checked statically (``ast``): importing ``specviz.viz`` at run time loads the whole package anyway, so
only the source says what a view module depends on."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

import specviz

VIZ = Path(specviz.__file__).resolve().parent / "viz"
FORBIDDEN = ("specviz.models", "specviz.algorithms", "specviz.ui", "specviz.decoding", "specviz.bench")


def imported_modules(source: str) -> set[str]:
    """Every module a source file imports, at any depth (function-level imports included).

    ``from m import x`` names ``m.x`` if that is a module, else the module that defines ``x`` (so
    ``from specviz import decode`` names ``specviz.decoding``; a constant names ``m``); a bare
    ``import specviz`` names the package facade itself."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if not node.module.startswith("specviz"):
                out.add(node.module)
                continue
            for alias in node.names:
                obj = getattr(importlib.import_module(node.module), alias.name, None)
                if obj is None:  # a submodule not imported yet
                    obj = importlib.import_module(f"{node.module}.{alias.name}")
                out.add(obj.__name__ if isinstance(obj, ModuleType) else getattr(obj, "__module__", node.module))
    return out


def violations(modules: set[str]) -> list[str]:
    bad = [m for m in modules if m == "specviz"]  # the facade: imports algorithms, decoding and models
    bad += [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    return sorted(bad)


@pytest.mark.parametrize("path", sorted(VIZ.rglob("*.py")), ids=lambda p: p.relative_to(VIZ).as_posix())
def test_viz_imports_no_upstream_layer(path):
    assert violations(imported_modules(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize(
    "source, bad",
    [
        ("import specviz", ["specviz"]),
        ("from specviz.models.loading import ModelPair", ["specviz.models.pair"]),  # named where it is defined
        ("def f():\n    import specviz.algorithms.sd", ["specviz.algorithms.sd"]),
        ("from specviz import decode", ["specviz.decoding"]),
        ("from specviz import bench", ["specviz.bench"]),
        ("from specviz import metrics\nfrom specviz.trace import RunTrace\nimport plotly", []),
    ],
)
def test_the_check_sees_each_way_of_importing(source, bad):
    assert violations(imported_modules(source)) == bad


def test_every_module_imports():
    """Every module of the package imports (a stale name after a refactor fails here, not in a user's
    ``python -m specviz.bench.eesd``)."""
    import importlib
    import pkgutil

    import specviz

    names = [m.name for m in pkgutil.walk_packages(specviz.__path__, "specviz.") if not m.name.endswith("__main__")]
    assert "specviz.bench.eesd" in names
    for name in names:
        importlib.import_module(name)


def test_presets_sit_below_the_models():
    """``models.loading`` reads the presets, so the presets import nothing of ``specviz.models`` (a packaged
    target is named and found by ``specviz.package_files``), nor the package facade."""
    source = (VIZ.parent / "presets.py").read_text(encoding="utf-8")
    assert violations(imported_modules(source)) == []
    assert not any(m.startswith("specviz.models") for m in imported_modules(source))
