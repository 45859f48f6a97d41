"""The model pair a visitor runs on: the presets this app offers, the default pair loaded at start, a
pair loaded on request (a preset or, where allowed, any hub id or local directory) and a session's pair
brought back when another visitor's load evicted it. The pairs themselves live in the shared
``ui.pairs.PairRegistry``; a session holds only its pair's key.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import gradio as gr

import specviz
from specviz.errors import SpecvizError
from specviz.models.loading import ModelPair
from specviz.ui.config import AppConfig
from specviz.ui.pairs import BUNDLED, PairChoice, PairRegistry, describe_pair, pair_key, resolve_model_path
from specviz.ui.runner import Session, given_session, visitor_session
from specviz.ui.safe_text import display_name, hide_paths, md_text

log = logging.getLogger(__name__)
CUSTOM = "__custom__"  # the dropdown's value for "custom: any hub ids or local paths"


def offered_presets(presets: list[PairChoice], config: AppConfig) -> list[PairChoice]:
    """The presets this app offers, first the default: those ``SPECVIZ_PRESETS`` names, else (public) those
    that need no download, else all; a pair named by ``SPECVIZ_TARGET`` goes first."""
    if config.presets is not None:
        chosen = [p for p in presets if p.preset_name in config.presets]
        presets = chosen or presets[:1]
    elif config.public:
        presets = [p for p in presets if not p.needs_network] or presets[:1]
    if config.default_target:
        default = PairChoice("from SPECVIZ_TARGET", config.default_target, config.default_draft)
        presets = [default, *[p for p in presets if (p.target, p.draft) != (default.target, default.draft)]]
    return presets


def first_sentence(message: str) -> str:
    """The first sentence of an error message, without its full stop: the page's one sentence about the
    default pair quotes it (a package's install advice, its second sentence, is for the log, not for a
    Space's visitors). A full stop inside a name (``SmolLM2-135M-Instruct.Q4_1``) ends nothing."""
    return re.split(r"(?<=[.!?])\s+(?=[A-Z`'\"(])", message.strip(), maxsplit=1)[0].rstrip(".")


def code_pair(presets: list[PairChoice]) -> PairChoice | None:
    """The offered preset that is the code pair (the bundled ``assets/`` pair), if one is."""

    def where(name: str) -> Path:
        return Path(resolve_model_path(name)).resolve()

    bundled = where(BUNDLED.target)
    return next((p for p in presets if where(p.target) == bundled), None)


def custom_load_failure(target: str, draft: str | None) -> str:
    """One message for every custom pair that did not load, whatever the reason (a missing
    directory, one without a model, a model that needs its own code), so a visitor cannot probe
    the server's file system through it."""
    names = f"{target!r}" + (f" and {draft!r}" if draft else "")
    return (
        f"{names} could not be loaded as a hub model this server can download or a model directory "
        "it can read (config.json, weights and tokenizer files, as save_pretrained writes them). Models "
        "that need their own code (trust_remote_code) load only from the command line or the Python API."
    )


def load_failed(message: str, previous: str) -> str:
    return f"⚠️ **Could not load that pair.** {md_text(hide_paths(message))}\n\nStill using: {previous}"


class PairLoader:
    """The presets offered, the default pair and every visitor's load, on the shared registry."""

    def __init__(self, config: AppConfig, registry: PairRegistry, presets: list[PairChoice]):
        self.config = config
        self.registry = registry
        self.presets = offered_presets(presets, config)
        self.default_key: str | None = None  # the default pair's key, once loaded (``preload``)
        self.startup_message = ""  # why the default pair could not be loaded, if it could not

    def preload(self) -> None:
        """Load the first preset (the default pair) so the first run is immediate; if it cannot load, the
        code pair (``code_pair``) instead, and ``startup_message`` says why in one sentence."""
        first = self.presets[0]
        try:
            self.default_key = self._load_at_start(first)
            return
        except SpecvizError as exc:
            reason = first_sentence(hide_paths(str(exc)))  # the log keeps the whole message (its advice)
            log.warning("The default pair could not be loaded: %s", exc)
        fallback = code_pair(self.presets[1:])
        if fallback is not None:
            try:
                self.default_key = self._load_at_start(fallback)
                self.startup_message = (
                    f"The default pair ({first.name}) could not be loaded ({reason}), so the "
                    f"page opened on the code pair ({fallback.name}) instead."
                )
                log.warning("%s", self.startup_message)
                return
            except SpecvizError as exc:
                log.warning("The code pair could not be loaded either: %s", exc)
        self.startup_message = f"The default pair could not be loaded: {reason}."

    def _load_at_start(self, choice: PairChoice) -> str:
        """``choice`` loaded into the registry (its key); raises a ``SpecvizError`` if it cannot load."""
        choice.check()
        log.info("loading the default pair: %s", choice.name)
        key = self.registry.load(choice.target, choice.draft, key=choice.key)
        log.info("loaded")
        return key

    def session(self, state: Any) -> Session:
        """The visitor's session, or a fresh one on the default pair (``runner.visitor_session``)."""
        return visitor_session(state, self.default_key)

    def choices(self) -> list[tuple[str, str]]:
        """The dropdown's (label, value) pairs: the presets, and custom pairs where allowed."""
        choices = [(p.name, p.key) for p in self.presets]
        if self.config.allow_custom_pairs:
            choices.append(("custom: any hub ids or local paths…", CUSTOM))
        return choices

    def pair_markdown(self, key: str | None) -> str:
        pair = self.registry.get(key)
        if pair is None:
            if self.startup_message:
                return md_text(self.startup_message)
            return "No pair loaded yet: choose one above and press **Load pair**."
        if key == self.default_key and self.startup_message:  # the code pair, opened instead of the default
            return describe_pair(pair) + "\n\n" + md_text(self.startup_message)
        return describe_pair(pair)

    def resolve_choice(self, choice: str, target: str, draft: str) -> tuple[str, str | None, str]:
        """(target, draft, registry key) of a dropdown choice and the custom boxes."""
        if choice == CUSTOM:
            if not self.config.allow_custom_pairs:
                raise specviz.ModelLoadError("This public app serves the preset pairs only.")
            if not isinstance(target, str) or not isinstance(draft, (str, type(None))):
                raise specviz.ModelLoadError("The target and the draft must be text: hub ids or local directories.")
            target, draft = target.strip(), (draft or "").strip() or None
            if not target:
                raise specviz.ModelLoadError("Type a target model: a hub id (owner/name) or a local directory.")
            return target, draft, pair_key(target, draft)
        for p in self.presets:
            if p.key == choice:
                p.check()
                return p.target, p.draft, p.key
        raise specviz.ModelLoadError("Unknown preset: choose one from the list.")

    def load(
        self,
        choice: str,
        target: str,
        draft: str,
        session: Session,
        progress: gr.Progress = gr.Progress(track_tqdm=True),
    ) -> tuple[str, Session]:
        """Load a pair for this session. On failure the message is shown and the previous pair kept.
        Never runs a model's own code: ``trust_remote_code`` is not reachable from the page or the API."""
        session = self.session(session)
        previous = self.pair_markdown(session.pair_key)
        try:
            t, d, key = self.resolve_choice(choice, target, draft)
        except SpecvizError as exc:
            return load_failed(str(exc), previous), session
        try:
            progress(0.05, desc=f"Loading {display_name(t)}" + (f" and {display_name(d)}" if d else "") + "…")
            key = self.registry.load(t, d, key=key)
        except specviz.ModelLoadError as exc:
            if choice != CUSTOM:
                return load_failed(str(exc), previous), session
            log.info("custom pair %r / %r not loaded: %s", t, d, exc)
            return load_failed(custom_load_failure(t, d), previous), session
        except SpecvizError as exc:
            return load_failed(str(exc), previous), session
        except Exception:  # noqa: BLE001 - e.g. an out-of-memory error from a huge model
            log.exception("loading a pair failed")
            return load_failed("Loading failed unexpectedly; the server's log has the details.", previous), session
        session.pair_key = key
        return "✅ " + self.pair_markdown(key), session

    def loaded(self, state: Any) -> ModelPair | None:
        """The session's pair if it is loaded now (None for state that is not a session)."""
        session = given_session(state)
        return self.registry.get(session.pair_key) if session is not None else None

    def session_pair(self, session: Session) -> tuple[ModelPair | None, str | None]:
        """(the session's pair, None) or (None, the sentence saying why there is none); a pair evicted by
        another visitor's load is loaded again."""
        pair = self.registry.get(session.pair_key)
        if pair is None and session.pair_key:
            try:  # evicted by another visitor's load: bring it back
                self.registry.reload(session.pair_key)
                pair = self.registry.get(session.pair_key)
            except SpecvizError as exc:
                return None, f"The pair could not be reloaded: {hide_paths(str(exc))}"
        if pair is None:
            return None, "No pair loaded: choose one and press Load pair."
        return pair, None

    def example_pair(self, chat: bool, session: Session) -> str | None:
        """The preset an example needs loaded, or None when the session's pair serves it (issue 35 point 5):
        a chat question needs a pair with a chat template (else the first preset, the default chat pair,
        unless that is the code pair), a code example the code pair (``code_pair``; None where it is
        not offered: the example's label names it)."""
        pair = self.loaded(session)
        code = code_pair(self.presets)
        if chat:
            if pair is not None and pair.has_chat_template:
                return None
            first = self.presets[0]
            return None if code is not None and first.key == code.key else first.key
        return None if code is None or session.pair_key == code.key else code.key

    def for_example(self, chat: bool, state: Any, progress: Any = None) -> tuple[Any, Any, Session]:
        """Load the pair an example belongs to, if the session's pair does not serve it: (the preset
        dropdown's new value or a skip, the pair's line or a skip, the session)."""
        session = self.session(state)
        key = self.example_pair(chat, session)
        if key is None:
            return gr.skip(), gr.skip(), session
        line, session = self.load(key, "", "", session, progress if progress is not None else gr.Progress())
        return (key if session.pair_key == key else gr.skip()), line, session

    def chat_default(self, session: Session) -> Any:
        """The chat toggle after a pair is loaded: on exactly when the pair has a chat template."""
        pair = self.loaded(session)
        return gr.update(value=pair is not None and pair.has_chat_template)

    def toggle_custom(self, choice: str) -> list[Any]:
        """The custom pair's boxes shown for the custom choice; a preset's note otherwise."""
        custom = choice == CUSTOM
        note = next((p.note for p in self.presets if p.key == choice), "")
        return [gr.Group(visible=custom), gr.Markdown(value=note, visible=bool(note) and not custom)]
