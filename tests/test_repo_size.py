"""The repository stays one a Hugging Face Space accepts in plain git (issue 36, point 1).

The Hub refuses a pushed file over 10 MB that is not stored through its large-file mechanism, so no
tracked file may be over ``MAX_FILE_BYTES`` (9.5 MB): model weights are written in shards by
transformers' own ``save_pretrained(max_shard_size=...)`` and a single tensor larger than that is cut
by rows (``specviz.models.shards``; the default pair's draft embedding, 25.2 MB).

The issue's goal for the whole tracked tree is 48 MB. It is not reached: ``MAX_TOTAL_BYTES`` is what
was reached without losing anything (110.0 MB on 2026-11-28) plus a small margin, so that the tree
cannot grow unnoticed. The tree then, by directory (bytes of tracked files):

    assets/smollm2/draft       35.0 MB  bfloat16 draft, 15.7M parameters (its 49,152 x 256 embedding
                                        alone is 25.2 MB) + the only copy of SmolLM2's tokenizer (3.5 MB)
    assets/target              23.5 MB  the code pair's target, float32 (trained in float32), 3 shards
    assets/smollm2/feature     19.7 MB  the feature head, bfloat16, 3 shards
    assets/smollm2/early_exit  13.7 MB  early-exit head + Cali-TS calibration, bfloat16
    assets/early_exit          10.0 MB  the code pair's early-exit head + calibration, float32
    assets/draft                5.1 MB  the code pair's draft, float32 (reads the target's tokenizer)
    everything else             3.0 MB  code, tests, docs, reports

What 48 MB would take: the default pair's draft and feature head alone are 51.2 MB of weights in
bfloat16, the precision they were trained in, so the goal needs one of them to leave the git tree
(fetched at start from a Hub model repository, or stored through the large-file mechanism), a smaller
retrained draft, or weights below bfloat16 (a loss). The code pair in bfloat16 would save 19 MB but changes its
measured numbers; it was trained in float32 and is kept so. See docs/hosting.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_FILE_BYTES = 9_500_000  # the Hub's plain-git limit is 10 MB; a margin under it
GOAL_TOTAL_BYTES = 48_000_000  # issue 36's goal, not reached (see the docstring)
MAX_TOTAL_BYTES = 112_000_000  # reached: 110.0 MB, plus 2 MB


def tracked_sizes() -> dict[str, int]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked tree is what a push sends")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    paths = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
    return {p: os.path.getsize(ROOT / p) for p in paths if os.path.isfile(ROOT / p)}


def test_no_tracked_file_is_over_the_limit():
    sizes = tracked_sizes()
    assert sizes, "git ls-files listed nothing"
    over = {p: s for p, s in sizes.items() if s > MAX_FILE_BYTES}
    assert not over, (
        f"tracked files over {MAX_FILE_BYTES / 1e6} MB, which a Space refuses in plain git: {over}; "
        "shard them (specviz.models.shards.save_model_dir)"
    )


def test_the_tracked_tree_is_under_its_limit():
    total = sum(tracked_sizes().values())
    assert total <= MAX_TOTAL_BYTES, (
        f"the tracked tree is {total / 1e6:.1f} MB, over the {MAX_TOTAL_BYTES / 1e6:.0f} MB this test allows "
        f"(issue 36's goal is {GOAL_TOTAL_BYTES / 1e6:.0f} MB): find what grew with `git ls-files -z | xargs -0 du -b "
        "| sort -n | tail`"
    )


def test_the_limits_catch_what_they_guard(tmp_path, monkeypatch):
    """The checks fail when a file or the tree is over: a tracked stand-in list with one large file."""
    sizes = {"a.safetensors": MAX_FILE_BYTES + 1, "b.txt": 10}
    monkeypatch.setattr(f"{__name__}.tracked_sizes", lambda: sizes)
    with pytest.raises(AssertionError, match="over 9.5 MB"):
        test_no_tracked_file_is_over_the_limit()
    sizes = {f"{i}.safetensors": 9_000_000 for i in range(13)}
    with pytest.raises(AssertionError, match="over the 112 MB"):
        test_the_tracked_tree_is_under_its_limit()
