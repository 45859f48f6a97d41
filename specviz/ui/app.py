"""The Gradio explorer, assembled from its parts: ``build()`` declares the page once (``ui.page_declare``)
and wires each event to the part whose job it is (``ui.events``). No maths here; everything is drawn from
traces.

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

import inspect
import logging
import os
import time
from typing import Any, Callable

import gradio as gr
from starlette.middleware import Middleware

from specviz.algorithms import ALGORITHMS
from specviz.algorithms.registry import page_defaults
from specviz.ui import events, examples
from specviz.ui.columns import param_value  # noqa: F401  (param_value: tests import it here)
from specviz.ui.config import AppConfig, check_exposure, configure_torch_threads, private_temp_dir, public_notice
from specviz.ui.editor import ColumnEditor, param_elem_id  # noqa: F401  (param_elem_id: tests import it here)
from specviz.ui.layers_view import LayersView
from specviz.ui.layout import Page
from specviz.ui.pacing import RunControl
from specviz.ui.page_declare import declare_page
from specviz.ui.pair_loading import CUSTOM, PairLoader  # noqa: F401  (CUSTOM: tests import it here)
from specviz.ui.pairs import PairChoice, PairRegistry, preset_choices
from specviz.ui.replay import Replay
from specviz.ui.request import RequestChecker
from specviz.ui.run_loop import RunLoop
from specviz.ui.runner import Session
from specviz.ui.scrubbing import Scrubbing
from specviz.ui.skip_blocks import SkipBlocks
from specviz.ui.style import APP_CSS, PAGE_JS, theme
from specviz.ui.trace_files import start_quota_sweeper
from specviz.ui.uploadlimit import UploadLimiter, UploadLimitMiddleware

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
        """The page, declared once (``ui.page_declare``), and its events, each wired to the part whose job it
        is (``ui.events``)."""
        private_temp_dir()  # before any component: each reads GRADIO_TEMP_DIR when it is made
        cfg = self.config
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
            page, controls, self.layer_parts = declare_page(
                cfg, session, self.pairs, self.algorithms, self.n_slots, self.default_algorithms(), self.layers
            )
            self.page, self.editor = page, controls.editor
            self.replays.bind(page, controls.editor, controls.upload)
            events.wire(self, page, controls)
        demo.queue(default_concurrency_limit=cfg.concurrency, max_size=cfg.queue_max_size)
        return demo


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
