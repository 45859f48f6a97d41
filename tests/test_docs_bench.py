"""The README's benchmark is one recorded run (issue 35 point 17): each row's per-category ranges
(speed-up, predicted, efficiency) are the extremes of that method's rows in docs/bench.md's per-category
table of the run, and the README's `model_cut` sentence quotes the second run's table there. A figure
edited in one place and not the other fails here."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = "### The seventh head (2026-11-29, late night)"  # the README's run
CUT_RUN = "### The fourth head (2026-11-29, afternoon"  # the run the README's model_cut sentence quotes
# the README's row label -> the method's name in docs/bench.md's per-category table
ROWS = {
    "`sd` gamma 3 (the default), feature head": "sd",
    "`sd` gamma 2, feature head": "sd_g2",
    "`sd` gamma 4, feature head": "sd_g4",
    "`sd` gamma 6, feature head": "sd_g6",
    "`sd`, `confidence` stop, feature head": "sd_confidence",
    "`dyntree` (31 nodes), feature head": "dyntree",
    "`sequoia`, feature head": "sequoia",
    "`sd` gamma 3, draft model": "sd@model",
    "`dyntree`, draft model": "dyntree@model",
    "`sequoia`, draft model": "sequoia@model",
    "HF assisted generation (draft model, 4 a step)": "hf_assisted",
    "HF `generate`": "hf_generate",
    "HF prompt lookup": "hf_prompt_lookup",
}


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def section(text: str, heading: str) -> str:
    """From ``heading`` to the next heading of its level or above."""
    start = text.index(heading)
    ends = [text.find(m, start + len(heading)) for m in ("\n## ", "\n### ")[: heading.count("#", 0, 3) - 1]]
    ends = [e for e in ends if e >= 0]
    return text[start : min(ends) if ends else None]


def readme_rows() -> dict[str, list[str]]:
    table = section((ROOT / "README.md").read_text(encoding="utf-8"), "## Benchmark")
    return {cells(line)[0]: cells(line)[1:] for line in table.splitlines() if line.startswith("| ")}


def per_category() -> dict[str, list[list[str]]]:
    run = section((ROOT / "docs" / "bench.md").read_text(encoding="utf-8"), RUN)
    out: dict[str, list[list[str]]] = {}
    for line in run.splitlines():
        c = cells(line) if line.startswith("| ") else []
        if len(c) >= 12 and c[0] in ("facts", "explain", "lists", "code", "arithmetic"):
            out.setdefault(c[1], []).append(c)
    return out


def test_every_readme_benchmark_row_is_the_recorded_runs_per_category_extremes():
    readme, run = readme_rows(), per_category()
    assert set(ROWS) <= set(readme), set(ROWS) - set(readme)
    for label, method in ROWS.items():
        rows = run[method]
        assert len(rows) == 5, (method, len(rows))
        # README columns: tau, tokens/s, speedup, per category, predicted, efficiency, greedy
        for readme_col, bench_col in ((3, 9), (4, 10), (5, 11)):
            want = readme[label][readme_col]
            # a speed-up cell may carry its passes' spread after it: "1.83 (1.82-1.83)"
            values = sorted(float(r[bench_col].split()[0]) for r in rows) if rows[0][bench_col] != "-" else None
            if values is None:
                assert want == "-", (label, want)
                continue
            assert want == f"{values[0]:.2f} – {values[-1]:.2f}", (label, readme_col, want, values)


def test_the_readme_model_cut_sentence_quotes_the_second_run():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    run = section((ROOT / "docs" / "bench.md").read_text(encoding="utf-8"), CUT_RUN)
    table = {cells(line)[0]: cells(line) for line in run.splitlines() if line.startswith("| draft model")}
    cut = next(v for k, v in table.items() if "model_cut" in k)
    full = next(v for k, v in table.items() if "(`model`)" in k)

    def up(row: list[str]) -> str:  # the bold speed-up
        return row[3].strip("*")

    def spread(row: list[str]) -> str:
        return row[4].replace(" – ", "-")

    sentence = " ".join(readme[readme.index('(`drafter="model_cut"`)') :].split()[:40])
    assert f"{up(cut)}x `ar` ({spread(cut)} per category) against {up(full)}x ({spread(full)})" in sentence, sentence
    assert f"tau {cut[1]} both ways" in sentence and cut[1] == full[1], sentence
