"""The Gradio explorer: layout and callbacks (no maths here; everything is drawn from traces).

``Explorer`` holds the settings, the shared pair registry and every callback as a method, so tests
can call the callbacks in-process; ``Explorer.build()`` returns the ``gr.Blocks``; ``launch()``
builds, queues and serves it.
"""
from __future__ import annotations

import html
import logging
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import gradio as gr

import specviz
from specviz.algorithms.registry import AlgorithmSpec, Param
from specviz.errors import SpecvizError
from specviz.ui import render
from specviz.ui.config import AppConfig, configure_torch_threads
from specviz.ui.gpu import gpu
from specviz.ui.pairs import PairChoice, PairRegistry, describe_pair, preset_choices
from specviz.ui.runner import (Session, Throttle, advance, columns_from_traces, export, export_finished,
                               load_trace_file, start_columns, stop_columns)
from specviz.ui.style import APP_CSS, HEADER_HTML, STEP_JS, theme
from specviz.viz import legend_html

log = logging.getLogger(__name__)
CUSTOM = "__custom__"
STREAM_INTERVAL_S = 0.25   # live column updates at most this often (and see Throttle)
COMPARE_INTERVAL_S = 1.0   # live comparison table and figures at most this often
PREFERRED_DEFAULTS = ("ar", "sd", "specinfer", "mcsd", "sequoia", "eesd", "dsbd")
FALLBACK_PROMPTS = (
    "def fibonacci(n):\n",
    "import os\n\n\ndef list_python_files(root):\n",
    "class Stack:\n    \"\"\"A last-in, first-out stack.\"\"\"\n\n    def __init__(self):\n",
    "def parse_args(argv=None):\n    parser = argparse.ArgumentParser(",
    "    for i in range(len(items)):\n",
)


def example_prompts() -> list[str]:
    """Example prompts from ``assets/prompts.txt`` (blank-line separated) if present, else built-ins."""
    root = Path(__file__).resolve().parents[2] / "assets"
    for name in ("prompts.txt", "example_prompts.txt"):
        p = root / name
        if p.is_file():
            text = p.read_text(encoding="utf-8")
            prompts = [b.strip("\n") + "\n" for b in text.split("\n\n\n") if b.strip()] if "\n\n\n" in text else \
                [line.replace("\\n", "\n") for line in text.splitlines() if line.strip()]
            if prompts:
                return prompts[:8]
    return list(FALLBACK_PROMPTS)


def param_value(param: Param, raw: Any) -> Any:
    """A component's value converted to what ``AlgorithmSpec.resolve`` validates."""
    if raw is None:
        return param.default
    if param.kind == "choice":
        if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < len(param.choices):
            return param.choices[raw]
        return raw
    if param.kind == "int" and isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if param.kind == "float" and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    return raw


def param_component(spec: AlgorithmSpec, p: Param) -> gr.components.Component:
    label = f"{p.name}"
    info = p.help or None
    if p.kind == "bool":
        return gr.Checkbox(value=bool(p.default), label=label, info=info)
    if p.kind == "choice":
        return gr.Dropdown(choices=[(str(c), i) for i, c in enumerate(p.choices)],
                           value=list(p.choices).index(p.default) if p.default in p.choices else 0,
                           label=label, info=info)
    if p.kind == "str":
        return gr.Textbox(value=str(p.default), label=label, info=info, max_lines=1)
    if p.kind in ("int", "float") and p.min is not None and p.max is not None and (p.max - p.min) <= 1000:
        step = 1 if p.kind == "int" else (p.max - p.min) / 100
        return gr.Slider(p.min, p.max, value=p.default, step=step, label=label, info=info)
    return gr.Number(value=p.default, label=label, info=info, precision=0 if p.kind == "int" else None,
                     minimum=p.min, maximum=p.max)


