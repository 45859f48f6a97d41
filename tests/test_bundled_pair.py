"""The bundled pair in assets/ loads with the network disabled and decodes losslessly."""
from __future__ import annotations

from pathlib import Path

import pytest

import specviz

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pair():
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("TRANSFORMERS_OFFLINE", "1")
    mp.chdir(ROOT)
    try:
        yield specviz.load_pair("assets/target", "assets/draft", device="cpu")
    finally:
        mp.undo()


def test_bundled_pair_greedy_sd_equals_ar(pair):
    sd = specviz.decode(pair, "sd", prompt="def ", max_new_tokens=16, temperature=0, gamma=4)
    ar = specviz.decode(pair, "ar", prompt="def ", max_new_tokens=16, temperature=0)
    assert len(sd.output_ids) == 16
    assert sd.output_ids == ar.output_ids
    assert sd.metrics["tau"] >= 1.0


def test_bundled_pair_draft_is_accepted_often(pair):
    """The shipped draft is distilled: greedy sd at gamma 4 accepts well above chance on code."""
    sd = specviz.decode(pair, "sd", prompt="import os\n\n\ndef ", max_new_tokens=48, temperature=0, gamma=4)
    assert sd.metrics["tau"] >= 2.0, sd.metrics


def test_bundled_early_exit_head_loads(pair):
    from specviz.models.early_exit import load_early_exit, resolve_base

    assert resolve_base(ROOT / "assets" / "early_exit") == (ROOT / "assets" / "target").resolve()
    head = load_early_exit(ROOT / "assets" / "early_exit", pair.target)
    assert head.exit_layer == 1
