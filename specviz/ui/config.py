"""App settings from the environment: one place for the public-hosting switch and its limits.

Public mode (``AppConfig.public``) restricts pairs to the presets (by default only the ones that need no
network, i.e. the bundled pair: a visitor must not be able to make a small host download and load a 7B
model; ``SPECVIZ_PRESETS=name,name`` chooses others), caps ``max_new_tokens``, the prompt length, the
number of side-by-side runs, the upload size and the JSON a replay may decompress. Every limit can be
overridden by its own variable. It is on with ``SPECVIZ_PUBLIC=1`` and whenever the app can be reached
from other machines: a server name that is not loopback (``GRADIO_SERVER_NAME``, ``python app.py
--host``; the Docker image binds 0.0.0.0), a Gradio share link (``GRADIO_SHARE``) or a Hugging Face
Space (``SPACE_ID``). Only ``SPECVIZ_UNSAFE_NO_PUBLIC_LIMITS=1`` turns it off there, with a warning in
the log (docs/hosting.md). ``trust_remote_code`` is never reachable from the app, in any mode.
"""

from __future__ import annotations

import ipaddress
import logging
import os
from dataclasses import dataclass
from typing import Mapping, MutableMapping

from specviz.defaults import MAX_NEW_TOKENS

log = logging.getLogger(__name__)
TRUE = {"1", "true", "yes", "on"}
LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
UNSAFE_VAR = "SPECVIZ_UNSAFE_NO_PUBLIC_LIMITS"  # the one way to drop public mode on a network-facing app
UNSAFE_FLAG = "--unsafe-no-public-limits"  # its python app.py option


def is_loopback(host: str | None) -> bool:
    """Whether a server name only accepts connections from this machine (unset: Gradio's 127.0.0.1)."""
    name = (host or "").strip().strip("[]").lower()
    if not name:
        return True
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False  # any other host name may resolve to a public interface


def exposure(env: Mapping[str, str]) -> str | None:
    """Why the app would be reachable from other machines under ``env`` (a phrase), or None."""
    if env.get("SPACE_ID", "").strip():
        return f"it runs on a Hugging Face Space ({env['SPACE_ID'].strip()})"
    host = env.get("GRADIO_SERVER_NAME", "")
    if not is_loopback(host):
        return f"it listens on {host.strip()!r}, not only on loopback"
    if env.get("GRADIO_SHARE", "").strip().lower() in TRUE:
        return "GRADIO_SHARE makes a public share link"
    return None


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"Environment variable {name} must be an integer, got {raw!r}.") from exc


