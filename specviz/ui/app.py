"""The Gradio explorer: layout and callbacks (no maths here; everything is drawn from traces).

``Explorer`` holds the settings, the shared pair registry and every callback as a method, so tests
can call the callbacks in-process; ``Explorer.build()`` returns the ``gr.Blocks``; ``launch()``
builds, queues and serves it.
"""
from __future__ import annotations

import html
import logging
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import gradio as gr
from starlette.middleware import Middleware

import specviz
from specviz.core.sampling import SamplingConfig
from specviz.errors import SpecvizError
from specviz.ui import render, stepcache
from specviz.ui.columns import check_columns, param_value  # noqa: F401  (param_value: tests import it here)
from specviz.ui.config import AppConfig, check_exposure, configure_torch_threads, private_temp_dir
from specviz.ui.budget import cost_refusal
from specviz.ui.gpu import gpu
from specviz.ui.ratelimit import RunLimiter, visitor_key
from specviz.ui.uploadlimit import UploadLimiter, UploadLimitMiddleware
from specviz.ui.pairs import PairChoice, PairRegistry, describe_pair, pair_key, preset_choices
from specviz.ui.safe_text import display_name, hide_paths, md_text
from specviz.ui.skip_blocks import SkipBlocks
from specviz.models.chat import encode_prompt
from specviz.models.loading import ModelPair
from specviz.ui.editor import ColumnEditor, param_elem_id  # noqa: F401  (param_elem_id: tests import it here)
from specviz.ui.layout import Page, Slot, View
from specviz.ui.numberbox import NumberBox, SeedBox, SliderBox
from specviz.ui.measure import measure, measurements_html
from specviz.ui.runner import (RunControl, RunRegistry, Session, Throttle, advance, columns_from_traces, export_copy,
                               export_finished, load_trace_file, parse_prompt, start_columns, start_quota_sweeper,
                               stop_columns)
from specviz.ui.style import APP_CSS, HEADER_HTML, PAGE_JS, STEP_JS, theme
from specviz.ui.validate import Checked, check_inputs, check_pace, max_new_limit
from specviz.viz import legend_html

log = logging.getLogger(__name__)
CUSTOM = "__custom__"
STREAM_INTERVAL_S = 0.25   # unpaced live column updates at most this often (and see Throttle)
COMPARE_INTERVAL_S = 2.0   # live comparison table and figures at most this often
TEXT_INTERVAL_S = 0.75     # live texts at most this often (each is a large HTML swap in the browser)
MEASURE_TICK_S = 1.0       # Measure hands control back to Gradio at least this often (client gone? stop)
PREFERRED_DEFAULTS = ("ar", "sd", "specinfer", "mcsd", "sequoia", "eesd", "dsbd")
# Code for the bundled code pair (chat off), where its draft mostly succeeds. Greedy `sd`, gamma 4,
# 64 tokens, tau: main() 4.27, the loop body 4.27, setUp 4.00, the argparse call 4.00, fibonacci 3.20
# (the classic; in its body the 6M draft guesses less). Every output equal to greedy `ar`.
CODE_PROMPTS = (
    "def fibonacci(n):",
    "import os\nimport sys\n\n\ndef main():",
    "class TestCase(unittest.TestCase):\n\n    def setUp(self):",
    "def main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(",
    "    for i in range(len(items)):",
)
# Questions for a chat pair (shown with chat on), where the default pair's draft succeeds and fails.
# Greedy `sd`, gamma 4, 48 tokens, tau: the capital and the code 2.67, the arithmetic 2.22, the poem
# 1.85, the days of the week 1.66 (it lists them in another form), the sky 1.33 (the facts of an
# explanation are the target's).
CHAT_PROMPTS = (
    "Why is the sky blue?",
    "What is the capital of Australia?",
    "List the days of the week.",
    "Write a Python function that reverses a string.",
    "What is 17 times 23?",
    "Write a short poem about the sea.",
)


def example_prompts(chat: bool) -> list[str]:
    """The example prompts: questions for a chat pair, code for a code pair."""
    return list(CHAT_PROMPTS if chat else CODE_PROMPTS)


# the sampling sliders' ranges (a trace made outside them, through the API, may be replayed)
SLIDER_RANGES = {"temperature": (0.0, 2.0), "top_p": (0.01, 1.0)}


def input_markdown(checked: Checked | None) -> str:
    """The line under the sampling inputs: the problems, or the prompt's size and the token limit."""
    if checked is None:
        return ""
    if checked.problems:
        return "\n".join(f"⚠️ **{md_text(p)}**" for p in checked.problems)  # they quote the visitor's input
    if checked.prompt_tokens is None:
        return ""
    return (f"prompt: {checked.prompt_tokens} tokens · max new tokens can be up to {checked.max_new_limit} "
            "for this prompt and pair")


