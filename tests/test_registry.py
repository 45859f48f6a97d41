"""One registration carries every fact about an algorithm (issue #37 point 1): its parameters, its cost
bound for the public cap, its colour, what drafts for it and whether the page opens with it; nothing
outside the algorithm's own module keeps a list or a branch keyed by its name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import specviz
from specviz.algorithms.cost import Cost
from specviz.algorithms.registry import DRAFTER_KINDS, page_defaults, register
from specviz.trace import describe_drafter
from specviz.viz.style import STATUS_COLORS, algorithm_color

ROOT = Path(specviz.__file__).resolve().parent
#: where a list or branch keyed by an algorithm's name would be a second copy of its registration: the
#: page, the figures, the trace and what reads it (benchmarks and the command line choose what to run)
SHARED = [
    *sorted((ROOT / "ui").rglob("*.py")),
    *sorted((ROOT / "viz").rglob("*.py")),
    *(ROOT / f for f in ("trace.py", "trace_check.py", "trace_io.py", "metrics.py", "decoding.py")),
]
#: ``ar`` is a role as well as a name: the reference every other algorithm's output and speed is read
#: against (a greedy-equality check against ar, speed-ups over ar), so the page and the tables may name it
REFERENCE = "ar"


@pytest.mark.parametrize("name", list(specviz.ALGORITHMS))
def test_each_registration_carries_its_facts(name):
    spec = specviz.ALGORITHMS[name]
    assert spec.drafter in DRAFTER_KINDS
    assert spec.needs_draft == (spec.drafter == "draft")
    cost = spec.cost(spec.effective(spec.defaults), 16)
    assert isinstance(cost, Cost) and cost.positions >= 16 and cost.parameter and cost.detail
    assert algorithm_color(name) == spec.color and algorithm_color(name.upper()) == spec.color


def test_colours_are_distinct_and_no_status_colour():
    colours = [s.color for s in specviz.ALGORITHMS.values()]
    assert len(set(colours)) == len(colours)
    assert not set(colours) & set(STATUS_COLORS.values())


def test_the_light_copy_of_the_colours_is_the_registrys():
    """``viz.style`` colours a stored trace without importing the algorithms, from ``cli_params_data``."""
    from specviz.cli_params import colours
    from specviz.cli_params_data import COLORS

    assert COLORS == colours(specviz.ALGORITHMS.values()), (
        "regenerate: python -m specviz.cli_params > specviz/cli_params_data.py"
    )


def test_the_page_opens_with_the_ranked_registrations():
    ranked = page_defaults(specviz.ALGORITHMS)
    assert ranked[:4] == ["ar", "sd", "specinfer", "mcsd"]  # the page's four default columns
    assert len(set(ranked)) == len(ranked) and all(specviz.ALGORITHMS[n].page_rank is not None for n in ranked)


def test_the_drafter_a_trace_names_comes_from_the_registration():
    pair = {"target": "t", "draft": "d", "draft_params": 7, "early_exit": {"exit_layer": 2}}
    kinds = {name: (describe_drafter(spec, pair) or {}).get("kind") for name, spec in specviz.ALGORITHMS.items()}
    assert kinds["ar"] is None and kinds["beam"] is None and kinds["pld"] == "prompt_lookup"
    assert kinds["eesd"] == "early_exit" and kinds["sd"] == kinds["dsbd"] == "draft_model"


def test_a_registration_that_contradicts_itself_is_refused_at_import():
    taken = specviz.ALGORITHMS["sd"].color

    def fn(dec):
        yield from ()

    facts = {"description": "x", "paper": "x", "cost": lambda p, n: Cost(n, "x", "x")}
    with pytest.raises(ValueError, match="drafter"):
        register("zz_bad", **facts, color="#123456", drafter="a_model")(fn)
    with pytest.raises(ValueError, match="color"):
        register("zz_bad", **facts, color="red")(fn)
    with pytest.raises(ValueError, match="already sd's"):
        register("zz_bad", **facts, color=taken)(fn)
    with pytest.raises(ValueError, match="already"):
        register("zz_bad", **facts, color="#123456", page_rank=specviz.ALGORITHMS["ar"].page_rank)(fn)
    assert "zz_bad" not in specviz.ALGORITHMS


def name_keyed(path: Path, names: set[str]) -> list[str]:
    """Where ``path`` keeps a list keyed by two or more of ``names`` (a tuple, list, set or dict of them)
    or branches on one of them other than ``REFERENCE`` (``x == "sd"``, ``x in ("sd", ...)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        items = (
            node.keys
            if isinstance(node, ast.Dict)
            else node.elts
            if isinstance(node, (ast.Tuple, ast.List, ast.Set))
            else []
        )
        hit = {i.value for i in items if isinstance(i, ast.Constant) and i.value in names}
        if len(hit) >= 2:
            found.append(f"{path.name}:{node.lineno} lists {sorted(hit)}")
        if isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
            consts = [c for p in parts for c in ([p] if isinstance(p, ast.Constant) else getattr(p, "elts", []))]
            hit = {c.value for c in consts if isinstance(c, ast.Constant) and c.value in names} - {REFERENCE}
            if hit:
                found.append(f"{path.name}:{node.lineno} branches on {sorted(hit)}")
    return found


def test_nothing_outside_an_algorithms_module_is_keyed_by_its_name():
    names = set(specviz.ALGORITHMS)
    found = [f for path in SHARED for f in name_keyed(path, names)]
    assert not found, "move these facts into the registrations (register(...)): " + "; ".join(found)


def test_the_check_sees_lists_and_branches(tmp_path):
    src = tmp_path / "m.py"
    src.write_text(
        'A = {"sd": 1, "mcsd": 2}\nB = ("ar", "beam")\nif x == "ar":\n    pass\nif y in ("pld",):\n'
        '    pass\nC = ("ar",)\n'
    )
    assert [f.split(" ", 1)[0] for f in name_keyed(src, set(specviz.ALGORITHMS))] == ["m.py:1", "m.py:2", "m.py:5"]