class Explorer:
    """The app's state shared by all visitors and its callbacks."""

    def __init__(self, config: AppConfig | None = None, registry: PairRegistry | None = None, *,
                 presets: list[PairChoice] | None = None, preload: bool = True):
        self.config = config or AppConfig.from_env()
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
            self.presets = [default, *[p for p in self.presets if p.key != default.key]]
        self.algorithms = dict(specviz.ALGORITHMS)
        self.n_slots = self.config.max_columns
        self.param_index: list[tuple[str, Param]] = [(name, p) for name, spec in self.algorithms.items()
                                                      for p in spec.params]
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
            self.default_key = self.registry.load(first.target, first.draft)
        except SpecvizError as exc:
            self.startup_message = f"The default pair could not be loaded: {exc}"
            log.warning(self.startup_message)

    def pair_markdown(self, key: str | None) -> str:
        pair = self.registry.get(key)
        if pair is None:
            return self.startup_message or "No pair loaded yet: choose one above and press **Load pair**."
        return describe_pair(pair)

    def resolve_choice(self, choice: str, target: str, draft: str) -> tuple[str, str | None]:
        if choice == CUSTOM:
            if not self.config.allow_custom_pairs:
                raise specviz.ModelLoadError("This public app serves the preset pairs only.")
            target = (target or "").strip()
            if not target:
                raise specviz.ModelLoadError("Type a target model: a hub id (owner/name) or a local directory.")
            return target, (draft or "").strip() or None
        for p in self.presets:
            if p.key == choice:
                p.check()
                return p.target, p.draft
        raise specviz.ModelLoadError(f"Unknown preset {choice!r}.")

    def load(self, choice: str, target: str, draft: str, trust: bool, session: Session,
             progress: gr.Progress = gr.Progress(track_tqdm=True)) -> tuple[str, Session]:
        """Load a pair for this session. On failure the message is shown and the previous pair kept."""
        session = session if isinstance(session, Session) else Session(pair_key=self.default_key)
        previous = self.pair_markdown(session.pair_key)
        try:
            t, d = self.resolve_choice(choice, target, draft)
            progress(0.05, desc=f"Loading {t}" + (f" and {d}" if d else "") + "…")
            key = self.registry.load(t, d, trust_remote_code=bool(trust) and self.config.allow_remote_code)
        except SpecvizError as exc:
            return self._load_failed(str(exc), previous), session
        except Exception as exc:  # noqa: BLE001 - e.g. an out-of-memory error from a huge model
            return self._load_failed(f"{type(exc).__name__}: {exc}", previous), session
        session.pair_key = key
        return "✅ " + self.pair_markdown(key), session

    @staticmethod
    def _load_failed(message: str, previous: str) -> str:
        return f"⚠️ **Could not load that pair.** {message}\n\nStill using: {previous}"

    # ---- outputs ------------------------------------------------------------------------------------------
    def _slider(self, session: Session) -> gr.Slider:
        n = session.n_steps
        return gr.Slider(minimum=1, maximum=max(n, 2), value=session.view_step() + 1, step=1, interactive=n > 1)

    def _slot_updates(self, session: Session, step: int, full: bool) -> list[Any]:
        """Per-column updates, sending only what changed on screen.

        Every Plotly redraw and every large HTML swap costs the browser tens of milliseconds, so a
        column's text is re-sent only when the text itself changes (new steps, finished); moving the
        selected step within it is done in the browser (``STEP_JS`` on the slider). Its tree and
        controller figure are re-sent only when the step it shows changes (a column that finished
        before the selected step keeps showing its last one).
        """
        out: list[Any] = []
        baseline = render.greedy_baseline(session)
        for i in range(self.n_slots):
            if i < len(session.columns):
                col = session.columns[i]
                diverge_at = render.divergence(col, baseline)
                state = (col.n_steps, col.done, col.error, id(col.trace), diverge_at)
                tree_key = (min(step, max(col.n_steps - 1, 0)), *state)
                header = render.column_header(col, i, step, session.running)
                v = None
                if col.shown_text != state or col.shown_tree != tree_key:
                    v = render.slot_view(col, i, step, session.running, diverge_at)
                tokens = v.tokens if col.shown_text != state else gr.skip()
                figs = [v.tree, gr.Plot(value=v.controller, visible=v.controller is not None)] \
                    if col.shown_tree != tree_key else [gr.skip(), gr.skip()]
                col.shown_text, col.shown_tree = state, tree_key
                if full:
                    download = col.path if col.done else None
                    out += [gr.Column(visible=True), header, tokens, *figs,
                            gr.DownloadButton(value=download, visible=download is not None)]
                else:
                    out += [header, tokens, *figs]
            elif full:
                out += [gr.Column(visible=False), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()]
            else:
                out += [gr.skip()] * 4
        return out

    def full_outputs(self, session: Session, note: str = "", compare: bool = True) -> list[Any]:
        """Every output. ``compare=False`` leaves the comparison table and figures as they are
        (a live run refreshes them less often than the columns)."""
        step = session.view_step()
        if compare:
            cmp = render.comparison(session, step)
            comparison = [cmp["table"], cmp["per_step"], cmp["cumulative"], cmp["hist"], cmp["time"]]
        else:
            comparison = [gr.skip()] * 5
        return [session, render.status_html(session, note), self._slider(session), render.step_label(session),
                *comparison, *self._slot_updates(session, step, full=True)]

    def message_outputs(self, session: Session, note: str) -> list[Any]:
        """Only the status line changes (a refused request)."""
        n = 9 + 6 * self.n_slots
        out: list[Any] = [gr.skip()] * n
        out[0] = session
        out[1] = render.status_html(Session(), f'<span class="sv-bad">⚠ {html.escape(note)}</span>')
        return out

    def step_outputs(self, session: Session) -> list[Any]:
        """Outputs of a step change: slider, label and the columns. The step markers of the
        comparison figures and the highlighted step in the texts move in the browser (``STEP_JS``)."""
        step = session.view_step()
        return [self._slider(session), render.step_label(session), *self._slot_updates(session, step, full=False)]

    # ---- running ------------------------------------------------------------------------------------------
    def selected_params(self, algorithms: Sequence[str], values: Sequence[Any]) -> list[tuple[str, dict[str, Any]]]:
        chosen = []
        for name in algorithms:
            params = {p.name: param_value(p, v) for (algo, p), v in zip(self.param_index, values) if algo == name}
            chosen.append((name, params))
        return chosen

    def run(self, session: Session, prompt: str, max_new_tokens: float, temperature: float, top_p: float,
            top_k: float, seed: float, algorithms: list[str], delay: float, *param_values: Any) -> Iterator[list[Any]]:
        """Run the selected algorithms side by side, yielding the page as the steps come in."""
        session = session if isinstance(session, Session) else Session(pair_key=self.default_key)
        algorithms = [a for a in (algorithms or []) if a in self.algorithms]
        if not algorithms:
            yield self.message_outputs(session, "Select at least one algorithm.")
            return
        if len(algorithms) > self.n_slots:
            yield self.message_outputs(session, f"At most {self.n_slots} algorithms at once; you selected {len(algorithms)}.")
            return
        if prompt is None or not str(prompt).strip():
            yield self.message_outputs(session, "The prompt is empty: type some text or pick an example.")
            return
        if len(prompt) > self.config.max_prompt_chars:
            yield self.message_outputs(session, f"The prompt is {len(prompt)} characters; the limit here is "
                                                f"{self.config.max_prompt_chars}.")
            return
        pair = self.registry.get(session.pair_key)
        if pair is None and session.pair_key:
            target, _, draft = session.pair_key.partition("|")
            try:  # evicted by another visitor's load: bring it back
                self.registry.load(target, draft or None)
                pair = self.registry.get(session.pair_key)
            except SpecvizError as exc:
                yield self.message_outputs(session, f"The pair could not be reloaded: {exc}")
                return
        if pair is None:
            yield self.message_outputs(session, "No pair loaded: choose one and press Load pair.")
            return
        note = ""
        try:
            max_new = int(max_new_tokens)
            seed_i = int(seed)
            top_k_i = int(top_k)
        except (TypeError, ValueError):
            yield self.message_outputs(session, "max new tokens, top-k and seed must be whole numbers.")
            return
        if max_new > self.config.max_new_tokens_cap:
            note = f"max new tokens capped at {self.config.max_new_tokens_cap}"
            max_new = self.config.max_new_tokens_cap
        delay = min(max(float(delay or 0.0), 0.0), self.config.max_step_delay_s)

        session.run_id += 1
        run_id = session.run_id
        session.columns = start_columns(pair, prompt, self.selected_params(algorithms, param_values),
                                        max_new_tokens=max_new, temperature=float(temperature), top_p=float(top_p),
                                        top_k=top_k_i, seed=seed_i)
        session.step, session.source, session.running = None, "live", True
        cols = session.columns
        throttle = Throttle(STREAM_INTERVAL_S)
        compare_throttle = Throttle(COMPARE_INTERVAL_S, ratio=0.0)
        try:
            yield self.full_outputs(session, note)
            throttle(force=True)
            while advance(cols):
                if session.run_id != run_id:  # a newer run in this session replaced this one
                    return
                if delay:
                    time.sleep(delay)
                elif not throttle():
                    continue
                t0 = time.perf_counter()
                out = self.full_outputs(session, note, compare=compare_throttle())
                throttle.rendered(time.perf_counter() - t0)
                yield out
            if session.run_id != run_id:  # stopped, or replaced by a newer run
                return
            export_finished(cols)
            session.running = False
            yield self.full_outputs(session, note)
        finally:
            if session.run_id == run_id:
                session.running = False
                stop_columns(cols)

    def stop(self, session: Session) -> list[Any]:
        """Stop the session's run (the event itself is cancelled by Gradio) and show where it got to."""
        if not isinstance(session, Session) or not session.running:
            return [gr.skip()] * (9 + 6 * self.n_slots)
        session.run_id += 1  # the generator sees this and returns
        session.running = False
        stop_columns(session.columns)
        export_finished(session.columns)
        return self.full_outputs(session, "stopped")

    # ---- scrubbing ----------------------------------------------------------------------------------------
    def scrub(self, session: Session, value: float) -> list[Any]:
        if not isinstance(session, Session) or not session.columns:
            return [gr.skip()] * (2 + 4 * self.n_slots)
        session.step = max(0, int(value) - 1)
        return self.step_outputs(session)

    def shift(self, session: Session, delta: int) -> list[Any]:
        if not isinstance(session, Session) or not session.columns:
            return [gr.skip()] * (2 + 4 * self.n_slots)
        session.step = max(0, min(session.view_step() + delta, session.n_steps - 1))
        return self.step_outputs(session)

    def prev(self, session: Session) -> list[Any]:
        return self.shift(session, -1)

    def next(self, session: Session) -> list[Any]:
        return self.shift(session, +1)

    def latest(self, session: Session) -> list[Any]:
        if not isinstance(session, Session) or not session.columns:
            return [gr.skip()] * (2 + 4 * self.n_slots)
        session.step = None
        return self.step_outputs(session)

    def play(self, session: Session, pace: float) -> Iterator[list[Any]]:
        """Step through the run from the selected step (or the start) to the end."""
        if not isinstance(session, Session) or not session.columns:
            return
        n = session.n_steps
        start = session.view_step()
        if start >= n - 1:
            start = 0
        pace = min(max(float(pace or 0.0), 0.15), 1.0)
        for k in range(start, n):
            session.step = k
            yield self.step_outputs(session)
            time.sleep(pace)

    # ---- replay -------------------------------------------------------------------------------------------
    def upload(self, files: Any, session: Session) -> list[Any]:
        """Replay uploaded trace files (no model needed); bad files get a message, good ones are shown."""
        session = session if isinstance(session, Session) else Session(pair_key=self.default_key)
        if not files:
            return self.message_outputs(session, "No file received.")
        paths = [f if isinstance(f, str) else getattr(f, "name", str(f)) for f in (files if isinstance(files, list) else [files])]
        traces, problems = [], []
        for path in paths:
            try:
                traces.append(load_trace_file(path, self.config.max_upload_bytes))
            except SpecvizError as exc:
                problems.append(str(exc))
            except OSError as exc:
                problems.append(f"{Path(path).name}: could not be read ({exc}).")
        if not traces:
            return self.message_outputs(session, "Could not replay: " + " ".join(problems))
        note = ""
        if len(traces) > self.n_slots:
            note = f"showing the first {self.n_slots} of {len(traces)} traces"
            traces = traces[: self.n_slots]
        if problems:
            note = (note + " · " if note else "") + "skipped: " + " ".join(html.escape(p) for p in problems)
        session.run_id += 1
        session.columns = columns_from_traces(traces)
        for c in session.columns:
            export(c)
        session.step, session.source, session.running = 0, "replay", False
        return self.full_outputs(session, note)

    # ---- small UI reactions --------------------------------------------------------------------------------
    def toggle_custom(self, choice: str) -> list[Any]:
        custom = choice == CUSTOM
        note = next((p.note for p in self.presets if p.key == choice), "")
        return [gr.Group(visible=custom), gr.Markdown(value=note, visible=bool(note) and not custom)]

    def show_settings(self, algorithms: list[str]) -> list[Any]:
        return [gr.Accordion(visible=name in (algorithms or [])) for name in self.settings_algorithms]

    @property
    def settings_algorithms(self) -> list[str]:
        return [name for name, spec in self.algorithms.items() if spec.params]

    def default_algorithms(self) -> list[str]:
        chosen = [a for a in PREFERRED_DEFAULTS if a in self.algorithms][:4]
        return chosen or list(self.algorithms)[:2]

    # ---- layout --------------------------------------------------------------------------------------------
    def build(self) -> gr.Blocks:
        cfg = self.config
        default_algos = self.default_algorithms()
        choices = [(p.name, p.key) for p in self.presets]
        if cfg.allow_custom_pairs:
            choices.append(("custom: any hub ids or local paths…", CUSTOM))
        default_choice = self.default_key or self.presets[0].key

        # delete_cache: Gradio's copies of served files (trace downloads) older than an hour go hourly
        with gr.Blocks(title="specviz · speculative decoding explorer", fill_width=True,
                       delete_cache=(3600, 3600)) as demo:
            session = gr.State(Session(pair_key=self.default_key))
            gr.HTML(HEADER_HTML, elem_id="sv-header")
            with gr.Sidebar(width=370, open=True, label="Settings"):
                gr.Markdown("### Model pair")
                pair_choice = gr.Dropdown(choices=choices, value=default_choice, label="preset", show_label=False,
                                          elem_id="sv-pair-choice")
                pair_note = gr.Markdown(self.presets[0].note if self.presets else "", elem_classes=["sv-note"])
                with gr.Group(visible=False) as custom_group:
                    custom_target = gr.Textbox(label="target (hub id or local directory)",
                                               placeholder="e.g. HuggingFaceTB/SmolLM2-1.7B", elem_id="sv-target")
                    custom_draft = gr.Textbox(label="draft (same tokenizer)",
                                              placeholder="e.g. HuggingFaceTB/SmolLM2-135M", elem_id="sv-draft")
                    trust = gr.Checkbox(False, label="trust remote code (runs code from the model repo)",
                                        visible=cfg.allow_remote_code)
                load_btn = gr.Button("Load pair", size="sm", elem_id="sv-load")
                pair_md = gr.Markdown(self.pair_markdown(self.default_key), elem_id="sv-pair-status",
                                      elem_classes=["sv-note"])

                gr.Markdown("### Algorithms")
                algos = gr.CheckboxGroup(choices=list(self.algorithms), value=default_algos, show_label=False,
                                         info=f"run up to {self.n_slots} side by side", elem_id="sv-algos")
                with gr.Accordion("What each algorithm does", open=False):
                    gr.Markdown(self._algorithm_guide())
                gr.Markdown("### Sampling")
                with gr.Row():
                    max_new = gr.Slider(1, cfg.max_new_tokens_cap, value=cfg.default_max_new_tokens, step=1,
                                        label="max new tokens", elem_id="sv-max-new")
                with gr.Row():
                    temperature = gr.Slider(0, 2, value=0.0, step=0.05, label="temperature",
                                            info="0 = greedy", elem_id="sv-temperature")
                    seed = gr.Number(0, label="seed", precision=0, minimum=0, elem_id="sv-seed")
                with gr.Row():
                    top_p = gr.Slider(0.01, 1.0, value=1.0, step=0.01, label="top-p")
                    top_k = gr.Number(0, label="top-k", info="0 = off", precision=0, minimum=0)
                delay = gr.Slider(0, cfg.max_step_delay_s, value=0.0, step=0.05, label="pace (seconds per step)",
                                  info="slow a live run down to watch it", elem_id="sv-pace")
                gr.Markdown("### Algorithm settings")
                param_inputs: list[gr.components.Component] = []
                accordions = []
                for name in self.settings_algorithms:
                    spec = self.algorithms[name]
                    with gr.Accordion(f"{name} settings", open=False, visible=name in default_algos) as acc:
                        for p in spec.params:
                            param_inputs.append(param_component(spec, p))
                    accordions.append(acc)
                gr.Markdown("### Replay a saved trace")
                upload = gr.File(label=f"trace JSON (up to {cfg.max_upload_bytes // (1024 * 1024)} MB each)",
                                 file_count="multiple", file_types=[".json"], type="filepath", elem_id="sv-upload",
                                 height=110)

            # ---- main area
            with gr.Row(equal_height=True):
                prompt = gr.Textbox(label="prompt", lines=3, max_lines=8, scale=6, elem_id="sv-prompt",
                                    value=example_prompts()[0], max_length=cfg.max_prompt_chars)
                with gr.Column(scale=1, min_width=130):
                    run_btn = gr.Button("Run ▶", variant="primary", elem_id="sv-run")
                    stop_btn = gr.Button("Stop ■", variant="stop", size="sm", elem_id="sv-stop")
            gr.Examples(examples=[[p] for p in example_prompts()], inputs=[prompt], label="example prompts")
            status = gr.HTML(render.status_html(Session(), self.startup_message), elem_id="sv-status")
            with gr.Row(equal_height=True, elem_id="sv-scrub"):
                prev_btn = gr.Button("◀ prev", size="sm", min_width=70, scale=0, elem_id="sv-prev")
                slider = gr.Slider(1, 2, value=1, step=1, label="step", interactive=False, scale=8, elem_id="sv-step")
                next_btn = gr.Button("next ▶", size="sm", min_width=70, scale=0, elem_id="sv-next")
                play_btn = gr.Button("▶ play", size="sm", min_width=70, scale=0, elem_id="sv-play")
                pause_btn = gr.Button("❚❚", size="sm", min_width=50, scale=0, elem_id="sv-pause")
                latest_btn = gr.Button("latest ⏭", size="sm", min_width=80, scale=0, elem_id="sv-latest")
            step_md = gr.Markdown("no steps yet", elem_id="sv-step-label", elem_classes=["sv-note"])
            gr.HTML(legend_html(), elem_id="sv-legend")

            slots: list[list[gr.components.Component]] = []
            with gr.Row(equal_height=False, elem_id="sv-columns"):
                for i in range(self.n_slots):
                    with gr.Column(visible=False, min_width=420, elem_classes=["sv-col"], elem_id=f"sv-col-{i}") as col:
                        header = gr.HTML(elem_id=f"sv-head-{i}")
                        tokens = gr.HTML(max_height=230, elem_id=f"sv-text-{i}", elem_classes=["sv-textbox"])
                        tree = gr.Plot(show_label=False, elem_id=f"sv-tree-{i}")
                        ctrl = gr.Plot(show_label=False, visible=False, elem_id=f"sv-ctrl-{i}")
                        dl = gr.DownloadButton("⬇ trace JSON", visible=False, size="sm", elem_id=f"sv-dl-{i}")
                    slots.append([col, header, tokens, tree, ctrl, dl])

            gr.Markdown("## Comparison", elem_id="sv-compare-title")
            table = gr.HTML(render.table_html(Session()), elem_id="sv-table")
            with gr.Row():
                fig_per_step = gr.Plot(show_label=False, elem_id="sv-per-step")
                fig_cumulative = gr.Plot(show_label=False, elem_id="sv-cumulative")
            with gr.Row():
                fig_hist = gr.Plot(show_label=False, elem_id="sv-hist")
                fig_time = gr.Plot(show_label=False, elem_id="sv-time")

            full = [session, status, slider, step_md, table, fig_per_step, fig_cumulative, fig_hist, fig_time,
                    *[c for slot in slots for c in slot]]
            stepwise = [slider, step_md, *[c for slot in slots for c in slot[1:5]]]

            # ---- events
            pair_choice.change(self.toggle_custom, [pair_choice], [custom_group, pair_note], queue=False,
                               api_visibility="private")
            load_btn.click(gpu(self.load), [pair_choice, custom_target, custom_draft, trust, session],
                           [pair_md, session], concurrency_limit=1, concurrency_id="load", api_name="load_pair")
            algos.change(self.show_settings, [algos], accordions, queue=False, api_visibility="private")
            run_inputs = [session, prompt, max_new, temperature, top_p, top_k, seed, algos, delay, *param_inputs]
            run_kw = dict(concurrency_limit=cfg.concurrency, concurrency_id="decode", show_progress="minimal",
                          time_limit=600 if cfg.public else None)
            run_event = run_btn.click(gpu(self.run), run_inputs, full, api_name="run", **run_kw)
            submit_event = prompt.submit(gpu(self.run), run_inputs, full, api_visibility="private", **run_kw)
            view_kw = dict(concurrency_limit=8, concurrency_id="view", show_progress="hidden",
                           api_visibility="private")
            slider.input(self.scrub, [session, slider], stepwise, trigger_mode="always_last", **view_kw)
            # whatever moved the slider (scrub, buttons, play, a live run), move the step markers of
            # the comparison figures and the highlighted step of the texts in the browser
            slider.change(None, [slider], None, js=STEP_JS, queue=False, api_visibility="private")
            prev_btn.click(self.prev, [session], stepwise, **view_kw)
            next_btn.click(self.next, [session], stepwise, **view_kw)
            latest_btn.click(self.latest, [session], stepwise, **view_kw)
            play_event = play_btn.click(self.play, [session, delay], stepwise, concurrency_limit=16,
                                        concurrency_id="play", show_progress="hidden", api_visibility="private")
            pause_btn.click(None, None, None, cancels=[play_event], queue=False, api_visibility="private")
            stop_btn.click(self.stop, [session], full, cancels=[run_event, submit_event], queue=False,
                           api_visibility="private")
            upload.upload(self.upload, [upload, session], full, concurrency_limit=4, api_name="replay")
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
    """Arguments for ``Blocks.launch``: styling (gradio 6 takes css/theme here), the upload cap, and
    no run history (a run's outputs are dozens of figures; the trace download is the record).
    Host and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT, as gradio reads them itself."""
    return {"css": APP_CSS, "theme": theme(), "max_file_size": config.max_upload_bytes,
            "footer_links": ["api", "gradio", "settings"], "run_history": False}


def launch(demo: gr.Blocks | None = None, **kwargs: Any) -> Any:
    demo = demo or build_app()
    config = getattr(demo, "explorer", None).config if hasattr(demo, "explorer") else AppConfig.from_env()
    return demo.launch(**{**launch_kwargs(config), **kwargs})