class Explorer:
    """The app's state shared by all visitors and its callbacks."""

    def __init__(self, config: AppConfig | None = None, registry: PairRegistry | None = None, *,
                 presets: list[PairChoice] | None = None, preload: bool = True,
                 clock: Callable[[], float] = time.monotonic,
                 pause: Callable[[RunControl, float], bool] = RunControl.pause,
                 wait_page: Callable[[RunControl, int, float], None] = RunControl.wait_shown):
        """``clock`` (throttling, pacing, deadlines), ``pause`` (waits up to the given seconds for the
        run's Stop, returns whether it came) and ``wait_page`` (waits up to the given seconds for the
        page to report a step drawn) are injectable so tests drive a live run's time explicitly."""
        self.config = config or AppConfig.from_env()
        self.clock = clock
        self.pause = pause
        self.wait_page = wait_page
        self.runs = RunRegistry()
        self.run_limiter = RunLimiter(self.config.max_runs_per_minute, clock)
        self.page: Page | None = None
        configure_torch_threads(self.config)
        self.registry = registry or PairRegistry(self.config.max_pairs, self.config.device, self.config.dtype)
        self.presets = presets if presets is not None else preset_choices()
        if self.config.presets is not None:
            chosen = [p for p in self.presets if p.preset_name in self.config.presets]
            self.presets = chosen or self.presets[:1]
        elif self.config.public:
            self.presets = [p for p in self.presets if not p.needs_network] or self.presets[:1]
        if self.config.default_target:
            default = PairChoice("from SPECVIZ_TARGET", self.config.default_target, self.config.default_draft)
            self.presets = [default, *[p for p in self.presets
                                       if (p.target, p.draft) != (default.target, default.draft)]]
        self.algorithms = dict(specviz.ALGORITHMS)
        self.n_slots = self.config.max_columns
        self.editor: ColumnEditor | None = None
        self.default_key: str | None = None
        self.startup_message = ""
        if preload:
            self.preload()

    # ---- pairs -------------------------------------------------------------------------------------------
    def preload(self) -> None:
        """Load the first preset (the bundled pair) so the first run is immediate."""
        first = self.presets[0]
        try:
            first.check()
            log.info("loading the default pair: %s", first.name)
            self.default_key = self.registry.load(first.target, first.draft, key=first.key)
            log.info("loaded")
        except SpecvizError as exc:
            log.warning("The default pair could not be loaded: %s", exc)
            self.startup_message = f"The default pair could not be loaded: {hide_paths(str(exc))}"

    def pair_markdown(self, key: str | None) -> str:
        pair = self.registry.get(key)
        if pair is None:
            if self.startup_message:
                return md_text(self.startup_message)
            return "No pair loaded yet: choose one above and press **Load pair**."
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

    def load(self, choice: str, target: str, draft: str, session: Session,
             progress: gr.Progress = gr.Progress(track_tqdm=True)) -> tuple[str, Session]:
        """Load a pair for this session. On failure the message is shown and the previous pair kept.
        Never runs a model's own code: ``trust_remote_code`` is not reachable from the page or the API."""
        session = session if isinstance(session, Session) else Session(pair_key=self.default_key)
        previous = self.pair_markdown(session.pair_key)
        try:
            t, d, key = self.resolve_choice(choice, target, draft)
        except SpecvizError as exc:
            return self._load_failed(str(exc), previous), session
        try:
            progress(0.05, desc=f"Loading {display_name(t)}" + (f" and {display_name(d)}" if d else "") + "…")
            key = self.registry.load(t, d, key=key)
        except specviz.ModelLoadError as exc:
            if choice != CUSTOM:
                return self._load_failed(str(exc), previous), session
            log.info("custom pair %r / %r not loaded: %s", t, d, exc)
            return self._load_failed(self.custom_load_failure(t, d), previous), session
        except SpecvizError as exc:
            return self._load_failed(str(exc), previous), session
        except Exception:  # noqa: BLE001 - e.g. an out-of-memory error from a huge model
            log.exception("loading a pair failed")
            return self._load_failed("Loading failed unexpectedly; the server's log has the details.", previous), session
        session.pair_key = key
        return "✅ " + self.pair_markdown(key), session

    @staticmethod
    def custom_load_failure(target: str, draft: str | None) -> str:
        """One message for every custom pair that did not load, whatever the reason (a missing
        directory, one without a model, a model that needs its own code), so a visitor cannot probe
        the server's file system through it."""
        names = f"{target!r}" + (f" and {draft!r}" if draft else "")
        return (f"{names} could not be loaded as a hub model this server can download or a model directory "
                "it can read (config.json, weights and tokenizer files, as save_pretrained writes them). Models "
                "that need their own code (trust_remote_code) load only from the command line or the Python API.")

    @staticmethod
    def _load_failed(message: str, previous: str) -> str:
        return f"⚠️ **Could not load that pair.** {md_text(hide_paths(message))}\n\nStill using: {previous}"

    # ---- views (see ui.layout: {name: value}; a name left out stays as it is) ------------------------------
    def _slot_views(self, session: Session, step: int, *, full: bool, force: bool = False,
                    text: bool = True) -> View:
        """Per-column panels, sending only what changed on screen unless ``force``.

        Every Plotly redraw and every large HTML swap costs the browser tens of milliseconds, so a
        column's text is re-sent only when the text itself changes (new steps, finished, pinned);
        moving the selected step within it is done in the browser (``STEP_JS`` on the slider). Its
        step panels (tree, narrative, distribution, controller) are re-sent only when the step it shows
        changes. ``force`` re-sends everything: a run's last update carries every panel in full, so
        the page ends on the state the server has, whatever became of the updates before it.
        ``text=False`` leaves the texts as they are (a live run re-sends them less often than the trees).
        """
        out: View = {}
        baseline = render.greedy_baseline(session)
        for i in range(self.n_slots):
            if i >= len(session.columns):
                if full:
                    out["column", i] = gr.Column(visible=False)
                continue
            col = session.columns[i]
            diverge_at = render.divergence(col, baseline)
            window = stepcache.text_window(col, col.step_shown(step)) if col.n_steps else None
            state = (col.n_steps, col.done, col.error, id(col.trace), diverge_at, col.pin, window)
            step_key = (col.step_shown(step) if col.n_steps else None, col.selected, *state)
            text_changed = force or (text and col.shown.get("text") != state)
            step_changed = force or col.shown.get("step") != step_key
            v = render.slot_view(col, i, step, session.running, diverge_at, text=text_changed)
            out["header", i] = v.header
            if text_changed:
                out["tokens", i] = v.tokens if col.pin is None else f'<div class="sv-pinned">{v.tokens}</div>'
            if step_changed:
                out["tree", i] = v.tree
                out["narrative", i] = gr.Markdown(value=v.narrative or "", visible=bool(v.narrative))
                out["distribution", i] = gr.Plot(value=v.distribution, visible=v.distribution is not None)
                out["controller", i] = gr.Plot(value=v.controller, visible=v.controller is not None)
                out["lengths", i] = gr.Plot(value=v.lengths, visible=v.lengths is not None)
                out["beams", i] = gr.HTML(value=v.beams or "", visible=bool(v.beams))
                out["theory", i] = gr.Plot(value=v.theory, visible=v.theory is not None)
            if text_changed:
                col.shown["text"] = state
            col.shown["step"] = step_key
            if full:
                out["column", i] = gr.Column(visible=True)
                out["download", i] = gr.DownloadButton(value=v.download, visible=v.download is not None)
                out["download_csv", i] = gr.DownloadButton(value=v.download_csv, visible=v.download_csv is not None)
        return out

    def full_view(self, session: Session, note: str = "", compare: bool = True, force: bool = False,
                  text: bool = True) -> View:
        """Every output. ``compare=False`` leaves the comparison table and figures as they are (a live
        run refreshes them less often than the columns)."""
        step = session.view_step()
        view: View = {"session": session, "status": render.status_html(session, note),
                      "slider": self._slider(session), "step_label": render.step_label(session)}
        if compare:
            view.update(render.comparison(session, step))
        view.update(self._slot_views(session, step, full=True, force=force, text=text))
        return view

    def step_view(self, session: Session) -> View:
        """Outputs of a step change: slider, label and the columns. The step markers of the
        comparison figures and the highlighted step in the texts move in the browser (``STEP_JS``)."""
        return {"slider": self._slider(session), "step_label": render.step_label(session),
                **self._slot_views(session, session.view_step(), full=False)}

    @staticmethod
    def message_view(session: Session, note: str) -> View:
        """Only the status line changes (a refused request)."""
        return {"session": session,
                "status": render.status_html(Session(), f'<span class="sv-bad">⚠ {html.escape(note)}</span>')}

    @staticmethod
    def buttons(running: bool) -> View:
        """Run and Measure are disabled while a run or a measurement goes; Stop only then enabled."""
        return {"run_btn": gr.Button(interactive=not running), "measure_btn": gr.Button(interactive=not running),
                "stop_btn": gr.Button(interactive=running)}

    def _slider(self, session: Session) -> gr.Slider:
        n = session.n_steps
        return gr.Slider(minimum=1, maximum=max(n, 2), value=session.view_step() + 1, step=1, interactive=n > 1)

    # ---- checking a request --------------------------------------------------------------------------------
    def _pair(self, session: Session) -> tuple[ModelPair | None, str | None]:
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

    def check_inputs(self, pair: ModelPair | None, prompt: str, max_new_tokens: Any, top_k: Any, seed: Any,
                     chat: Any = False) -> Checked:
        """The sampling inputs checked against the app's cap and, with a pair, its context and the prompt
        (as the models will read it: in the chat template when ``chat``)."""
        prompt_tokens: int | None = None
        context = None
        if pair is not None and isinstance(prompt, str) and prompt.strip():
            try:
                prompt_tokens = len(encode_prompt(pair, parse_prompt(pair, prompt), chat is True)[0])
                context = pair.context_length
            except SpecvizError:
                pass
        return check_inputs(max_new_tokens, top_k, seed, cap=self.config.max_new_tokens_cap,
                            context_length=context, prompt_tokens=prompt_tokens)

    def input_message(self, session: Session, prompt: str, max_new_tokens: Any, top_k: Any, seed: Any,
                      chat: Any = False) -> View:
        """The message under the sampling inputs, updated as they are typed."""
        pair = self.registry.get(session.pair_key) if isinstance(session, Session) else None
        checked = self.check_inputs(pair, prompt, max_new_tokens, top_k, seed, chat)
        return {"input_msg": gr.Markdown(value=input_markdown(checked), visible=True)}

    def _request(self, session: Session, prompt: str, max_new_tokens: Any, top_k: Any, seed: Any,
                 columns: Any, chat: Any = False, temperature: Any = 0.0, top_p: Any = 1.0
                 ) -> tuple[ModelPair | None, Checked | None, list[tuple[str, dict[str, Any]]], str | None]:
        """(pair, checked inputs, columns as ``(algorithm, settings)``, refusal): a refusal is a sentence
        for the status line. ``columns`` is ``ui.columns``' value, checked here whoever sent it."""
        if not isinstance(chat, bool):
            return None, None, [], f"chat must be on or off (true or false), got {type(chat).__name__}."
        chosen, problem = check_columns(columns, self.algorithms, self.n_slots)
        if problem:
            return None, None, [], problem
        if not isinstance(prompt, str) or not prompt.strip():
            return None, None, chosen, "The prompt is empty: type some text or pick an example."
        if len(prompt) > self.config.max_prompt_chars:
            return None, None, chosen, (f"The prompt is {len(prompt)} characters; the limit here is "
                                        f"{self.config.max_prompt_chars}.")
        try:  # the sampling settings, as decode will check them (NaN, inf, text: a sentence, not torch's error)
            SamplingConfig(temperature, 0, top_p)
        except SpecvizError as exc:
            return None, None, chosen, str(exc)
        pair, problem = self._pair(session)
        if pair is None:
            return None, None, chosen, problem
        if chat and not pair.has_chat_template:
            return pair, None, chosen, "This pair has no chat template: turn chat off to run the prompt as it is."
        checked = self.check_inputs(pair, prompt, max_new_tokens, top_k, seed, chat)
        if not checked.ok:
            return pair, checked, chosen, " ".join(checked.problems)
        return pair, checked, chosen, None

    def over_budget(self, chosen: list[tuple[str, dict[str, Any]]], max_new_tokens: int,
                    measure: bool = False) -> str | None:
        """The sentence refusing a request over this app's cost cap (``AppConfig.max_run_cost``) or,
        for Measure, over ``max_measure_columns``; None if it fits."""
        if measure and len(chosen) > self.config.max_measure_columns:
            return (f"Measure times at most {self.config.max_measure_columns} columns here (each a warm-up and "
                    f"{self.config.measure_repeats} timed runs); you have {len(chosen)}.")
        for i, (algo, params) in enumerate(chosen, 1):
            refusal = cost_refusal(algo, params, max_new_tokens, self.config.max_run_cost)
            if refusal:  # which column, when an algorithm may fill several
                return refusal if len(chosen) == 1 else f"Column {i}: {refusal}"
        return None

    def deadline(self) -> Callable[[], bool]:
        """Whether this run's time (``AppConfig.run_deadline_s``, by ``clock``) is up; never without one."""
        limit = self.config.run_deadline_s
        if limit is None:
            return lambda: False
        end = self.clock() + limit
        return lambda: self.clock() >= end

    # ---- running ------------------------------------------------------------------------------------------
    def run(self, session: Session, prompt: str, max_new_tokens: float, temperature: float, top_p: float,
            top_k: float, seed: float, columns: list[Any], pace: float, chat: bool) -> Iterator[View]:
        """Run the columns side by side (``columns``: each an algorithm and its settings, ``ui.columns``),
        yielding the page as the steps come in. ``chat`` formats the prompt as a user turn in the pair's
        chat template.

        Paced (``pace`` seconds per step at least, for watching) or, unpaced, throttled to what the
        browser can draw. Stop sets this run's flag; the run notices between two steps and ends with
        its own update, marked "stopped". Its last update re-sends every panel in full."""
        session = session if isinstance(session, Session) else Session(pair_key=self.default_key)
        pair, checked, chosen, refusal = self._request(session, prompt, max_new_tokens, top_k, seed, columns, chat,
                                                         temperature, top_p)
        if refusal:
            yield {**self.message_view(session, refusal),
                   **({"input_msg": gr.Markdown(value=input_markdown(checked), visible=True)} if checked else {})}
            return
        pace, problem = check_pace(pace, self.config.max_step_delay_s)
        refusal = (problem or self.over_budget(chosen, checked.max_new_tokens)
                   or self.run_limiter.allow(visitor_key(session)))
        if refusal:
            yield self.message_view(session, refusal)
            return
        control = self.runs.begin(id(session))
        if control is None:
            yield self.message_view(session, "A run is already going in this page: press Stop first.")
            return
        expired = self.deadline()
        wait_left = [float("inf") if self.config.max_wait_s is None else float(self.config.max_wait_s)]

        def waited(wait: Callable[[float], Any], seconds: float) -> Any:
            """Wait (pace, page) at most ``seconds``, what is left of the run's waiting budget; it counts
            against that budget and, like everything, against the deadline (both by ``clock``)."""
            seconds = min(seconds, wait_left[0])
            if seconds <= 0:
                return control.stopped()
            t0 = self.clock()
            try:
                return wait(seconds)
            finally:
                wait_left[0] -= max(0.0, self.clock() - t0)

        def should_stop() -> bool:
            return control.stopped() or expired()

        session.run_id += 1
        run_id = session.run_id
        session.columns = start_columns(pair, prompt, chosen,
                                        max_new_tokens=checked.max_new_tokens, temperature=float(temperature),
                                        top_p=float(top_p), top_k=checked.top_k, seed=checked.seed, chat=chat)
        session.step, session.source, session.running, session.pace = None, "live", True, pace
        cols = session.columns
        throttle = Throttle(STREAM_INTERVAL_S, clock=self.clock)
        compare_throttle = Throttle(COMPARE_INTERVAL_S, ratio=0.0, clock=self.clock)
        text_throttle = Throttle(TEXT_INTERVAL_S, ratio=0.0, clock=self.clock)
        try:
            yield {**self.full_view(session, force=True), **self.buttons(True),
                   "input_msg": gr.Markdown(value=input_markdown(checked), visible=True)}
            throttle(force=True)
            last = self.clock()
            shown = session.n_steps
            while advance(cols, should_stop) and not should_stop():
                paced = pace > 0 and wait_left[0] > 0
                if paced:
                    if waited(lambda s: self.pause(control, s), pace - (self.clock() - last)):
                        break  # stopped while pausing
                    last = self.clock()
                elif not throttle():
                    continue
                if expired():
                    break
                t_out, budget = self.clock(), wait_left[0]
                t0 = time.perf_counter()
                out = self.full_view(session, compare=compare_throttle(), text=text_throttle())
                throttle.rendered(time.perf_counter() - t0)
                # a slow browser sets the pace, within the run's waiting budget
                waited(lambda s: self.wait_page(control, shown, s), self.config.page_wait_s)
                shown = session.n_steps
                yield out
                if paced:  # a paced run draws every step: that drawing (and sending) is pacing too
                    wait_left[0] = min(wait_left[0], budget - (self.clock() - t_out))
            timed_out = expired() and not control.stopped() and any(not c.done for c in cols)
            stopped = control.stopped() or timed_out
            if stopped:
                stop_columns(cols)
            else:
                for c in cols:
                    if c.trace is not None and c.trace.steps and not c.error:
                        c.pin = render.opening_step(c.trace)
            export_finished(cols, self.config.max_export_bytes)
            session.running = False
            note = (f'<span class="sv-bad">⚠ stopped: a run may take {self.config.run_deadline_s} s on this app '
                    "(ask for fewer tokens or algorithms)</span>") if timed_out else ""
            yield {**self.full_view(session, note, force=True), **self.buttons(False)}
        finally:
            self.runs.end(id(session), control)
            if session.run_id == run_id:
                session.running = False
                stop_columns(cols)

    def stop(self, session: Session) -> View:
        """Ask this page's run (or measurement) to stop. The run ends itself between two steps with an
        update showing what ran, marked "stopped"; this only flags it and greys the button."""
        control = self.runs.get(id(session)) if isinstance(session, Session) else None
        if control is None:
            return {}
        control.stop()
        return {"stop_btn": gr.Button(interactive=False)}

    def session_deleted(self, session: Any) -> None:
        """Gradio dropped a visitor's state (expired, over capacity, or the tab closed): stop its run,
        if one is going, and let its traces go."""
        if not isinstance(session, Session):
            return
        control = self.runs.get(id(session))
        if control is not None:
            control.stop()
        if not session.running:
            for c in session.columns:
                c.cache.clear()  # a long replay's theory figure (ui.stepcache), whoever still holds the column
            session.columns = []

    def page_shown(self, session: Session, report: str) -> None:
        """The page reports (``PAGE_JS``, ``"step:nonce"``) that it has drawn a live update. Anything
        else (not text, a sign, over 64 characters) is ignored. A report can only end a wait: what a
        run waits for the page is bounded by ``config.page_wait_s`` a step and ``max_wait_s`` in all."""
        control = self.runs.get(id(session)) if isinstance(session, Session) else None
        if control is None or not isinstance(report, str) or len(report) > 64:
            return
        head = report.split(":")[0].strip()
        if not (head.isascii() and head.isdigit()) or len(head) > 9:  # digits only: no sign, no "1_000", no unicode digits
            return
        control.report_shown(int(head))

    def measure(self, session: Session, prompt: str, max_new_tokens: float, temperature: float, top_p: float,
                top_k: float, seed: float, columns: list[Any], pace: float, chat: bool) -> Iterator[View]:
        """Time the columns (each an algorithm and its settings) one after another, unpaced, with a warm-up
        and repeats (medians): one row per column. ``pace`` is not used (Measure is never paced)."""
        session = session if isinstance(session, Session) else Session(pair_key=self.default_key)
        pair, checked, chosen, refusal = self._request(session, prompt, max_new_tokens, top_k, seed, columns, chat,
                                                         temperature, top_p)
        if refusal:
            yield self.message_view(session, refusal)
            return
        refusal = (self.over_budget(chosen, checked.max_new_tokens, measure=True)
                   or self.run_limiter.allow(visitor_key(session)))
        if refusal:
            yield self.message_view(session, refusal)
            return
        control = self.runs.begin(id(session))
        if control is None:
            yield self.message_view(session, "A run is already going in this page: press Stop first.")
            return
        expired = self.deadline()
        try:
            yield {"measurements": measurements_html([], "starting…"), **self.buttons(True)}
            rows, note = [], ""
            # it yields at least every MEASURE_TICK_S of decoding, so Gradio can end it when its client
            # has gone (a generator is only dropped at a yield) and Stop and the deadline act between steps
            for note, rows in measure(pair, parse_prompt(pair, prompt), chosen,
                                      repeats=self.config.measure_repeats,
                                      should_stop=lambda: control.stopped() or expired(),
                                      clock=self.clock, tick_s=MEASURE_TICK_S,
                                      max_new_tokens=checked.max_new_tokens, temperature=float(temperature),
                                      top_p=float(top_p), top_k=checked.top_k, seed=checked.seed, chat=chat):
                yield {"measurements": measurements_html(rows, note)}
            if expired() and not control.stopped() and note.startswith("stopped"):
                note += f": a Measure may take {self.config.run_deadline_s} s on this app"
            yield {"measurements": measurements_html(rows, note), **self.buttons(False)}
        except SpecvizError as exc:
            yield {"measurements": measurements_html([], f"Could not measure: {exc}"), **self.buttons(False)}
        finally:
            self.runs.end(id(session), control)

    # ---- scrubbing ----------------------------------------------------------------------------------------
    def _unpin(self, session: Session) -> None:
        """A scrub moves every column together again (after a run each opened on its own step)."""
        for c in session.columns:
            c.pin = None
            c.selected = None

    def scrub(self, session: Session, value: float) -> View:
        if not isinstance(session, Session) or not session.columns:
            return {}
        self._unpin(session)
        session.step = max(0, int(value) - 1)
        return self.step_view(session)

    def shift(self, session: Session, delta: int) -> View:
        if not isinstance(session, Session) or not session.columns:
            return {}
        self._unpin(session)
        session.step = max(0, min(session.view_step() + delta, session.n_steps - 1))
        return self.step_view(session)

    def prev(self, session: Session) -> View:
        return self.shift(session, -1)

    def next(self, session: Session) -> View:
        return self.shift(session, +1)

    def latest(self, session: Session) -> View:
        if not isinstance(session, Session) or not session.columns:
            return {}
        self._unpin(session)
        session.step = None
        return self.step_view(session)

    def play(self, session: Session, pace: float) -> Iterator[View]:
        """Step through the run from the selected step (or the start) to the end."""
        if not isinstance(session, Session) or not session.columns:
            return
        self._unpin(session)
        n = session.n_steps
        start = session.view_step()
        if start >= n - 1:
            start = 0
        pace, problem = check_pace(pace, self.config.max_step_delay_s)
        if problem:
            yield self.message_view(session, problem)
            return
        pace = min(max(pace, 0.15), 1.0)  # playback: at least the time to draw a step, at most a second
        for k in range(start, n):
            session.step = k
            yield self.step_view(session)
            time.sleep(pace)

    def select_node(self, session: Session, pick: str) -> View:
        """A click on a tree node (``"column:node:nonce"`` from ``NODE_CLICK_JS``) opens its distribution view."""
        if not isinstance(session, Session):
            return {}
        try:
            i, node = (int(x) for x in str(pick).split(":")[:2])
        except ValueError:
            return {}
        if not 0 <= i < len(session.columns) or session.columns[i].trace is None:
            return {}
        col = session.columns[i]
        col.selected = None if col.selected == node else node  # a second click closes it
        return self._slot_views(session, session.view_step(), full=False)

    # ---- replay -------------------------------------------------------------------------------------------
    def upload(self, files: Any, session: Session) -> View:
        """Replay uploaded trace files (no model needed); bad files get a message, good ones are shown."""
        session = session if isinstance(session, Session) else Session(pair_key=self.default_key)
        if not files:
            return self.message_view(session, "No file received.")
        if self.runs.get(id(session)) is not None:
            return self.message_view(session, "A run is going in this page: press Stop before replaying a trace.")
        given = files if isinstance(files, list) else [files]
        paths = [f if isinstance(f, str) else getattr(f, "name", None) for f in given]
        if not all(isinstance(p, str) and p for p in paths):
            return self.message_view(session, "Could not replay: expected uploaded trace files.")
        note = ""
        if len(paths) > self.n_slots:  # only the files shown are read at all
            note = f"showing the first {self.n_slots} of {len(paths)} files (the others were not read)"
            paths = paths[: self.n_slots]
        traces, sources, problems = [], [], []
        for path in paths:
            try:
                traces.append(load_trace_file(path, self.config.max_upload_bytes))
                sources.append(path)
            except SpecvizError as exc:
                problems.append(str(exc))
            except OSError as exc:
                problems.append(f"{Path(path).name}: could not be read ({exc}).")
        if not traces:
            return self.message_view(session, "Could not replay: " + " ".join(problems))
        if problems:
            note = (note + " · " if note else "") + "skipped: " + " ".join(html.escape(p) for p in problems)
        session.run_id += 1
        session.columns = columns_from_traces(traces)
        for c, source in zip(session.columns, sources):
            export_copy(c, source, quota=self.config.max_export_bytes)
        session.step, session.source, session.running, session.pace = 0, "replay", False, 0.0
        settings, lowered = self.replayed_settings(traces[0], self.registry.get(session.pair_key))
        if lowered:
            note = (note + " · " if note else "") + html.escape(lowered)
        view = self.full_view(session, note, force=True)
        view.update(settings)
        return view

    def replayed_columns(self, session: Any) -> list[dict[str, Any]] | None:
        """The column editor's value for a replay's columns (each trace's algorithm with the settings it
        declares, as it ran), so Run runs them again here; None when a column's algorithm is not
        registered here or a setting is not valid here (the editor is then left as it is)."""
        if not isinstance(session, Session) or session.source != "replay" or not session.columns:
            return None
        out = []
        for c in session.columns:
            spec = self.algorithms.get(c.algorithm)
            if spec is None:
                return None
            declared = {p.name for p in spec.params}
            try:
                params = spec.resolve({k: v for k, v in c.params.items() if k in declared})
            except SpecvizError:
                return None
            out.append({"algorithm": spec.name, "params": params})
        return out

    def replay(self, files: Any, session: Session) -> dict[Any, Any] | list[Any]:
        """``upload`` bound to the page, and the column editor set to the replayed columns
        (``replayed_columns``) where it can be, as the sampling settings are (``replayed_settings``)."""
        view = self.upload(files, session)
        bound = self.page.bind(view)
        cols = self.replayed_columns(view.get("session"))
        if cols is not None and isinstance(bound, dict) and self.editor is not None:
            bound.update(self.editor.view(cols, 0))
        return bound

    def replayed_settings(self, trace: Any, pair: ModelPair | None = None) -> tuple[View, str]:
        """The sidebar's sampling settings set to those the (first) replayed trace used, each within what
        its box allows here, and the sentence saying which one could not be (else ""): a trace made with
        more new tokens than this app or ``pair``'s context allows sets max new tokens to that limit (the
        box's own, as its caption says), a temperature past the slider's end leaves the slider as it is."""
        s = trace.sampling or {}
        made = len(trace.output_ids)
        limit = max_new_limit(pair.context_length if pair is not None else None, 0, self.config.max_new_tokens_cap)
        out: View = {"seed": str(trace.seed), "max_new": min(made, limit) or None}
        said = []
        if made > limit:
            said.append(f"the trace made {made} new tokens; max new tokens is set to {limit}, the most allowed here")
        for name in ("temperature", "top_p", "top_k"):
            value = s.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                lo, hi = SLIDER_RANGES.get(name, (0, math.inf))
                if not lo <= value <= hi:
                    said.append(f"the trace's {name.replace('_', '-')} {value:g} is outside its slider's "
                                f"{lo:g} to {hi:g}, so it is left as it was")
                    continue
                out[name] = value
        return {k: v for k, v in out.items() if v is not None}, "; ".join(said) + ("." if said else "")

    # ---- small UI reactions --------------------------------------------------------------------------------
    def chat_example(self, index: Any) -> list[Any]:
        """A click on a question of the chat examples: its prompt, with chat on."""
        return self.example(CHAT_PROMPTS, True, index)

    def code_example(self, index: Any) -> list[Any]:
        """A click on a code example: its prompt, with chat off."""
        return self.example(CODE_PROMPTS, False, index)

    @staticmethod
    def example(prompts: Sequence[str], chat: bool, index: Any) -> list[Any]:
        """(prompt, chat) of example ``index``; anything but the index of one (the page sends nothing
        else) changes nothing."""
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(prompts):
            return [gr.skip(), gr.skip()]
        return [prompts[index], chat]

    def chat_default(self, session: Session) -> Any:
        """The chat toggle after a pair is loaded: on exactly when the pair has a chat template."""
        pair = self.registry.get(session.pair_key) if isinstance(session, Session) else None
        return gr.update(value=pair is not None and pair.has_chat_template)

    def toggle_custom(self, choice: str) -> list[Any]:
        custom = choice == CUSTOM
        note = next((p.note for p in self.presets if p.key == choice), "")
        return [gr.Group(visible=custom), gr.Markdown(value=note, visible=bool(note) and not custom)]

    def default_algorithms(self) -> list[str]:
        chosen = [a for a in PREFERRED_DEFAULTS if a in self.algorithms][:4]
        return chosen or list(self.algorithms)[:2]

    # ---- layout --------------------------------------------------------------------------------------------
    def build(self) -> gr.Blocks:
        private_temp_dir()  # before any component: each reads GRADIO_TEMP_DIR when it is made
        cfg = self.config
        default_algos = self.default_algorithms()
        choices = [(p.name, p.key) for p in self.presets]
        if cfg.allow_custom_pairs:
            choices.append(("custom: any hub ids or local paths…", CUSTOM))
        default_choice = self.default_key or self.presets[0].key
        default_pair = self.registry.get(self.default_key)
        chat_on = default_pair is not None and default_pair.has_chat_template
        limit = max_new_limit(default_pair.context_length if default_pair is not None else None, 0,
                              cfg.max_new_tokens_cap)

        # delete_cache: Gradio's copies of served files (trace downloads) older than an hour go hourly
        # SkipBlocks: a step's unchanged outputs (gr.skip()) cost the server nothing (skip_blocks.py)
        with SkipBlocks(title="specviz · speculative decoding explorer", fill_width=True,
                        delete_cache=(3600, 3600)) as demo:
            # a visitor's state expires (public: session_ttl_s after its last change) and Gradio keeps at
            # most session_capacity of them (launch_kwargs); a dropped state stops its run, if any
            session = gr.State(Session(pair_key=self.default_key), time_to_live=cfg.session_ttl_s,
                               delete_callback=self.session_deleted)
            gr.HTML(HEADER_HTML, elem_id="sv-header")
            with gr.Sidebar(width=370, open=True, label="Settings", elem_id="sv-sidebar"):
                gr.Markdown("### Model pair")
                pair_choice = gr.Dropdown(choices=choices, value=default_choice, label="preset", show_label=False,
                                          elem_id="sv-pair-choice")
                pair_note = gr.Markdown(self.presets[0].note if self.presets else "", elem_classes=["sv-note"])
                with gr.Group(visible=False) as custom_group:
                    custom_target = gr.Textbox(label="target (hub id or local directory)",
                                               placeholder="e.g. HuggingFaceTB/SmolLM2-1.7B", elem_id="sv-target")
                    custom_draft = gr.Textbox(label="draft (same tokenizer)",
                                              placeholder="e.g. HuggingFaceTB/SmolLM2-135M", elem_id="sv-draft")
                load_btn = gr.Button("Load pair", size="sm", elem_id="sv-load")
                pair_md = gr.Markdown(self.pair_markdown(self.default_key), elem_id="sv-pair-status",
                                      elem_classes=["sv-note"])

                gr.Markdown("### Columns")
                # a column is an algorithm with its settings; one algorithm may fill several (ui.editor)
                editor = self.editor = ColumnEditor.declare(self.algorithms, default_algos, self.n_slots)
                with gr.Accordion("What each algorithm does", open=False):
                    gr.Markdown(self._algorithm_guide())
                gr.Markdown("### Sampling")
                # NumberBox: every value, text and NaN included, reaches check_inputs, whose message names
                # the box and says what is allowed (Gradio's own checks show a bare "Error")
                with gr.Row():
                    max_new = NumberBox(min(cfg.default_max_new_tokens, limit), label="max new tokens",
                                        precision=0, info=f"at most {limit} minus the prompt's tokens",
                                        elem_id="sv-max-new")
                    # text, not a number: a JavaScript number rounds whole numbers above 2^53 (validate.check_seed)
                    seed = SeedBox("0", label="seed", info="0 to 2^63 − 1", max_lines=1, max_length=64,
                                   elem_id="sv-seed")
                with gr.Row():
                    temperature = SliderBox(*SLIDER_RANGES["temperature"], value=0.0, step=0.05, label="temperature",
                                            info="0 = greedy", elem_id="sv-temperature")
                    top_p = SliderBox(*SLIDER_RANGES["top_p"], value=1.0, step=0.01, label="top-p",
                                      elem_id="sv-top-p")
                top_k = NumberBox(0, label="top-k", info="0 = off", precision=0, elem_id="sv-top-k")
                input_msg = gr.Markdown("", elem_id="sv-input-msg", elem_classes=["sv-note"])
                pace = SliderBox(0, cfg.max_step_delay_s, value=min(cfg.default_pace_s, cfg.max_step_delay_s),
                                 step=0.05, label="pace (seconds per step, live)",
                                 info="a live run takes at least this long per step so you can watch it; "
                                      "0 = as fast as it goes. Measure is never paced."
                                      + (f" Here a run is paced for at most {cfg.max_wait_s} s in all, then goes "
                                         "at full speed." if cfg.max_wait_s is not None else ""),
                                 elem_id="sv-pace")
                gr.Markdown("### Replay a saved trace")
                upload = gr.File(label=f"trace JSON (up to {cfg.max_upload_bytes // (1024 * 1024)} MB each)",
                                 file_count="multiple", file_types=[".json"], type="filepath", elem_id="sv-upload",
                                 height=110)

            # ---- main area
            with gr.Row(equal_height=True, elem_id="sv-prompt-row"):
                prompt = gr.Textbox(label="prompt", lines=3, max_lines=8, scale=6, elem_id="sv-prompt",
                                    value=example_prompts(chat_on)[0], max_length=cfg.max_prompt_chars)
                with gr.Column(scale=1, min_width=130):
                    run_btn = gr.Button("Run ▶", variant="primary", elem_id="sv-run")
                    stop_btn = gr.Button("Stop ■", variant="stop", size="sm", interactive=False, elem_id="sv-stop")
                    chat = gr.Checkbox(chat_on, label="chat", elem_id="sv-chat",
                                       info="as a user turn in the pair's chat template")
            # example pickers: gr.Dataset as gr.Examples draws it, with a handler of ours that checks the index
            # (gr.Examples' own load_example raised a raw TypeError on a hostile one)
            chat_examples = gr.Dataset(components=[prompt, chat], samples=[[p, True] for p in CHAT_PROMPTS],
                                       type="index", label="questions (chat pairs, chat on)",
                                       elem_id="sv-examples-chat")
            code_examples = gr.Dataset(components=[prompt, chat], samples=[[p, False] for p in CODE_PROMPTS],
                                       type="index", label="code (bundled-stdlib-pair, chat off)",
                                       elem_id="sv-examples-code")
            status = gr.HTML(render.status_html(Session(), html.escape(self.startup_message)), elem_id="sv-status")
            with gr.Row(equal_height=True, elem_id="sv-scrub"):
                prev_btn = gr.Button("◀ prev", size="sm", min_width=70, scale=0, elem_id="sv-prev")
                slider = gr.Slider(1, 2, value=1, step=1, label="step", interactive=False, scale=8, elem_id="sv-step")
                next_btn = gr.Button("next ▶", size="sm", min_width=70, scale=0, elem_id="sv-next")
                play_btn = gr.Button("▶ play", size="sm", min_width=70, scale=0, elem_id="sv-play")
                pause_btn = gr.Button("❚❚", size="sm", min_width=50, scale=0, elem_id="sv-pause")
                latest_btn = gr.Button("latest ⏭", size="sm", min_width=80, scale=0, elem_id="sv-latest")
            step_label = gr.Markdown("no steps yet", elem_id="sv-step-label", elem_classes=["sv-note"])
            gr.HTML(legend_html(), elem_id="sv-legend")
            # a click on a tree node writes "column:node:nonce" here (NODE_CLICK_JS); hidden by CSS
            node_pick = gr.Textbox(elem_id="sv-node-pick", elem_classes=["sv-hidden"], show_label=False,
                                   container=False)
            # the page writes "step:nonce" here whenever it has drawn a live update (back-pressure)
            page_report = gr.Textbox(elem_id="sv-shown", elem_classes=["sv-hidden"], show_label=False,
                                     container=False)

            with gr.Row(equal_height=False, elem_id="sv-columns"):
                slots = [Slot.declare(i) for i in range(self.n_slots)]

            gr.Markdown("## Comparison", elem_id="sv-compare-title")
            table = gr.HTML(render.table_html(Session()), elem_id="sv-table")
            with gr.Row(elem_classes=["sv-figrow"]):
                fig_per_step = gr.Plot(show_label=False, elem_id="sv-per-step")
                fig_cumulative = gr.Plot(show_label=False, elem_id="sv-cumulative")
            with gr.Row(elem_classes=["sv-figrow"]):
                fig_hist = gr.Plot(show_label=False, elem_id="sv-hist")
                fig_time = gr.Plot(show_label=False, elem_id="sv-time")
            with gr.Row(elem_classes=["sv-figrow"]):
                fig_positions = gr.Plot(show_label=False, elem_id="sv-positions")
                fig_race = gr.Plot(show_label=False, elem_id="sv-race")
            fig_latency = gr.Plot(show_label=False, elem_id="sv-latency")
            gr.Markdown("## Measure", elem_id="sv-measure-title")
            with gr.Row(equal_height=True):
                measure_btn = gr.Button("Measure ⏱", size="sm", scale=0, min_width=120, elem_id="sv-measure-btn")
                gr.Markdown(f"Times the columns one after another on this prompt and settings, "
                            f"unpaced, a warm-up and {cfg.measure_repeats} timed runs each; medians. Use these "
                            "numbers, not a live run's, to compare speed.", elem_classes=["sv-note"])
            measurements = gr.HTML(measurements_html([]), elem_id="sv-measure")

            page = Page(session=session, status=status, run_btn=run_btn, stop_btn=stop_btn, measure_btn=measure_btn,
                        input_msg=input_msg, slider=slider, step_label=step_label, table=table, per_step=fig_per_step,
                        cumulative=fig_cumulative, hist=fig_hist, time=fig_time, positions=fig_positions,
                        race=fig_race, latency=fig_latency, measurements=measurements,
                        max_new=max_new, seed=seed, temperature=temperature, top_p=top_p, top_k=top_k, slots=slots)
            self.page = page
            outputs = page.outputs()

            # ---- events
            pair_choice.change(self.toggle_custom, [pair_choice], [custom_group, pair_note], queue=False,
                               api_visibility="private")
            for picker, pick in ((chat_examples, self.chat_example), (code_examples, self.code_example)):
                picker.click(pick, [picker], [prompt, chat], queue=False, show_progress="hidden",
                             api_visibility="private")
            load_btn.click(gpu(self.load), [pair_choice, custom_target, custom_draft, session],
                           [pair_md, session], concurrency_limit=1, concurrency_id="load", api_name="load_pair"
                           ).then(self.chat_default, [session], [chat], queue=False, api_visibility="private")
            editor.wire()
            checked_inputs = [session, prompt, max_new, top_k, seed, chat]
            for box in (max_new, top_k, seed, chat):
                box.change(page.wire(self.input_message), checked_inputs, outputs, queue=False,
                           api_visibility="private")
            prompt.blur(page.wire(self.input_message), checked_inputs, outputs, queue=False, api_visibility="private")
            run_inputs = [session, prompt, max_new, temperature, top_p, top_k, seed, editor.value, pace, chat]
            run_kw = dict(concurrency_limit=cfg.concurrency, concurrency_id="decode", show_progress="minimal",
                          show_progress_on=[status], time_limit=600 if cfg.public else None, trigger_mode="once")
            run_btn.click(gpu(page.wire(self.run)), run_inputs, outputs, api_name="run", **run_kw)
            prompt.submit(gpu(page.wire(self.run)), run_inputs, outputs, api_visibility="private", **run_kw)
            measure_btn.click(gpu(page.wire(self.measure)), run_inputs, outputs, api_name="measure", **run_kw)
            # no `cancels=`: a cancelled generator never sends its last update; the run ends itself
            stop_btn.click(page.wire(self.stop), [session], outputs, queue=False, api_visibility="private")
            view_kw = dict(concurrency_limit=8, concurrency_id="view", show_progress="hidden",
                           api_visibility="private")
            slider.input(page.wire(self.scrub), [session, slider], outputs, trigger_mode="always_last", **view_kw)
            # whatever moved the slider (scrub, buttons, play, a live run), move the step markers of
            # the comparison figures and the highlighted step of the texts in the browser
            slider.change(None, [slider], None, js=STEP_JS, queue=False, api_visibility="private")
            prev_btn.click(page.wire(self.prev), [session], outputs, **view_kw)
            next_btn.click(page.wire(self.next), [session], outputs, **view_kw)
            latest_btn.click(page.wire(self.latest), [session], outputs, **view_kw)
            node_pick.change(page.wire(self.select_node), [session, node_pick], outputs, **view_kw)
            page_report.change(self.page_shown, [session, page_report], None, queue=False,
                               show_progress="hidden", api_visibility="private")
            play_event = play_btn.click(page.wire(self.play), [session, pace], outputs, concurrency_limit=16,
                                        concurrency_id="play", show_progress="hidden", api_visibility="private")
            pause_btn.click(None, None, None, cancels=[play_event], queue=False, api_visibility="private")
            upload.upload(self.replay, [upload, session], outputs + editor.outputs(), concurrency_limit=4,
                          api_name="replay")
        demo.queue(default_concurrency_limit=cfg.concurrency, max_size=cfg.queue_max_size)
        return demo

    def _algorithm_guide(self) -> str:
        lines = []
        for name, spec in self.algorithms.items():
            tags = ["lossless" if spec.lossless else "not lossless"]
            if not spec.needs_draft:
                tags.append("no draft")
            lines.append(f"- **{name}**: {spec.description} _({'; '.join(tags)}; {spec.paper})_")
        return "\n".join(lines)


