"""App settings from the environment: one place for the public-hosting switch and its limits.

``SPECVIZ_PUBLIC=1`` (set it on a public Space) restricts pairs to the presets (by default only the
ones that need no network, i.e. the bundled pair: a visitor must not be able to make a small host
download and load a 7B model; ``SPECVIZ_PRESETS=name,name`` chooses others), caps
``max_new_tokens``, the prompt length, the number of side-by-side runs and the upload size, and keeps
``trust_remote_code`` off. Every limit can be overridden by its own variable. On a Hugging Face
Space (``SPACE_ID`` set) public mode is the default; ``SPECVIZ_PUBLIC=0`` turns it off.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

TRUE = {"1", "true", "yes", "on"}


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"Environment variable {name} must be an integer, got {raw!r}.") from exc


@dataclass(frozen=True)
class AppConfig:
    """What the app allows. Build with ``AppConfig.from_env()``; tests pass their own."""

    public: bool = False
    max_new_tokens_cap: int = 1024        # the slider's maximum and the server-side clamp
    default_max_new_tokens: int = 64
    max_prompt_chars: int = 20_000
    max_upload_bytes: int = 64 * 1024 * 1024
    max_columns: int = 6                  # algorithms run side by side at once
    concurrency: int = 2                  # decoding runs in flight at once (all visitors)
    queue_max_size: int | None = 64       # waiting requests before new ones are turned away
    max_pairs: int = 2                    # loaded pairs kept in memory
    max_step_delay_s: float = 1.0         # the "pace" slider's maximum
    default_pace_s: float = 0.3           # a live run's minimum time per step, so its steps can be watched
    measure_repeats: int = 3              # timed runs per algorithm in Measure (after a warm-up)
    device: str = "auto"
    dtype: str = "auto"
    torch_threads: int = 0                # 0 = the CPU cores shared out between concurrent runs
    default_target: str | None = None     # overrides the first preset
    default_draft: str | None = None
    presets: tuple[str, ...] | None = None  # preset names offered; None = all (public: offline ones)

    @property
    def allow_custom_pairs(self) -> bool:
        return not self.public

    @property
    def allow_remote_code(self) -> bool:
        return not self.public

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "AppConfig":
        env = os.environ if env is None else env
        flag = env.get("SPECVIZ_PUBLIC", "").strip().lower()
        # on a Hugging Face Space (SPACE_ID is set there) the limits are on unless SPECVIZ_PUBLIC=0
        public = flag in TRUE or (not flag and bool(env.get("SPACE_ID")))
        base = cls.public_defaults() if public else cls()
        return cls(
            public=public,
            max_new_tokens_cap=_int(env, "SPECVIZ_MAX_NEW_TOKENS", base.max_new_tokens_cap),
            default_max_new_tokens=min(base.default_max_new_tokens,
                                       _int(env, "SPECVIZ_MAX_NEW_TOKENS", base.max_new_tokens_cap)),
            max_prompt_chars=_int(env, "SPECVIZ_MAX_PROMPT_CHARS", base.max_prompt_chars),
            max_upload_bytes=_int(env, "SPECVIZ_MAX_UPLOAD_MB", base.max_upload_bytes // (1024 * 1024)) * 1024 * 1024,
            max_columns=max(1, _int(env, "SPECVIZ_MAX_COLUMNS", base.max_columns)),
            concurrency=max(1, _int(env, "SPECVIZ_CONCURRENCY", base.concurrency)),
            queue_max_size=_int(env, "SPECVIZ_QUEUE_SIZE", base.queue_max_size or 0) or None,
            max_pairs=max(1, _int(env, "SPECVIZ_MAX_PAIRS", base.max_pairs)),
            max_step_delay_s=base.max_step_delay_s,
            device=env.get("SPECVIZ_DEVICE", "auto") or "auto",
            dtype=env.get("SPECVIZ_DTYPE", "auto") or "auto",
            torch_threads=max(0, _int(env, "SPECVIZ_TORCH_THREADS", 0)),
            default_target=env.get("SPECVIZ_TARGET") or None,
            default_draft=env.get("SPECVIZ_DRAFT") or None,
            presets=tuple(n.strip() for n in env["SPECVIZ_PRESETS"].split(",") if n.strip())
            if env.get("SPECVIZ_PRESETS", "").strip() else None,
        )

    @classmethod
    def public_defaults(cls) -> "AppConfig":
        return cls(public=True, max_new_tokens_cap=128, default_max_new_tokens=64, max_prompt_chars=2_000,
                   max_upload_bytes=5 * 1024 * 1024, max_columns=4, concurrency=2, queue_max_size=32,
                   max_pairs=1, max_step_delay_s=0.5)


def configure_torch_threads(config: AppConfig) -> int:
    """Set torch's CPU threads for the app and return the number.

    Runs share the process's CPU cores: with ``concurrency`` runs in flight, each gets
    ``cores // concurrency`` threads (at least 1). Oversubscribing a small machine makes every
    forward call many times slower (measured: 13x on a busy 2-core host for a tiny model), so the
    default errs on the low side; ``SPECVIZ_TORCH_THREADS`` overrides it. GPU runs are unaffected.
    """
    import torch

    n = config.torch_threads or max(1, (os.cpu_count() or 1) // max(1, config.concurrency))
    if n != torch.get_num_threads():
        torch.set_num_threads(n)
    return n
