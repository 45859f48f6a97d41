"""Which pairs the app offers and the pairs it has loaded.

``preset_choices()`` reads the presets (``specviz.presets``, the bundled offline pair first) and
falls back to the bundled pair alone if the presets cannot be read. ``PairRegistry`` keeps a few
loaded pairs shared by every visitor (read-only: each run has its own caches), keyed by an opaque
key (``"pair:NAME"`` for a preset, ``"custom:target|draft"`` for a custom pair: the page never sees a
server path); a failed load raises and leaves the registry as it was, so a session keeps its
previous pair. The app never loads remote code (``trust_remote_code`` is for the CLI and the Python
API only), and a loaded pair carries display names (``safe_text.display_name``), which the page and
every exported trace show instead of the server's absolute paths.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specviz.errors import ModelLoadError, SpecvizError
from specviz.models.loading import ModelPair, load_pair
from specviz.ui.safe_text import display_name, md_text

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class PairChoice:
    name: str
    target: str
    draft: str | None
    note: str = ""
    preset: Any = field(default=None, compare=False, repr=False)  # the specviz.presets.Preset, if any

    @property
    def preset_name(self) -> str:
        return str(getattr(self.preset, "name", self.name))

    @property
    def needs_network(self) -> bool:
        return bool(getattr(self.preset, "requires_network", False))

    def check(self) -> None:
        """Raise a clear ``ModelLoadError`` before loading if the preset cannot load here (offline...)."""
        if self.preset is None:
            return
        try:
            from specviz.presets import check_available
        except ImportError:
            return
        check_available(self.preset)

    @property
    def key(self) -> str:
        """The dropdown's value for this choice: its name, never its paths."""
        return f"pair:{self.name}"


BUNDLED = PairChoice(
    "bundled offline pair",
    "assets/target",
    "assets/draft",
    "trained by the project on Python's standard library; runs on CPU",
)


def pair_key(target: str, draft: str | None) -> str:
    """The key of a custom pair (as the visitor typed it)."""
    return f"custom:{target}|{draft or ''}"


def resolve_model_path(name: str) -> str:
    """A relative path that exists under the project root becomes absolute (so the app runs from any
    directory); hub ids and absolute paths are returned unchanged."""
    if not name:
        return name
    p = Path(name).expanduser()
    if not p.is_absolute() and not p.exists() and (ROOT / p).exists():
        return str(ROOT / p)
    return name


def preset_choices() -> list[PairChoice]:
    """The presets, bundled pair first; never empty."""
    out: list[PairChoice] = []
    try:
        from specviz.presets import load_presets  # owned by the training work; may not exist yet

        for p in load_presets():
            try:  # a packaged target whose package is missing: its hub id, or the error at load time
                target = p.target_ref()
            except SpecvizError:
                target = p.target
            label = p.label() if callable(getattr(p, "label", None)) else str(getattr(p, "name", target))
            bits = [getattr(p, k, "") for k in ("description", "memory")]
            if getattr(p, "gated", False):
                bits.append("gated on the hub: needs an accepted licence and a token")
            note = " · ".join(str(b) for b in bits if b)
            out.append(PairChoice(label, str(target), getattr(p, "draft", None) or None, note, preset=p))
    except Exception as exc:  # noqa: BLE001 - a broken presets file must not take the app down
        log.warning("presets unavailable (%s); offering the bundled pair only", exc)
    if not out:
        out = [BUNDLED]
    return out


def describe_pair(pair: ModelPair) -> str:
    """One markdown line: names, device, dtype, sizes, vocabulary."""
    d = pair.describe()

    def size(n: Any) -> str:
        if not isinstance(n, int):
            return "?"
        return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"

    draft = f" ← draft **{_short(d['draft'])}** ({size(d.get('draft_params'))})" if d.get("draft") else " (no draft)"
    tok = "" if pair.tokenizer is not None else " · no tokenizer: type token ids"
    return (
        f"**{_short(d['target'])}** ({size(d.get('target_params'))}){draft} · `{d['device']}` · `{d['dtype']}` · "
        f"vocab {d['shared_vocab_size']}{tok}"
    )


