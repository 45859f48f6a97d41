"""``python -m specviz papers``: each paper's headline claims next to specviz's number on the closest
setting (issue 38). The quick report is made here and read back; the shipped full report
(assets/papers/papers.json, which the app reads, and docs/papers.md) is checked the same way, and its
Markdown must be what its JSON renders."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from specviz.papers import dsbd, eesd, mcsd, sequoia, theory
from specviz.papers.report import check, markdown, read
from specviz.papers.rows import VERDICTS, Claim

ROOT = Path(__file__).resolve().parents[1]
PAPERS = {theory.PAPER, sequoia.PAPER, mcsd.PAPER, eesd.PAPER, dsbd.PAPER}
FIELDS = ("claim", "source", "paper_value", "paper_setting", "setting", "measured", "difference", "spread_kind")


PAPER_ON_SCALE = (
    "the printed value of Thm 1's E[N_rej] at T = 50",
    "more candidates raise acceptance: k = 4 against k = 1 at T = 1",
    "Thompson sampling (Beta-TS) beats a fixed draft length K = 10",
    "Beta-TS bolted onto vanilla SD speeds it up",
    "DSBD is faster than beam sampling (t = 0.7)",
)


def assert_complete(report: dict) -> None:
    assert check(report) == []
    rows = report["rows"]
    assert {r["paper"] for r in rows} == PAPERS
    for r in rows:
        for key in FIELDS:
            assert str(r[key]).strip(), (r["claim"], key)
        assert math.isfinite(r["value"]) and (r["spread"] is None or math.isfinite(r["spread"])), r["claim"]
        assert r["verdict"] in VERDICTS
        assert "reproduced" not in (r["measured"] + r["difference"] + r["verdict"]).lower()
    widths = [r for r in rows if r["paper"] == dsbd.PAPER and "faster" in r["claim"]]
    assert widths and all("W_L (paper)" in r["measured"] and "W_S (code)" in r["measured"] for r in widths)
    assert any(r["source"] == "Fig. 2(a)" and r["spread"] for r in rows)  # Thm 1's value with its spread
    on_scale = {r["claim"] for r in rows if isinstance((r["extra"] or {}).get("paper"), (int, float))}
    for claim in PAPER_ON_SCALE:  # the Papers view's figure draws the paper's number beside specviz's
        assert claim in on_scale, claim


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("papers")
    proc = subprocess.run(
        [sys.executable, "-m", "specviz", "papers", "--quick", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return out


@pytest.mark.slow
def test_quick_report_reads_back(quick):
    report = read(quick / "papers.json")
    assert report["budget"] == "quick" and report["command"] == f"python -m specviz papers --quick --out {quick}"
    assert_complete(report)
    text = (quick / "papers.md").read_text(encoding="utf-8")
    assert text == markdown(report, report["command"])
    assert all(f"## {p}" in text for p in PAPERS)


def test_shipped_report_is_the_full_one_and_complete():
    report = read(ROOT / "assets" / "papers" / "papers.json")
    assert report["budget"] == "full"
    assert set(report["pairs"]) == {"bundled-stdlib-pair", "smollm2-135m-offline"}
    assert_complete(report)
    shipped = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    assert shipped == markdown(report, report["command"])  # docs/papers.md is the report as made
    assert report["command"] == "python -m specviz papers --out docs --json assets/papers/papers.json"


BOTH_PAIRS = {  # the rows issue 38 asks for "on both pairs": (paper, words of the claim)
    "Table 1 bounds": (sequoia.PAPER, "past every bound of Table 1"),
    "tree-size scaling": (sequoia.PAPER, "as trees grow"),
    "Table 8 at T = 1": (mcsd.PAPER, "k = 4 against k = 1 at T = 1"),
    "Table 8 at T = 0": (mcsd.PAPER, "k = 4 against k = 1 at T = 0"),
    "Table 4 replacement": (mcsd.PAPER, "without replacement"),
    "DSBD quality": (dsbd.PAPER, "quality"),
    "DSBD speed t = 0.7": (dsbd.PAPER, "faster than beam sampling (t = 0.7)"),
    "DSBD speed t = 0.9": (dsbd.PAPER, "faster than beam sampling (t = 0.9)"),
}


def test_shipped_report_runs_the_both_pairs_rows_on_both_pairs():
    report = read(ROOT / "assets" / "papers" / "papers.json")
    assert not report.get("left_out")  # nothing skipped on the default pair
    for name, (paper, words) in BOTH_PAIRS.items():
        rows = {r["pair"]: r for r in report["rows"] if r["paper"] == paper and words in r["claim"]}
        assert set(rows) == {"bundled-stdlib-pair", "smollm2-135m-offline"}, name
        for pair, r in rows.items():
            assert r["spread"] is not None and r["spread"] > 0, (name, pair)  # a spread, not one run


def test_check_names_what_is_wrong():
    good = Claim("P", "a claim", "Table 1", "1.5x", "GPU", "CPU", 1.2, 0.1, "s.e.", "1.2x", "smaller", "holds")
    assert check({"rows": [good.to_dict()]}) == []
    assert check({"rows": []}) == ["no rows"]
    bad = {**good.to_dict(), "value": math.nan, "paper_value": " ", "verdict": "reproduced", "spread": math.inf}
    problems = " ".join(check({"rows": [bad]}))
    assert "not a finite number" in problems and "no paper_value" in problems and "verdict" in problems
    assert "spread" in problems
    with pytest.raises(ValueError, match="verdict"):
        Claim("P", "c", "s", "v", "ps", "s", 1.0, None, "k", "m", "d", "reproduced")


def test_refuses_an_output_path_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    proc = subprocess.run(
        [sys.executable, "-m", "specviz", "papers", "--quick", "--out", str(f)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error:") and "--out" in proc.stderr
