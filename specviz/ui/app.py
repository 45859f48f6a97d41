"""The Gradio explorer, assembled from its parts: ``build()`` declares the page once and wires each
event to the part whose job it is. No maths here; everything is drawn from traces.

- ``ui.pair_loading``: the presets, the default pair, a visitor's Load pair;
- ``ui.request``: a run's request checked on the server (columns, prompt, sampling, pair, cost);
- ``ui.run_loop``: Run, Measure, Stop and the page's reports of what it drew;
- ``ui.scrubbing``: the step slider, its buttons, playback, a click on a tree node;
- ``ui.replay``: uploaded traces replayed, the sidebar set to what they ran with;
- ``ui.examples``: the example prompts; ``ui.editor``: the column editor; ``ui.views``: what the
  handlers send; ``ui.layout``: the output components by name.

``Explorer`` holds the parts and every handler under the name the page wires it as, so tests call the
handlers in-process (``ex.run(...)``, ``ex.scrub(...)``); ``launch()`` builds, queues and serves it.
"""

from __future__ import annotations

import html
import inspect
import logging
import os
import time
from typing import Any, Callable

import gradio as gr
from starlette.middleware import Middleware

from specviz import defaults
from specviz.algorithms import ALGORITHMS
from specviz.algorithms.registry import page_defaults
from specviz.ui import examples, papers_view, render
from specviz.ui.columns import param_value  # noqa: F401  (param_value: tests import it here)
from specviz.ui.config import AppConfig, check_exposure, configure_torch_threads, private_temp_dir, public_notice
from specviz.ui.editor import ColumnEditor, param_elem_id  # noqa: F401  (param_elem_id: tests import it here)
from specviz.ui.examples import CHAT_PROMPTS, CODE_PROMPTS, example_prompts
from specviz.ui.gpu import gpu
from specviz.ui.layers_view import LayersView
from specviz.ui.layout import SLIDER_RANGES, Controls, Page, Slot, declare_figures
from specviz.ui.measure import measurements_html
from specviz.ui.numberbox import NumberBox, SeedBox, SliderBox
from specviz.ui.pacing import RunControl
from specviz.ui.pair_loading import CUSTOM, PairLoader  # noqa: F401  (CUSTOM: tests import it here)
from specviz.ui.pairs import PairChoice, PairRegistry, preset_choices
from specviz.ui.replay import Replay
from specviz.ui.request import RequestChecker
from specviz.ui.run_loop import RunLoop
from specviz.ui.runner import Session
from specviz.ui.scrubbing import Scrubbing
from specviz.ui.skip_blocks import SkipBlocks
from specviz.ui.style import APP_CSS, HEADER_HTML, PAGE_JS, STEP_JS, theme
from specviz.ui.trace_files import start_quota_sweeper
from specviz.ui.uploadlimit import UploadLimiter, UploadLimitMiddleware
from specviz.ui.validate import max_new_limit
from specviz.viz import legend_html

log = logging.getLogger(__name__)