def _opt_int(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    """An optional limit: unset keeps ``default``, 0 (or less) turns it off."""
    if not env.get(name, "").strip():
        return default
    value = _int(env, name, 0)
    return value if value > 0 else None


def _opt_mb(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    """An optional limit in bytes, given in MB: unset keeps ``default``, 0 (or less) turns it off."""
    mb = _opt_int(env, name, None if default is None else max(1, default // (1024 * 1024)))
    return None if mb is None else mb * 1024 * 1024


@dataclass(frozen=True)
class AppConfig:
    """What the app allows. Build with ``AppConfig.from_env()``; tests pass their own."""

    public: bool = False
    max_new_tokens_cap: int = 1024  # the slider's maximum and the server-side clamp
    default_max_new_tokens: int = MAX_NEW_TOKENS  # specviz.defaults' (decode's and the command line's)
    max_prompt_chars: int = 20_000
    max_upload_bytes: int = 64 * 1024 * 1024  # one uploaded trace file, as sent (a .json.gz counts compressed)
    max_replay_json_bytes: int = 256 * 1024 * 1024  # JSON one replay reads, all its files together, decompressed
    max_columns: int = 6  # algorithms run side by side at once
    concurrency: int = 2  # decoding runs in flight at once (all visitors)
    queue_max_size: int | None = 64  # waiting requests before new ones are turned away
    max_pairs: int = 2  # loaded pairs kept in memory
    max_step_delay_s: float = 1.0  # the "pace" slider's maximum
    default_pace_s: float = 0.3  # a live run's minimum time per step, so its steps can be watched
    measure_repeats: int = 3  # timed runs per algorithm in Measure (after a warm-up)
    max_measure_columns: int = 6  # algorithms one Measure times
    max_run_cost: int | None = None  # token positions one algorithm's run may cost (ui.budget); None: no cap
    run_deadline_s: int | None = None  # wall seconds a run or a Measure may take; None: no deadline
    max_wait_s: int | None = None  # seconds a run may spend pacing and waiting for the page, in all
    page_wait_s: float = 3.0  # a live update's report from the page counts lost after this (FrameGate)
    max_runs_per_minute: int | None = None  # runs and Measures one visitor (page) may start in a minute
    max_uploads_per_minute: int | None = None  # upload requests one client address may make in a minute
    max_upload_bytes_per_minute: int | None = None  # bytes one client address may upload in a minute
    session_ttl_s: int | None = None  # a visitor's state is dropped this long after its last change
    session_capacity: int = 10_000  # visitors' states kept at once (Gradio's state_session_capacity)
    max_export_bytes: int = 1024 * 1024 * 1024  # exported traces kept on disk, all visitors (oldest go first)
    max_temp_bytes: int = 4096 * 1024 * 1024  # Gradio's private file directory (uploads, served copies)
    device: str = "auto"
    dtype: str = "auto"
    torch_threads: int = 0  # 0 = the CPU cores shared out between concurrent runs
    default_target: str | None = None  # overrides the first preset
    default_draft: str | None = None
    presets: tuple[str, ...] | None = None  # preset names offered; None = all (public: offline ones)
    exposed: str | None = None  # why the server is reachable from other machines (from_env)

    @property
    def allow_custom_pairs(self) -> bool:
        return not self.public

    @property
    def allow_remote_code(self) -> bool:
        """Never: ``trust_remote_code`` is for the CLI and the Python API only."""
        return False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "AppConfig":
        """The settings ``env`` (default ``os.environ``) asks for. Public mode is on with
        ``SPECVIZ_PUBLIC=1`` and whenever ``exposure(env)`` finds the app reachable from other machines,
        unless ``SPECVIZ_UNSAFE_NO_PUBLIC_LIMITS=1`` (logged as a warning); ``SPECVIZ_PUBLIC=0`` turns it
        off on loopback only."""
        env = os.environ if env is None else env
        public = public_mode(env)
        base = cls.public_defaults() if public else cls()
        return cls(
            public=public,
            exposed=exposure(env),
            max_new_tokens_cap=_int(env, "SPECVIZ_MAX_NEW_TOKENS", base.max_new_tokens_cap),
            default_max_new_tokens=min(
                base.default_max_new_tokens, _int(env, "SPECVIZ_MAX_NEW_TOKENS", base.max_new_tokens_cap)
            ),
            max_prompt_chars=_int(env, "SPECVIZ_MAX_PROMPT_CHARS", base.max_prompt_chars),
            max_upload_bytes=_int(env, "SPECVIZ_MAX_UPLOAD_MB", base.max_upload_bytes // (1024 * 1024)) * 1024 * 1024,
            max_replay_json_bytes=max(
                1, _int(env, "SPECVIZ_MAX_REPLAY_JSON_MB", base.max_replay_json_bytes // (1024 * 1024))
            )
            * 1024
            * 1024,
            max_columns=max(1, _int(env, "SPECVIZ_MAX_COLUMNS", base.max_columns)),
            concurrency=max(1, _int(env, "SPECVIZ_CONCURRENCY", base.concurrency)),
            queue_max_size=_int(env, "SPECVIZ_QUEUE_SIZE", base.queue_max_size or 0) or None,
            max_pairs=max(1, _int(env, "SPECVIZ_MAX_PAIRS", base.max_pairs)),
            max_step_delay_s=base.max_step_delay_s,
            measure_repeats=max(1, _int(env, "SPECVIZ_MEASURE_REPEATS", base.measure_repeats)),
            max_measure_columns=max(1, _int(env, "SPECVIZ_MAX_MEASURE_COLUMNS", base.max_measure_columns)),
            max_run_cost=_opt_int(env, "SPECVIZ_MAX_RUN_COST", base.max_run_cost),
            run_deadline_s=_opt_int(env, "SPECVIZ_RUN_DEADLINE_S", base.run_deadline_s),
            max_wait_s=_opt_int(env, "SPECVIZ_MAX_WAIT_S", base.max_wait_s),
            page_wait_s=float(max(0, _int(env, "SPECVIZ_PAGE_WAIT_S", int(base.page_wait_s)))),
            max_runs_per_minute=_opt_int(env, "SPECVIZ_MAX_RUNS_PER_MIN", base.max_runs_per_minute),
            max_uploads_per_minute=_opt_int(env, "SPECVIZ_MAX_UPLOADS_PER_MIN", base.max_uploads_per_minute),
            max_upload_bytes_per_minute=_opt_mb(env, "SPECVIZ_MAX_UPLOAD_MB_PER_MIN", base.max_upload_bytes_per_minute),
            session_ttl_s=_opt_int(env, "SPECVIZ_SESSION_TTL_S", base.session_ttl_s),
            session_capacity=max(1, _int(env, "SPECVIZ_SESSION_CAPACITY", base.session_capacity)),
            max_export_bytes=_int(env, "SPECVIZ_MAX_EXPORT_MB", base.max_export_bytes // (1024 * 1024)) * 1024 * 1024,
            max_temp_bytes=_int(env, "SPECVIZ_MAX_TEMP_MB", base.max_temp_bytes // (1024 * 1024)) * 1024 * 1024,
            device=env.get("SPECVIZ_DEVICE", "auto") or "auto",
            dtype=env.get("SPECVIZ_DTYPE", "auto") or "auto",
            torch_threads=max(0, _int(env, "SPECVIZ_TORCH_THREADS", 0)),
            default_target=env.get("SPECVIZ_TARGET") or None,
            default_draft=env.get("SPECVIZ_DRAFT") or None,
            presets=tuple(n.strip() for n in env["SPECVIZ_PRESETS"].split(",") if n.strip())
            if env.get("SPECVIZ_PRESETS", "").strip()
            else None,
        )

    @classmethod
    def public_defaults(cls) -> "AppConfig":
        """Public mode's limits (docs/hosting.md lists them; each variable above overrides its own)."""
        return cls(
            public=True,
            max_new_tokens_cap=128,
            default_max_new_tokens=MAX_NEW_TOKENS,
            max_prompt_chars=2_000,
            max_upload_bytes=12 * 1024 * 1024,
            max_replay_json_bytes=48 * 1024 * 1024,
            max_columns=4,
            concurrency=2,
            queue_max_size=32,
            max_pairs=1,
            max_step_delay_s=0.5,
            measure_repeats=2,
            max_measure_columns=3,
            max_run_cost=16_384,
            run_deadline_s=120,
            max_wait_s=10,
            max_runs_per_minute=10,
            max_uploads_per_minute=10,
            max_upload_bytes_per_minute=32 * 1024 * 1024,
            session_ttl_s=1800,
            session_capacity=64,
            max_export_bytes=256 * 1024 * 1024,
            max_temp_bytes=512 * 1024 * 1024,
        )


def public_mode(env: Mapping[str, str]) -> bool:
    """Whether ``env`` asks for public mode (see ``AppConfig.from_env``); logs the unsafe opt-out."""
    flag = env.get("SPECVIZ_PUBLIC", "").strip().lower()
    if flag in TRUE:
        return True
    reason = exposure(env)
    if reason is None:
        return False
    if env.get(UNSAFE_VAR, "").strip().lower() in TRUE:
        log.warning(
            "public mode is OFF although %s (%s=1): every visitor can load any model directory or hub "
            "repository this server can reach, under the private limits, not the public ones. "
            "See docs/hosting.md.",
            reason,
            UNSAFE_VAR,
        )
        return False
    if flag:
        log.warning(
            "SPECVIZ_PUBLIC=%s is ignored: %s, so public mode stays on (%s=1 turns it off; see docs/hosting.md).",
            flag,
            reason,
            UNSAFE_VAR,
        )
    return True


def public_notice(config: AppConfig) -> str:
    """The sentence saying public mode is on, why and its main limits ("" when it is off): the log says it
    at start and the page's footer shows it (docs/hosting.md lists every limit)."""
    if not config.public:
        return ""
    why = f" because {config.exposed}" if config.exposed else ""
    limits = [
        f"at most {config.max_new_tokens_cap} new tokens",
        f"prompts of {config.max_prompt_chars:,} characters",
        f"{config.max_columns} columns",
        f"uploads of {config.max_upload_bytes // 2**20} MB",
    ]
    if config.max_runs_per_minute is not None:
        limits.append(f"{config.max_runs_per_minute} runs a minute per page")
    if config.run_deadline_s is not None:
        limits.append(f"{config.run_deadline_s} s a run")
    pairs = "the presets SPECVIZ_PRESETS names only" if config.presets else "preset pairs that need no download only"
    return f"Public mode is on{why}: {pairs}, {', '.join(limits)} (docs/hosting.md)."


def check_exposure(
    config: AppConfig, server_name: str | None = None, share: bool = False, env: Mapping[str, str] | None = None
) -> None:
    """Refuse to serve an app built without public mode on an address other machines can reach.

    ``AppConfig.from_env`` already turns public mode on for such an environment; this catches an app
    built in Python with its own ``AppConfig`` and launched with ``server_name``/``share`` (or
    ``GRADIO_SERVER_NAME``/``GRADIO_SHARE``). ``SPECVIZ_UNSAFE_NO_PUBLIC_LIMITS=1`` lets it through,
    with a warning."""
    env = dict(os.environ if env is None else env)
    if server_name:
        env["GRADIO_SERVER_NAME"] = server_name
    if share:
        env["GRADIO_SHARE"] = "1"
    reason = exposure(env)
    if reason is None or config.public or config.exposed is not None:
        return  # loopback, public, or the operator's opt-out was read (and logged) by from_env
    if env.get(UNSAFE_VAR, "").strip().lower() in TRUE:
        log.warning("public mode is OFF although %s (%s=1). See docs/hosting.md.", reason, UNSAFE_VAR)
        return
    from specviz.errors import SpecvizError

    raise SpecvizError(
        f"Refusing to serve without public mode: {reason}. Build the app with "
        f"AppConfig.from_env() or AppConfig.public_defaults(), or serve on 127.0.0.1 "
        f"(docs/hosting.md)."
    )


def private_temp_dir(env: MutableMapping[str, str] | None = None) -> str:
    """Gradio's file directory for this process: ``GRADIO_TEMP_DIR`` if the operator set it, else a new
    private one (mode 0700, removed at exit), so uploads and served files are not shared with other
    Gradio apps through ``/tmp/gradio``. Sets ``GRADIO_TEMP_DIR``; Gradio reads it as each component
    is made, so call this before building the page."""
    import atexit
    import shutil
    import tempfile

    env = os.environ if env is None else env
    if env.get("GRADIO_TEMP_DIR"):
        return env["GRADIO_TEMP_DIR"]
    path = tempfile.mkdtemp(prefix="specviz-gradio-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    env["GRADIO_TEMP_DIR"] = path
    return path


def configure_torch_threads(config: AppConfig) -> int:
    """Set torch's CPU threads for the app and return the number.

    Runs share the process's CPU cores: with ``concurrency`` runs in flight, each gets
    ``cores // concurrency`` threads (at least 1). Oversubscribing a small machine makes every
    forward call many times slower (measured: 13x on a busy 2-core host for a tiny model), so the
    default errs on the low side; ``SPECVIZ_TORCH_THREADS`` overrides it. GPU runs are unaffected.
    """
    import torch

    from specviz.bench.timing import default_threads  # the one thread setting (issue 34)

    n = config.torch_threads or default_threads(config.concurrency)
    if n != torch.get_num_threads():
        torch.set_num_threads(n)
    return n
