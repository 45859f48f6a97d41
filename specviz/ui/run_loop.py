"""A live run and a Measure, from the button press to the last update: the request checked
(``ui.request``), one run per page at a time (``pacing.RunRegistry``), the visitor's rate and the
run's deadline, the columns advanced together and drawn as fast as the browser keeps up (or paced
for watching), Stop, and the page's reports of what it has drawn.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

import gradio as gr

from specviz.errors import SpecvizError
from specviz.ui import render
from specviz.ui.config import AppConfig
from specviz.ui.layout import View
from specviz.ui.measure import measure, measurements_html
from specviz.ui.pacing import FrameGate, RunControl, RunRegistry, Throttle
from specviz.ui.ratelimit import RunLimiter, visitor_key
from specviz.ui.request import RequestChecker, deadline, input_view, over_budget
from specviz.ui.runner import Session, advance, given_session, parse_prompt, start_columns, stop_columns
from specviz.ui.trace_files import export_finished
from specviz.ui.validate import check_pace
from specviz.ui.views import buttons, full_view, message_view

STREAM_INTERVAL_S = 0.25  # unpaced live column updates at most this often (and see Throttle)
COMPARE_INTERVAL_S = 15.0  # live comparison table and figures at most this often (seven figures to redraw)
PAGE_POLL_S = 0.05  # a paced run looks for the page's report of its last update this often
MEASURE_TICK_S = 1.0  # Measure hands control back to Gradio at least this often (client gone? stop)
BUSY = "A run is already going in this page: press Stop first."


class RunLoop:
    """Runs and measurements, one at a time per page (``runs``), within the visitors' rate (``limiter``)."""

    def __init__(
        self,
        config: AppConfig,
        checker: RequestChecker,
        n_slots: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[RunControl, float], bool] = RunControl.pause,
    ):
        """``clock`` (throttling, pacing, the page's patience, deadlines) and ``pause`` (waits up to the
        given seconds for the run's Stop, returns whether it came) are injectable so tests drive a live
        run's time explicitly."""
        self.config = config
        self.checker = checker
        self.n_slots = n_slots
        self.clock = clock
        self.pause = pause
        self.runs = RunRegistry()
        self.limiter = RunLimiter(config.max_runs_per_minute, clock)
        # a listener of the live loop's events (``specviz.bench.live`` times the page by them): called as
        # ``probe(event, **facts)`` with wall-clock times (``time.time``); None in the app
        self.probe: Callable[..., None] | None = None

    def _note(self, event: str, **facts: Any) -> None:
        if self.probe is not None:
            self.probe(event, **facts)

    def admit(self, session: Session, refusal: str | None) -> tuple[RunControl | None, View | None]:
        """A checked run or Measure starts here: refused (``refusal``, then the visitor's rate), or busy
        (a run already going in this page), each as the page's message; else its ``RunControl``."""
        refusal = refusal or self.limiter.allow(visitor_key(session))
        control = None if refusal else self.runs.begin(id(session))
        if control is None:
            return None, message_view(session, refusal or BUSY)
        return control, None

    def _request(self, session: Any, inputs: dict[str, Any]) -> tuple[Session, Any]:
        """The session (with its pair) and the request of a run or a Measure, every value checked here
        (``RequestChecker.check``) whoever sent it."""
        session = self.checker.pairs.session(session)
        return session, self.checker.check(session, **inputs)

    def run(
        self,
        session: Session,
        *,
        prompt: str,
        max_new_tokens: float,
        temperature: float,
        top_p: float,
        top_k: float,
        seed: float,
        columns: list[Any],
        pace: float,
        chat: bool,
    ) -> Iterator[View]:
        """Run the columns side by side (``columns``: each an algorithm and its settings, ``ui.columns``),
        yielding the page as the steps come in. ``chat`` formats the prompt as a user turn in the pair's
        chat template. The page passes every value by its parameter's name (``events.wire_runs``).

        Paced (``pace`` seconds per step at least, for watching; the page's draw of the step before is
        part of the pace, within the run's waiting budget) or, unpaced, throttled (``_stream``). Stop sets
        this run's flag; the run notices between two steps and ends with its own update, marked "stopped".
        Its last update re-sends every panel in full."""
        inputs = dict(prompt=prompt, max_new_tokens=max_new_tokens, top_k=top_k, seed=seed, columns=columns, chat=chat)
        session, req = self._request(session, {**inputs, "temperature": temperature, "top_p": top_p})
        if req.refusal:
            yield {**message_view(session, req.refusal), **(input_view(req.checked) if req.checked else {})}
            return
        pace, problem = check_pace(pace, self.config.max_step_delay_s)
        control, refused = self.admit(
            session, problem or over_budget(req.columns, req.checked.max_new_tokens, self.config)
        )
        if refused:
            yield refused
            return
        budget = WaitBudget(control, self.config.max_wait_s, deadline(self.config.run_deadline_s, self.clock), self)
        session.run_id += 1
        run_id = session.run_id
        # the comparison figures on screen show steps (an earlier run's, a replay's): the opening view
        # clears them; else (a page's first run) it leaves them blank until the run has some to compare
        compared = any(c.n_steps for c in session.columns)
        self._start(session, req, prompt, float(temperature), float(top_p), chat, pace)
        try:
            self._note("start", t=time.time())
            opening = full_view(session, self.n_slots, force=True, compare=compared)
            yield {**opening, "table": render.table_html(session), **buttons(True), **input_view(req.checked)}
            yield from self._stream(session, control, pace, budget)
            yield self._last_view(session, control, budget.expired)
        finally:
            self.runs.end(id(session), control)
            if session.run_id == run_id:
                session.running = False
                stop_columns(session.columns)

    def _start(
        self, session: Session, req: Any, prompt: str, temperature: float, top_p: float, chat: bool, pace: float
    ) -> None:
        """The checked request's columns started on ``session`` (same pair, prompt, seed and sampling), live."""
        checked = req.checked
        session.columns = start_columns(
            req.pair,
            prompt,
            req.columns,
            max_new_tokens=checked.max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            top_k=checked.top_k,
            seed=checked.seed,
            chat=chat,
        )
        session.step, session.source, session.running, session.pace = None, "live", True, pace

    def _stream(self, session: Session, control: RunControl, pace: float, budget: "WaitBudget") -> Iterator[View]:
        """The live updates after the opening view, until every column is done, Stop or the deadline.
        Unpaced, decoding never waits for the browser: a step is sent only once the page has drawn the
        update before it (``pacing.FrameGate``); the steps decoded meanwhile are not drawn (nothing is
        computed for them; the latest step wins, and the slider shows them all afterwards)."""
        cols = session.columns
        throttle = Throttle(STREAM_INTERVAL_S, clock=self.clock)
        compare_throttle = Throttle(COMPARE_INTERVAL_S, ratio=0.0, clock=self.clock)
        gate = FrameGate(self.config.page_wait_s)
        throttle(force=True)
        compare_throttle(force=True)  # the opening view drew (or left) the comparison: not the first step
        gate.sent(session.n_steps, self.clock())
        last = self.clock()
        while True:
            t_dec = time.time()
            going = advance(cols, budget.should_stop)
            self._note("decoded", t=time.time(), seconds=time.time() - t_dec, steps=session.n_steps)
            if not going or budget.should_stop():
                return
            paced = pace > 0 and budget.left > 0
            if paced:
                if budget.wait(pace - (self.clock() - last)):
                    return  # stopped while pausing
                last = self.clock()
            if budget.expired():
                return
            t_ready = time.time()  # decoded and paced: what follows is display (the benchmark's overhead)
            reports = control.page_reports or session.page_reports
            # paced (for watching): the page's draw of the last step is part of the pace, within the
            # run's waiting budget; polled in PAGE_POLL_S slices of ``pause``, which a Stop ends at once
            while paced and not gate.ready(control.shown_step, reports, self.clock()):
                if budget.wait(PAGE_POLL_S):
                    break
                paced = budget.left > 0
            if control.stopped():
                return
            # unpaced, the page still drawing the last update: this step is not drawn (decoding goes
            # on; the latest step wins), and not throttled away either, so the next ready step goes at once
            if not gate.ready(control.shown_step, reports, self.clock()) or (not paced and not throttle()):
                continue
            t_out, left = self.clock(), budget.left
            yield self._update(session, throttle, compare_throttle, gate, t_ready)
            if paced:  # sending a paced step is pacing too
                budget.left = min(budget.left, left - (self.clock() - t_out))

    def _update(
        self, session: Session, throttle: Throttle, compare_throttle: Throttle, gate: FrameGate, t_ready: float
    ) -> View:
        """One live update. Every one carries the texts: each is sent as Gradio's difference from the one
        before, the new steps' tokens (``ui.textbox``), so a skipped one would make the next go whole."""
        t0, t_build = time.perf_counter(), time.time()
        out = full_view(session, self.n_slots, compare=compare_throttle())
        throttle.rendered(time.perf_counter() - t0)
        gate.sent(session.n_steps, self.clock())
        now = time.time()
        self._note("update", steps=session.n_steps, t_ready=t_ready, t_build=t_build, t_built=now, t_yield=now)
        return out

    def _last_view(self, session: Session, control: RunControl, expired: Callable[[], bool]) -> View:
        """The run's last update, every panel in full: stopped (Stop, or the deadline, said in a note) or
        finished (each column pinned on its opening step), the traces exported."""
        cols = session.columns
        timed_out = expired() and not control.stopped() and any(not c.done for c in cols)
        if control.stopped() or timed_out:
            stop_columns(cols)
        else:
            for c in cols:
                if c.trace is not None and c.trace.steps and not c.error:
                    c.pin = render.opening_step(c.trace)
        export_finished(cols, self.config.max_export_bytes)
        session.running = False
        note = (
            (
                f'<span class="sv-bad">⚠ stopped: a run may take {self.config.run_deadline_s} s on this app '
                "(ask for fewer tokens or algorithms)</span>"
            )
            if timed_out
            else ""
        )
        t_ready = time.time()
        last_view = {**full_view(session, self.n_slots, note, force=True), **buttons(False)}
        self._note(
            "update", steps=session.n_steps, t_ready=t_ready, t_built=time.time(), t_yield=time.time(), final=True
        )
        return last_view

    def measure(
        self,
        session: Session,
        *,
        prompt: str,
        max_new_tokens: float,
        temperature: float,
        top_p: float,
        top_k: float,
        seed: float,
        columns: list[Any],
        pace: float,
        chat: bool,
    ) -> Iterator[View]:
        """Time the columns (each an algorithm and its settings) one after another, unpaced, with a warm-up
        and repeats (medians): one row per column. ``pace`` is not used (Measure is never paced). The
        values come by name, as Run's."""
        inputs = dict(prompt=prompt, max_new_tokens=max_new_tokens, top_k=top_k, seed=seed, columns=columns, chat=chat)
        session, req = self._request(session, {**inputs, "temperature": temperature, "top_p": top_p})
        if req.refusal:
            yield message_view(session, req.refusal)
            return
        control, refused = self.admit(
            session, over_budget(req.columns, req.checked.max_new_tokens, self.config, measure=True)
        )
        if refused:
            yield refused
            return
        expired = deadline(self.config.run_deadline_s, self.clock)
        checked = req.checked
        try:
            yield {"measurements": measurements_html([], "starting…"), **buttons(True)}
            rows, note = [], ""
            # it yields at least every MEASURE_TICK_S of decoding, so Gradio can end it when its client
            # has gone (a generator is only dropped at a yield) and Stop and the deadline act between steps
            for note, rows in measure(
                req.pair,
                parse_prompt(req.pair, prompt),
                req.columns,
                repeats=self.config.measure_repeats,
                should_stop=lambda: control.stopped() or expired(),
                clock=self.clock,
                tick_s=MEASURE_TICK_S,
                max_new_tokens=checked.max_new_tokens,
                temperature=float(temperature),
                top_p=float(top_p),
                top_k=checked.top_k,
                seed=checked.seed,
                chat=chat,
            ):
                yield {"measurements": measurements_html(rows, note)}
            if expired() and not control.stopped() and note.startswith("stopped"):
                note += f": a Measure may take {self.config.run_deadline_s} s on this app"
            yield {"measurements": measurements_html(rows, note), **buttons(False)}
        except SpecvizError as exc:
            yield {"measurements": measurements_html([], f"Could not measure: {exc}"), **buttons(False)}
        finally:
            self.runs.end(id(session), control)

    def stop(self, session: Session) -> View:
        """Ask this page's run (or measurement) to stop. The run ends itself between two steps with an
        update showing what ran, marked "stopped"; this only flags it and greys the button."""
        control = self.control(session)
        if control is None:
            return {}
        control.stop()
        return {"stop_btn": gr.Button(interactive=False)}

    def session_deleted(self, session: Any) -> None:
        """Gradio dropped a visitor's state (expired, over capacity, or the tab closed): stop its run,
        if one is going, and let its traces go."""
        session = given_session(session)
        if session is None:
            return
        control = self.runs.get(id(session))
        if control is not None:
            control.stop()
        if not session.running:
            for c in session.columns:
                c.cache.clear()  # a long replay's theory figure (ui.stepcache), whoever still holds the column
            session.columns = []

    def page_shown(self, session: Session, report: str) -> None:
        """The page reports (``PAGE_JS``, ``"step:nonce"``) that it has drawn a live update (step 0 as
        soon as it loads: from then on the session's live updates go out as it draws them,
        ``pacing.FrameGate``). Anything else (not text, a sign, over 64 characters) is ignored. A
        report only lets the next update go: a page that stops reporting is sent one at least every
        ``config.page_wait_s``, and decoding never waits for it."""
        if not isinstance(report, str) or len(report) > 64:
            return
        head = report.split(":")[0].strip()
        if (
            not (head.isascii() and head.isdigit()) or len(head) > 9
        ):  # digits only: no sign, no "1_000", no unicode digits
            return
        given = given_session(session)
        if given is not None:
            given.page_reports = True
        control = self.control(session)
        if control is None:
            return
        self._note("reported", step=int(head), t=time.time())
        control.report_shown(int(head))

    def control(self, session: Any) -> RunControl | None:
        """The run going in this session's page, if any."""
        session = given_session(session)
        return self.runs.get(id(session)) if session is not None else None


class WaitBudget:
    """A live run's waiting (pace, and the page's draw of a paced step) within ``max_wait_s`` in all (None:
    no cap), and its stop conditions: Stop and the deadline (``expired``), all by the loop's ``clock``."""

    def __init__(self, control: RunControl, max_wait_s: float | None, expired: Callable[[], bool], loop: RunLoop):
        self.control, self.expired, self.clock, self.pause = control, expired, loop.clock, loop.pause
        self.left = float("inf") if max_wait_s is None else float(max_wait_s)

    def wait(self, seconds: float) -> bool:
        """Wait at most ``seconds`` (cut to what is left of the budget) for Stop; whether it came. The time
        waited counts against the budget and, like everything, against the deadline."""
        seconds = min(seconds, self.left)
        if seconds <= 0:
            return self.control.stopped()
        t0 = self.clock()
        try:
            return self.pause(self.control, seconds)
        finally:
            self.left -= max(0.0, self.clock() - t0)

    def should_stop(self) -> bool:
        return self.control.stopped() or self.expired()