class Explorer:
    """The app's parts, sharing one configuration, pair registry and run registry, and its handlers."""

    def __init__(
        self,
        config: AppConfig | None = None,
        registry: PairRegistry | None = None,
        *,
        presets: list[PairChoice] | None = None,
        preload: bool = True,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[RunControl, float], bool] = RunControl.pause,
    ):
        """``clock`` and ``pause``: the run loop's time, injectable so tests drive a live run's time
        explicitly (``ui.run_loop.RunLoop``)."""
        self.config = cfg = config or AppConfig.from_env()
        configure_torch_threads(cfg)
        self.algorithms = dict(ALGORITHMS)
        self.n_slots = cfg.max_columns
        self.pairs = PairLoader(
            cfg,
            registry or PairRegistry(cfg.max_pairs, cfg.device, cfg.dtype),
            presets if presets is not None else preset_choices(),
        )
        self.checker = RequestChecker(cfg, self.algorithms, self.n_slots, self.pairs)
        self.loop = RunLoop(cfg, self.checker, self.n_slots, clock=clock, pause=pause)
        self.scrubbing = Scrubbing(self.n_slots, cfg.max_step_delay_s)
        self.replays = Replay(cfg, self.pairs, self.algorithms, self.n_slots, self.loop.runs)
        self.layers = LayersView(self.n_slots, self.pairs.session_pair)  # the logit lens of a step on screen
        self.show_layers = self.layers.show
        self.registry, self.presets, self.runs = self.pairs.registry, self.pairs.presets, self.loop.runs
        self.page: Page | None = None  # once built
        self.editor: ColumnEditor | None = None  # once built
        # every handler under its own name, for callers in process (tests, bench/replay.py): ``ex.run(...)``
        self.load, self.pair_markdown, self.chat_default, self.toggle_custom = (
            self.pairs.load,
            self.pairs.pair_markdown,
            self.pairs.chat_default,
            self.pairs.toggle_custom,
        )
        self.check_inputs, self.input_message = self.checker.check_inputs, self.checker.input_message
        self.run, self.measure, self.stop, self.session_deleted, self.page_shown = (
            self.loop.run,
            self.loop.measure,
            self.loop.stop,
            self.loop.session_deleted,
            self.loop.page_shown,
        )
        self.scrub, self.prev, self.next, self.latest, self.play, self.select_node = (
            self.scrubbing.scrub,
            self.scrubbing.prev,
            self.scrubbing.next,
            self.scrubbing.latest,
            self.scrubbing.play,
            self.scrubbing.select_node,
        )
        self.upload, self.replay, self.replay_rest = self.replays.upload, self.replays.replay, self.replays.rest
        if preload:
            self.pairs.preload()

    def chat_example(self, index: Any, session: Any, progress: gr.Progress = gr.Progress()) -> list[Any]:
        """A click on a question: its prompt with chat on, on a pair with a chat template (loaded if the
        session's pair has none; issue 35 point 5)."""
        return self._example(examples.chat_example(index), True, session, progress)

    def code_example(self, index: Any, session: Any, progress: gr.Progress = gr.Progress()) -> list[Any]:
        """A click on a code example: its prompt with chat off, on the code pair (loaded if need be)."""
        return self._example(examples.code_example(index), False, session, progress)

    def _example(self, picked: list[Any], chat: bool, session: Any, progress: Any) -> list[Any]:
        """(prompt, chat, preset, pair line, session) of a picked example; nothing changes for anything but
        the index of one (``examples.example``)."""
        if isinstance(picked[0], dict):  # gr.skip(): not the index of an example
            return [*picked, gr.skip(), gr.skip(), self.pairs.session(session)]
        return [*picked, *self.pairs.for_example(chat, session, progress)]

    @property
    def default_key(self) -> str | None:
        """The default pair's registry key, once loaded."""
        return self.pairs.default_key

    @property
    def startup_message(self) -> str:
        """Why the default pair could not be loaded ("" if it was)."""
        return self.pairs.startup_message

    def default_algorithms(self) -> list[str]:
        """The algorithms the page opens with, one column each."""
        chosen = page_defaults(self.algorithms)[:4]  # each registration's page_rank
        return chosen or list(self.algorithms)[:2]

    # ---- the page ------------------------------------------------------------------------------------------
    def build(self) -> gr.Blocks:
        """The page, declared once, and its events, each wired to the part whose job it is."""
        private_temp_dir()  # before any component: each reads GRADIO_TEMP_DIR when it is made
        cfg = self.config
        default_algos = self.default_algorithms()
        choices = self.pairs.choices()
        default_choice = self.default_key or self.presets[0].key
        default_pair = self.registry.get(self.default_key)
        chat_on = default_pair is not None and default_pair.has_chat_template
        limit = max_new_limit(
            default_pair.context_length if default_pair is not None else None, 0, cfg.max_new_tokens_cap
        )

        # delete_cache: Gradio's copies of served files (trace downloads) older than an hour go hourly
        # SkipBlocks: a step's unchanged outputs (gr.skip()) cost the server nothing (skip_blocks.py)
        with SkipBlocks(
            title="specviz · speculative decoding explorer", fill_width=True, delete_cache=(3600, 3600)
        ) as demo:
            # a visitor's state expires (public: session_ttl_s after its last change) and Gradio keeps at
            # most session_capacity of them (launch_kwargs); a dropped state stops its run, if any
            loop = self.loop

            def session_deleted(state: Any) -> None:  # a function, not the bound method: see below
                loop.session_deleted(state)

            # Gradio deep-copies the page's config on every page load (routes.get_config); a bound
            # method there is copied with its object, which reaches the loaded models (2.5 GB and 5 s
            # a load for the default pair, and concurrent loads ran out of memory); a function is not
            session = gr.State(
                Session(pair_key=self.default_key), time_to_live=cfg.session_ttl_s, delete_callback=session_deleted
            )
            gr.HTML(HEADER_HTML, elem_id="sv-header")
            with gr.Sidebar(width=370, open=True, label="Settings", elem_id="sv-sidebar"):
                gr.Markdown("### Model pair")
                pair_choice = gr.Dropdown(
                    choices=choices, value=default_choice, label="preset", show_label=False, elem_id="sv-pair-choice"
                )
                note = next((p.note for p in self.presets if p.key == default_choice), "")  # the chosen preset's
                pair_note = gr.Markdown(note, elem_classes=["sv-note"])
                with gr.Group(visible=False) as custom_group:
                    custom_target = gr.Textbox(
                        label="target (hub id or local directory)",
                        placeholder="e.g. HuggingFaceTB/SmolLM2-1.7B",
                        elem_id="sv-target",
                    )
                    custom_draft = gr.Textbox(
                        label="draft (same tokenizer)",
                        placeholder="e.g. HuggingFaceTB/SmolLM2-135M",
                        elem_id="sv-draft",
                    )
                load_btn = gr.Button("Load pair", size="sm", elem_id="sv-load")
                pair_md = gr.Markdown(
                    self.pairs.pair_markdown(self.default_key), elem_id="sv-pair-status", elem_classes=["sv-note"]
                )

                gr.Markdown("### Columns")
                # a column is an algorithm with its settings; one algorithm may fill several (ui.editor)
                editor = self.editor = ColumnEditor.declare(self.algorithms, default_algos, self.n_slots)
                with gr.Accordion("What each algorithm does", open=False):
                    gr.Markdown(self._algorithm_guide())
                gr.Markdown("### Sampling")
                # NumberBox: every value, text and NaN included, reaches check_inputs, whose message names
                # the box and says what is allowed (Gradio's own checks show a bare "Error")
                with gr.Row():
                    max_new = NumberBox(
                        min(cfg.default_max_new_tokens, limit),
                        label="max new tokens",
                        precision=0,
                        info=f"at most {limit} minus the prompt's tokens",
                        elem_id="sv-max-new",
                    )
                    # text, not a number: a JavaScript number rounds whole numbers above 2^53 (validate.check_seed)
                    seed = SeedBox(
                        str(defaults.SEED),
                        label="seed",
                        info="0 to 2^63 − 1",
                        max_lines=1,
                        max_length=64,
                        elem_id="sv-seed",
                    )
                with gr.Row():
                    temperature = SliderBox(
                        *SLIDER_RANGES["temperature"],
                        value=defaults.TEMPERATURE,
                        step=0.05,
                        label="temperature",
                        info="0 = greedy",
                        elem_id="sv-temperature",
                    )
                    top_p = SliderBox(
                        *SLIDER_RANGES["top_p"], value=defaults.TOP_P, step=0.01, label="top-p", elem_id="sv-top-p"
                    )
                top_k = NumberBox(defaults.TOP_K, label="top-k", info="0 = off", precision=0, elem_id="sv-top-k")
                input_msg = gr.Markdown("", elem_id="sv-input-msg", elem_classes=["sv-note"])
                pace = SliderBox(
                    0,
                    cfg.max_step_delay_s,
                    value=min(cfg.default_pace_s, cfg.max_step_delay_s),
                    step=0.05,
                    label="pace (seconds per step, live)",
                    info="a live run takes at least this long per step so you can watch it; "
                    "0 = as fast as it goes. Measure is never paced."
                    + (
                        f" Here a run is paced for at most {cfg.max_wait_s} s in all, then goes at full speed."
                        if cfg.max_wait_s is not None
                        else ""
                    ),
                    elem_id="sv-pace",
                )
                gr.Markdown("### Replay a saved trace")
                upload = gr.File(
                    label=f"trace .json or .json.gz (up to {cfg.max_upload_bytes // 2**20} MB each)",
                    file_count="multiple",
                    file_types=[".json", ".gz"],
                    type="filepath",
                    elem_id="sv-upload",
                    height=110,
                )

            # ---- main area
            with gr.Row(equal_height=True, elem_id="sv-prompt-row"):
                prompt = gr.Textbox(
                    label="prompt",
                    lines=3,
                    max_lines=8,
                    scale=6,
                    elem_id="sv-prompt",
                    value=example_prompts(chat_on)[0],
                    max_length=cfg.max_prompt_chars,
                )
                with gr.Column(scale=1, min_width=130):
                    run_btn = gr.Button("Run ▶", variant="primary", elem_id="sv-run")
                    stop_btn = gr.Button("Stop ■", variant="stop", size="sm", interactive=False, elem_id="sv-stop")
                    chat = gr.Checkbox(
                        chat_on, label="chat", elem_id="sv-chat", info="as a user turn in the pair's chat template"
                    )
            # example pickers: gr.Dataset as gr.Examples draws it, with a handler of ours that checks the index
            # (gr.Examples' own load_example raised a raw TypeError on a hostile one)
            chat_examples = gr.Dataset(
                components=[prompt, chat],
                samples=[[p, True] for p in CHAT_PROMPTS],
                type="index",
                label="questions (chat on; a click loads a chat pair if need be)",
                elem_id="sv-examples-chat",
            )
            code_examples = gr.Dataset(
                components=[prompt, chat],
                samples=[[p, False] for p in CODE_PROMPTS],
                type="index",
                label="code (chat off; a click loads bundled-stdlib-pair if need be)",
                elem_id="sv-examples-code",
            )
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
            node_pick = gr.Textbox(
                elem_id="sv-node-pick", elem_classes=["sv-hidden"], show_label=False, container=False
            )
            # the page writes "step:nonce" here whenever it has drawn a live update (back-pressure)
            page_report = gr.Textbox(elem_id="sv-shown", elem_classes=["sv-hidden"], show_label=False, container=False)

            with gr.Row(equal_height=False, elem_id="sv-columns"):
                slots = [Slot.declare(i) for i in range(self.n_slots)]

            gr.Markdown("## Comparison", elem_id="sv-compare-title")
            table = gr.HTML(render.table_html(Session()), elem_id="sv-table")
            figures = declare_figures()
            gr.Markdown("## Measure", elem_id="sv-measure-title")
            with gr.Row(equal_height=True):
                measure_btn = gr.Button("Measure ⏱", size="sm", scale=0, min_width=120, elem_id="sv-measure-btn")
                gr.Markdown(
                    f"Times the columns on this prompt and settings, unpaced and interleaved: a "
                    f"warm-up round, then {cfg.measure_repeats} timed rounds; medians, what they ran under "
                    "and a verdict. Use these numbers, not a live run's, to compare speed.",
                    elem_classes=["sv-note"],
                )
            measurements = gr.HTML(measurements_html([]), elem_id="sv-measure")
            papers_view.declare()  # the shipped papers report (python -m specviz papers), static
            self.layer_parts = self.layers.declare()  # wired last in ``wire`` (fn_index is part of the API)
            notice = public_notice(cfg)  # the page's footer says public mode is on, and its limits
            gr.Markdown(notice, elem_id="sv-footer", elem_classes=["sv-note"], visible=bool(notice))

            page = Page(
                session=session,
                status=status,
                run_btn=run_btn,
                stop_btn=stop_btn,
                measure_btn=measure_btn,
                input_msg=input_msg,
                slider=slider,
                step_label=step_label,
                table=table,
                figures=figures,
                measurements=measurements,
                max_new=max_new,
                seed=seed,
                temperature=temperature,
                top_p=top_p,
                top_k=top_k,
                slots=slots,
            )
            controls = Controls(
                pair_choice=pair_choice,
                pair_note=pair_note,
                custom_group=custom_group,
                custom_target=custom_target,
                custom_draft=custom_draft,
                load_btn=load_btn,
                pair_md=pair_md,
                editor=editor,
                pace=pace,
                upload=upload,
                prompt=prompt,
                chat=chat,
                chat_examples=chat_examples,
                code_examples=code_examples,
                prev_btn=prev_btn,
                next_btn=next_btn,
                play_btn=play_btn,
                pause_btn=pause_btn,
                latest_btn=latest_btn,
                node_pick=node_pick,
                page_report=page_report,
            )
            self.page = page
            self.replays.bind(page, editor, upload)
            self.wire(page, controls)
        demo.queue(default_concurrency_limit=cfg.concurrency, max_size=cfg.queue_max_size)
        return demo

    def wire(self, page: Page, c: Controls) -> None:
        """Every event of the page, each to the part whose job it is. Every handler checks its inputs
        itself (an API client may send anything); Load pair, Run, Measure and Replay are the API."""
        cfg, session, outputs = self.config, page.session, page.outputs()
        pairs, checker, loop, scrubbing = self.pairs, self.checker, self.loop, self.scrubbing
        private = dict(api_visibility="private")
        # an event's progress is tracked on the components it names (show_progress_on), else on every
        # output; the page updates each tracked component's loading state, a search of the whole page,
        # on every message of every event afterwards, so an event sending the page's ~90 outputs (or
        # the editor's) without naming one cost each later live update ~0.3 s (issue 34)
        hidden_on = lambda component: dict(show_progress="hidden", show_progress_on=[component])  # noqa: E731
        # the pair and the prompt (in the order the page has always registered them: fn_index is part of the API)
        c.pair_choice.change(
            pairs.toggle_custom, [c.pair_choice], [c.custom_group, c.pair_note], queue=False, **private
        )
        # an example belongs to its pair: a click loads it where the session's pair does not serve it
        for picker, pick in ((c.chat_examples, self.chat_example), (c.code_examples, self.code_example)):
            picker.click(
                pick,
                [picker, session],
                [c.prompt, c.chat, c.pair_choice, c.pair_md, session],
                concurrency_limit=1,
                concurrency_id="load",
                show_progress="minimal",
                **private,
            )
        c.load_btn.click(
            gpu(pairs.load),
            [c.pair_choice, c.custom_target, c.custom_draft, session],
            [c.pair_md, session],
            concurrency_limit=1,
            concurrency_id="load",
            api_name="load_pair",
        ).then(pairs.chat_default, [session], [c.chat], queue=False, **private)
        # the columns and the sampling inputs
        c.editor.wire()
        # named inputs (``inputs_kwargs``): each value reaches the handler's parameter of that name; the API
        # takes them in this order, under these names
        checked_inputs = dict(
            session=session, prompt=c.prompt, max_new_tokens=page.max_new, top_k=page.top_k, seed=page.seed, chat=c.chat
        )
        for box in (page.max_new, page.top_k, page.seed, c.chat):
            box.change(
                page.wire(checker.input_message),
                outputs=outputs,
                inputs_kwargs=checked_inputs,
                queue=False,
                **hidden_on(page.input_msg),
                **private,
            )
        c.prompt.blur(
            page.wire(checker.input_message),
            outputs=outputs,
            inputs_kwargs=checked_inputs,
            queue=False,
            **hidden_on(page.input_msg),
            **private,
        )
        # runs
        run_inputs = dict(
            session=session,
            prompt=c.prompt,
            max_new_tokens=page.max_new,
            temperature=page.temperature,
            top_p=page.top_p,
            top_k=page.top_k,
            seed=page.seed,
            columns=c.editor.value,
            pace=c.pace,
            chat=c.chat,
        )
        run_kw = dict(
            inputs_kwargs=run_inputs,
            concurrency_limit=cfg.concurrency,
            concurrency_id="decode",
            show_progress="minimal",
            show_progress_on=[page.status],
            time_limit=600 if cfg.public else None,
            trigger_mode="once",
        )
        page.run_btn.click(gpu(page.wire(loop.run)), outputs=outputs, api_name="run", **run_kw)
        c.prompt.submit(gpu(page.wire(loop.run)), outputs=outputs, **private, **run_kw)
        page.measure_btn.click(gpu(page.wire(loop.measure)), outputs=outputs, api_name="measure", **run_kw)
        # no `cancels=`: a cancelled generator never sends its last update; the run ends itself
        page.stop_btn.click(
            page.wire(loop.stop), [session], outputs, queue=False, **hidden_on(page.stop_btn), **private
        )
        # steps
        view_kw = dict(concurrency_limit=8, concurrency_id="view", **hidden_on(page.step_label), **private)
        page.slider.input(
            page.wire(scrubbing.scrub), [session, page.slider], outputs, trigger_mode="always_last", **view_kw
        )
        # whatever moved the slider (scrub, buttons, play, a live run), move the step markers of
        # the comparison figures and the highlighted step of the texts in the browser
        page.slider.change(None, [page.slider], None, js=STEP_JS, queue=False, **private)
        c.prev_btn.click(page.wire(scrubbing.prev), [session], outputs, **view_kw)
        c.next_btn.click(page.wire(scrubbing.next), [session], outputs, **view_kw)
        c.latest_btn.click(page.wire(scrubbing.latest), [session], outputs, **view_kw)
        c.node_pick.change(page.wire(scrubbing.select_node), [session, c.node_pick], outputs, **view_kw)
        c.page_report.change(
            loop.page_shown, [session, c.page_report], None, queue=False, show_progress="hidden", **private
        )
        play_event = c.play_btn.click(
            page.wire(scrubbing.play),
            [session, c.pace],
            outputs,
            concurrency_limit=16,
            concurrency_id="play",
            **hidden_on(page.step_label),
            **private,
        )
        c.pause_btn.click(None, None, None, cancels=[play_event], queue=False, **private)
        # replay
        c.upload.upload(
            self.replays.replay,
            [c.upload, session],
            outputs + c.editor.outputs() + [c.upload],
            concurrency_limit=4,
            api_name="replay",
            show_progress_on=[page.status, c.upload],
        ).then(
            page.wire(self.replays.rest),
            [session],
            outputs,
            concurrency_limit=4,
            concurrency_id="replay_rest",
            **hidden_on(page.status),
            **private,
        )
        # the layer view of the step on screen (ui.layers_view): one target call when the step kept no lens
        column, button, plot, words = self.layer_parts
        button.click(
            gpu(self.layers.show),
            [session, column],
            [plot, words],
            concurrency_limit=2,
            concurrency_id="layers",
            show_progress="minimal",
            **private,
        )

    def _algorithm_guide(self) -> str:
        """The sidebar's "What each algorithm does": one line per registered algorithm."""
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
    kwargs = {
        "css": APP_CSS,
        "theme": theme(),
        "js": PAGE_JS,
        "max_file_size": config.max_upload_bytes,
        "footer_links": ["api", "gradio", "settings"],
        "run_history": False,
        "state_session_capacity": config.session_capacity,
    }
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
    if config.public:
        log.warning("%s", public_notice(config))  # at every start, as the page's footer says it
    temp = os.environ.get("GRADIO_TEMP_DIR", "")
    if os.path.basename(temp.rstrip(os.sep)).startswith("specviz-gradio-"):  # ours, not an operator's directory
        start_quota_sweeper(temp, config.max_temp_bytes)
    ours = launch_kwargs(config)
    if "_frontend" in inspect.signature(demo.launch).parameters:
        # Gradio asks for the page once before it returns, giving up at the first 3 s timeout with "When
        # localhost is not accessible, a shareable link must be created" and no app; the first page can
        # take longer on a busy CPU (a fresh-clone CI run lost the real pair's app so). The server is up
        # either way: skip that check (its only use of ``_frontend``; gradio 6.31).
        ours["_frontend"] = False
    if "app_kwargs" in ours and "app_kwargs" in kwargs:  # the caller's FastAPI arguments, and our middleware
        given = dict(kwargs["app_kwargs"] or {})
        given["middleware"] = [*given.get("middleware", []), *ours["app_kwargs"]["middleware"]]
        kwargs = {**kwargs, "app_kwargs": given}
    return demo.launch(**{**ours, **kwargs})
