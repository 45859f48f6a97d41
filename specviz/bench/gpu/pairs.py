"""The models the GPU check runs: random Llama pairs built from configs (the same weights on every
machine), the code pair from ``assets/`` or a random pair of its shapes, and where the default pair's
converted checkpoint is."""

from __future__ import annotations

import os
from typing import Any

from specviz.bench.gpu.plan import REPO_ROOT
from specviz.models.random_llama import llama_shape, noisy_copy, random_llama, random_model_pair

# the code pair's shapes (assets/target, assets/draft), for a copy of the repository without assets/
CODE_TARGET = llama_shape(
    hidden=256, intermediate=688, layers=6, heads=4, kv_heads=4, head_dim=64, vocab=4096, positions=1024, tied=True
)
CODE_DRAFT = llama_shape(
    hidden=160, intermediate=432, layers=2, heads=2, kv_heads=2, head_dim=80, vocab=4096, positions=1024, tied=True
)
# a random pair whose draft is a noisy copy of its target: drafts are accepted, so accepted runs,
# rejections and bonus tokens all happen (``tests/tiny.py``'s close pairs, larger)
NOISY = llama_shape(
    hidden=128, intermediate=256, layers=4, heads=4, kv_heads=2, head_dim=32, vocab=1024, positions=2048, init_range=0.2
)
NOISE = 0.05  # the draft's noise, relative to each weight's spread: tau about 2-3 at these sizes
NOISY_QUICK = dict(NOISY, hidden_size=64, intermediate_size=128, num_hidden_layers=2, head_dim=16, vocab_size=256)


def _dtype(name: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def random_pair(
    name: str,
    target_cfg: dict[str, Any],
    draft_cfg: dict[str, Any] | None,
    device: str,
    dtype: str,
    noise: float = NOISE,
):
    """A ``ModelPair`` of random models from configs: the draft from ``draft_cfg``, or (None) a noisy
    copy of the target. Built on the CPU in float32, then moved."""
    target = random_llama(target_cfg, 0)
    draft = random_llama(draft_cfg, 1) if draft_cfg else noisy_copy(target, noise)
    target, draft = (m.to(device=device, dtype=_dtype(dtype)) for m in (target, draft))
    return random_model_pair(name, target, draft, None if draft_cfg else f"noisy copy of the random {name} target")


def have_assets() -> bool:
    return (REPO_ROOT / "assets" / "target" / "config.json").is_file() and (
        REPO_ROOT / "assets" / "draft" / "config.json"
    ).is_file()


def code_pair(device: str, dtype: str, greedy: bool):
    """The code pair from ``assets/`` (real, with its prompts), or without it a random pair of its
    shapes (for ``greedy``: its draft a noisy copy of the target, so drafts are accepted)."""
    if have_assets():
        from specviz.models.loading import load_pair

        pair = load_pair(preset="bundled-stdlib-pair", device=device, dtype=dtype)
        return pair, "the code pair (assets/, bundled-stdlib-pair)", True
    cfg = dict(CODE_TARGET, initializer_range=NOISY["initializer_range"]) if greedy else CODE_TARGET
    pair = random_pair("code-pair-shaped", cfg, None if greedy else CODE_DRAFT, device, dtype)
    return (
        pair,
        (
            "no assets/: a random pair of the code pair's shapes"
            + (" (draft: a noisy copy of the target)" if greedy else "")
        ),
        False,
    )


_DEFAULT_SOURCE: list[tuple[str | None, str | None, str]] = []


def default_pair_source() -> tuple[str | None, str | None, str]:
    """Where the default pair's converted target is (``None`` when absent), its draft directory
    (``None`` when absent) and a sentence saying what was found. Only looked up, never converted: a
    complete conversion in the specviz cache (``models.packaged``), whether or not the package is here."""
    if _DEFAULT_SOURCE:
        return _DEFAULT_SOURCE[0]
    from specviz.models.packaged import PackagedFile, cache_problem, cache_root, is_packaged
    from specviz.presets import default_preset

    preset = default_preset()
    draft = preset.draft if preset.draft and os.path.isdir(preset.draft) else None
    if not is_packaged(preset.target):
        found = preset.target if os.path.isdir(preset.target) else None
        _DEFAULT_SOURCE.append((found, draft, f"preset {preset.name}: target {preset.target}"))
        return _DEFAULT_SOURCE[0]
    packaged = PackagedFile.parse(preset.target)
    root = cache_root() / "converted"
    found = (
        sorted(
            (p for p in root.glob(f"{packaged.name}-*") if p.is_dir() and cache_problem(p) is None),
            key=lambda p: p.stat().st_mtime,
        )
        if root.is_dir()
        else []
    )
    if found:
        result = (
            str(found[-1]),
            draft,
            f"preset {preset.name}: {packaged.name} converted in the specviz cache ({found[-1]})",
        )
    else:
        result = (
            None,
            draft,
            f"no converted {packaged.name} in the specviz cache ({root}): a run of specviz with "
            f"the {packaged.distribution!r} package installed converts it",
        )
    _DEFAULT_SOURCE.append(result)
    return result
