"""The package's shape (issue #22): no import circles between specviz's modules, and a light face:
reading, checking and drawing a stored trace, and ``--help``, import neither torch nor transformers.

An edge is an ``import`` statement anywhere in a module (at its top or inside a function or class:
a function-level import is a dependency deferred, not removed), to the module it names:
``from specviz.ui import stepcache`` -> ``specviz.ui.stepcache``, ``from specviz.trace import RunTrace`` ->
``specviz.trace``; relative imports resolved; imports under ``if TYPE_CHECKING:`` count too (a type a
module's signatures name is part of its design). Not counted: the
package ``__init__`` Python runs before a submodule (every module would otherwise depend on its
package's re-exports)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_files(package: Path) -> dict[str, Path]:
    """Dotted name -> file of every module under ``package`` (a package by its ``__init__.py``)."""
    out = {}
    for f in sorted(package.rglob("*.py")):
        parts = list(f.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (see the module docstring)."""
    mods = module_files(package)

    def known(name: str) -> str | None:  # the longest prefix that is a module (a name imported from it)
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        here = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                # ``from pkg import sub``: the submodule where there is one, else the module itself
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for name in names:
                target = known(name)
                if target is not None and target != mod:
                    graph[mod].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def a_cycle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One closed path through ``comp``, for the message: ``a -> b -> a``."""
    start = min(comp)
    path, seen = [start], {start}
    while True:
        nxt = sorted(graph[path[-1]] & comp)
        back = [n for n in nxt if n in seen]
        if back:
            return path[path.index(back[0]) :] + [back[0]]
        path.append(nxt[0])
        seen.add(nxt[0])


def test_no_import_circles():
    """None at all: the last one (controllers <-> drafters <-> tree_engine) was cut by the step loop
    (issue #22 point 1): drafters get a frozen ``Plan``, controllers learn from ``step_types.StepResult``."""
    graph = import_graph(ROOT / "specviz")
    assert "specviz.algorithms.step_loop" in graph and graph["specviz.trace"]  # the walk found the package
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" -> ".join(a_cycle(graph, c)) for c in found)