def build_app(config: AppConfig | None = None, *, preload: bool = True, **kwargs: Any) -> gr.Blocks:
    """The Blocks of the explorer (queue configured); ``demo.explorer`` is the ``Explorer``."""
    explorer = Explorer(config, preload=preload, **kwargs)
    demo = explorer.build()
    demo.explorer = explorer  # type: ignore[attr-defined]
    return demo


def launch_kwargs(config: AppConfig) -> dict[str, Any]:
    """Arguments for ``Blocks.launch``: styling (gradio 6 takes css/theme here), the upload cap, no run
    history (a run's outputs are dozens of figures; the trace download is the record) and, with upload
    limits, the middleware that enforces them on the app Gradio creates (``ui.uploadlimit``).
    Host and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, as gradio reads them itself."""
    kwargs = {"css": APP_CSS, "theme": theme(), "js": PAGE_JS, "max_file_size": config.max_upload_bytes,
              "footer_links": ["api", "gradio", "settings"], "run_history": False,
              "state_session_capacity": config.session_capacity}
    limiter = UploadLimiter(config.max_uploads_per_minute, config.max_upload_bytes_per_minute)
    if limiter.active:
        kwargs["app_kwargs"] = {"middleware": [Middleware(UploadLimitMiddleware, limiter=limiter)]}
    return kwargs


def launch(demo: gr.Blocks | None = None, **kwargs: Any) -> Any:
    """Serve the app; refuses an app without public mode on an address other machines can reach
    (``config.check_exposure``)."""
    demo = demo or build_app()
    config = getattr(demo, "explorer", None).config if hasattr(demo, "explorer") else AppConfig.from_env()
    check_exposure(config, kwargs.get("server_name"), bool(kwargs.get("share")))
    temp = os.environ.get("GRADIO_TEMP_DIR", "")
    if os.path.basename(temp.rstrip(os.sep)).startswith("specviz-gradio-"):  # ours, not an operator's directory
        start_quota_sweeper(temp, config.max_temp_bytes)
    ours = launch_kwargs(config)
    if "app_kwargs" in ours and "app_kwargs" in kwargs:  # the caller's FastAPI arguments, and our middleware
        given = dict(kwargs["app_kwargs"] or {})
        given["middleware"] = [*given.get("middleware", []), *ours["app_kwargs"]["middleware"]]
        kwargs = {**kwargs, "app_kwargs": given}
    return demo.launch(**{**ours, **kwargs})