def _short(name: str | None) -> str:
    """A model name as literal Markdown, never an absolute path."""
    return md_text(display_name(name)) if name else "?"


def name_pair(pair: ModelPair, target: str, draft: str | None) -> ModelPair:
    """Give a loaded pair the names the page and its traces show (``display_name``), not the paths
    it was loaded from."""
    pair.target_name = display_name(target) or "target"
    pair.draft_name = display_name(draft) if draft else None
    if pair.heads is not None and isinstance(pair.heads.source, str):
        pair.heads = replace(pair.heads, source=display_name(pair.heads.source))
    return pair


class PairRegistry:
    """Loaded pairs shared by all sessions, least recently used evicted beyond ``max_pairs``."""

    def __init__(self, max_pairs: int = 2, device: str = "auto", dtype: str = "auto"):
        self.max_pairs = max_pairs
        self.device = device
        self.dtype = dtype
        self._pairs: OrderedDict[str, ModelPair] = OrderedDict()
        self._sources: OrderedDict[str, tuple[str, str | None]] = OrderedDict()  # key -> (target, draft)
        self._lock = threading.Lock()
        self._load_lock = threading.Lock()

    def get(self, key: str | None) -> ModelPair | None:
        if key is None:
            return None
        with self._lock:
            pair = self._pairs.get(key)
            if pair is not None:
                self._pairs.move_to_end(key)
            return pair

    def put(self, key: str, pair: ModelPair) -> str:
        with self._lock:
            self._pairs[key] = pair
            self._pairs.move_to_end(key)
            while len(self._pairs) > self.max_pairs:
                self._pairs.popitem(last=False)
        return key

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._pairs)

    def load(self, target: str, draft: str | None, key: str | None = None) -> str:
        """Load (or reuse) a pair under ``key`` (default ``pair_key(target, draft)``) and return the key.
        Never runs a model's own code (no ``trust_remote_code``). Raises ``specviz.SpecvizError``
        subclasses."""
        key = key or pair_key(target, draft)
        if self.get(key) is not None:
            return key
        with self._load_lock:  # one load at a time: two 7B loads at once would not fit
            if self.get(key) is not None:
                return key
            pair = load_pair(
                resolve_model_path(target),
                resolve_model_path(draft) if draft else None,
                device=self.device,
                dtype=self.dtype,
                trust_remote_code=False,
                early_exit=preset_early_exit(target, draft),
                feature=preset_head(target, draft, "feature"),
            )
            self._remember(key, target, draft)
            return self.put(key, name_pair(pair, target, draft))

    def reload(self, key: str) -> str:
        """Load again a pair loaded before under ``key`` (evicted by another visitor's load)."""
        with self._lock:
            source = self._sources.get(key)
        if source is None:
            raise ModelLoadError("That pair is not loaded any more: choose it again and press Load pair.")
        return self.load(*source, key=key)

    def _remember(self, key: str, target: str, draft: str | None, limit: int = 256) -> None:
        with self._lock:
            self._sources[key] = (target, draft)
            self._sources.move_to_end(key)
            while len(self._sources) > limit:
                self._sources.popitem(last=False)


def preset_head(target: str, draft: str | None, head: str) -> str | None:
    """The ``head`` (``early_exit``, ``feature``) of the preset with this target and draft, or None."""
    from specviz.presets import load_presets

    try:
        return next(
            (getattr(p, head) for p in load_presets() if p.draft == draft and target in (p.target, p.hub_target)), None
        )
    except SpecvizError:
        return None


def preset_early_exit(target: str, draft: str | None) -> str | None:
    """The EESD early-exit head of the preset with this target and draft (``eesd`` needs it), or None."""
    return preset_head(target, draft, "early_exit")