def test_the_walk_finds_circles_through_function_level_and_type_only_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.a import f\n")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n    return b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from pkg import c\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.e import x\n")
    (pkg / "e.py").write_text("from pkg import d\n")
    (pkg / "f.py").write_text("from pkg import sub\nimport pkg.sub.b\n")
    graph = import_graph(pkg)
    assert graph["pkg.sub.b"] == {"pkg.c"} and graph["pkg.f"] == {"pkg.sub", "pkg.sub.b"}
    found = sorted(circles(graph), key=len)
    assert found == [{"pkg.d", "pkg.e"}, {"pkg.a", "pkg.sub.b", "pkg.c"}]
    assert a_cycle(graph, found[1]) == ["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]


# ---- the light face --------------------------------------------------------------------------------

BLOCK = textwrap.dedent('''
    import importlib.abc, sys

    class NoModelStack(importlib.abc.MetaPathFinder):
        """torch and transformers are not installed, as far as this process can tell."""
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "transformers"):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
            return None

    sys.meta_path.insert(0, NoModelStack())
''')

REPLAY = textwrap.dedent("""
    import json, pkgutil, sys
    import specviz, specviz.metrics, specviz.trace, specviz.trace_check, specviz.viz
    from specviz import viz
    from specviz.trace import RunTrace
    from specviz.trace_check import check_trace
    from specviz.viz import beams, controller, theory
    from specviz.viz.beam_story import beam_narrative
    from specviz.viz.narrative import informative_step, step_narrative

    for m in pkgutil.iter_modules(specviz.viz.__path__):
        __import__("specviz.viz." + m.name)
    traces = [RunTrace.from_json(open(p, encoding="utf-8").read()) for p in sys.argv[1:]]
    figures = 0
    for t in traces:
        check_trace(t)
        assert specviz.metrics.summarize(t)["new_tokens"] == len(t.output_ids)
        k = informative_step(t)
        viz.tokens_html(t)
        if beams.is_beam_trace(t):
            out = [beams.step_forest_figure(t, k), beams.beams_html(t, k), beam_narrative(t, k)]
        else:
            out = [viz.step_tree_figure(t, k), viz.controller_figure(t, k), step_narrative(t.steps[k], t.algorithm)]
            node = t.steps[k].forest[0].id if t.steps[k].forest else None
            out.append(None if node is None else viz.distribution_figure(t.steps[k], node))
        out += [theory.theory_panel(t, k), controller.draft_lengths_figure(t, k)]
        figures += sum(f is not None for f in out)
    runs = [(t.algorithm, t) for t in traces]
    out = [viz.comparison_table_html(runs), viz.tokens_per_step_figure(runs, 1), viz.cumulative_figure(runs, 1),
           viz.acceptance_histogram_figure(runs), viz.time_breakdown_figure(runs)]
    figures += sum(f is not None for f in out)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers"))
    print(json.dumps({"figures": figures, "loaded": loaded}))
""")


def run_blocked(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", BLOCK + code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_the_blocker_blocks():
    """The finder stands in for an environment without torch: importing it, or the model stack, fails."""
    done = run_blocked("import specviz.algorithms")
    assert done.returncode != 0 and "blocked by the test" in done.stderr


@pytest.fixture(scope="module")
def stored_traces(tmp_path_factory):
    """Traces of a tiny real pair, one per view family (tree, chain, beams, controller), as JSON files."""
    import specviz
    from tests.tiny import tiny_pair

    pair = tiny_pair(vocab=16, draft="noisy", noise=0.3)
    folder = tmp_path_factory.mktemp("traces")
    paths = []
    for algo, params in (("ar", {}), ("sd", {}), ("specinfer", {}), ("mcsd", {}), ("beam", {}), ("dsbd", {})):
        if algo not in specviz.ALGORITHMS:
            continue
        trace = specviz.decode(pair, algo, prompt=[1, 2, 3], max_new_tokens=10, temperature=1.0, seed=2, **params)
        path = folder / f"{algo}.json"
        path.write_text(trace.to_json(), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_a_stored_trace_is_read_checked_and_drawn_without_torch(stored_traces):
    done = run_blocked(REPLAY, *stored_traces)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    assert result["figures"] >= 3 * len(stored_traces)  # each trace drew its tree/forest, story and more


def test_a_check_without_torch_still_refuses_a_bad_trace(stored_traces):
    """Without the algorithms, a trace's values are still checked (only its parameters as plain values)."""
    bad = json.loads(Path(stored_traces[1]).read_text(encoding="utf-8"))
    bad["steps"][0]["forest"][0]["q"] = 7.0
    code = textwrap.dedent("""
        import sys
        from specviz.errors import TraceFormatError
        from specviz.trace import RunTrace
        from specviz.trace_check import check_trace
        try:
            check_trace(RunTrace.from_json(sys.argv[1]))
        except TraceFormatError as exc:
            print("refused:", exc)
    """)
    done = run_blocked(code, json.dumps(bad))
    assert done.returncode == 0 and "refused:" in done.stdout and "steps[0].forest[0].q" in done.stdout, (
        done.stdout + done.stderr[-2000:]
    )


@pytest.mark.parametrize(
    "run",
    [
        "runpy.run_module('specviz', run_name='__main__', alter_sys=True)",
        "runpy.run_path('app.py', run_name='__main__')",
    ],
    ids=["python -m specviz", "app.py"],
)
def test_help_imports_no_model_stack(run):
    """``--help`` answers without torch or transformers (its speed: docs/bench.md, 'Start-up')."""
    done = run_blocked(f"import runpy, sys\nsys.argv = ['main', '--help']\n{run}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "usage:" in done.stdout and "--help" in done.stdout


def lazy_uses(package: Path, lazy: set[str]) -> list[str]:
    """Each use inside ``package`` of a name the package's ``__init__`` loads lazily (``specviz.decode``,
    ``from specviz import load_pair``): ``path:line: name``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == package.name:
                names = [node.attr]
            elif isinstance(node, ast.ImportFrom) and node.module == package.name and not node.level:
                names = [a.name for a in node.names]
            else:
                continue
            found += [f"{path.relative_to(package.parent)}:{node.lineno}: {n}" for n in names if n in lazy]
    return found


def test_no_lazy_public_name_is_used_inside_the_package(tmp_path):
    """Issue 37 point 4: inside specviz a module imports ``decode``, ``stream``, ``load_pair``, ``ALGORITHMS``
    ... from the module that defines them, not through the facade's lazy ``__getattr__``, which hid the
    route from readers and from the import graph above."""
    import specviz

    assert lazy_uses(ROOT / "specviz", set(specviz._LAZY)) == []
    (tmp_path / "specviz").mkdir()
    (tmp_path / "specviz" / "__init__.py").write_text("")
    (tmp_path / "specviz" / "a.py").write_text("import specviz\nfrom specviz import decode\nspecviz.stream(1)\n")
    assert lazy_uses(tmp_path / "specviz", {"decode", "stream"}) == ["specviz/a.py:2: decode", "specviz/a.py:3: stream"]
