"""Every event of the page, each wired to the part whose job it is (``ui.app.Explorer`` holds the parts).
Every handler checks its inputs itself (an API client may send anything); Load pair, Run, Measure and
Replay are the API. The events are registered in the order the page has always registered them: a
handler's fn_index is part of the API. ``ex`` is the ``ui.app.Explorer`` (its parts and handlers), typed
``Any`` here so this module does not import the one that imports it."""

from __future__ import annotations

from typing import Any

import gradio as gr

from specviz.ui.gpu import gpu
from specviz.ui.layout import Controls, Page
from specviz.ui.style import STEP_JS

PRIVATE = dict(api_visibility="private")


def hidden_on(component: gr.components.Component) -> dict[str, Any]:
    """Progress shown on ``component`` alone, hidden. An event's progress is tracked on the components it
    names (show_progress_on), else on every output; the page updates each tracked component's loading
    state, a search of the whole page, on every message of every event afterwards, so an event sending
    the page's ~90 outputs (or the editor's) without naming one cost each later live update ~0.3 s
    (issue 34)."""
    return dict(show_progress="hidden", show_progress_on=[component])


def wire(ex: Any, page: Page, c: Controls) -> None:
    """All of them, in their order."""
    wire_pair(ex, page, c)
    c.editor.wire()  # the columns
    wire_inputs(ex, page, c)
    wire_runs(ex, page, c)
    wire_steps(ex, page, c)
    wire_replay(ex, page, c)
    wire_layers(ex, page)


def wire_pair(ex: Any, page: Page, c: Controls) -> None:
    """The preset chooser, the example pickers (an example belongs to its pair: a click loads it where
    the session's pair does not serve it) and Load pair."""
    pairs, session = ex.pairs, page.session
    c.pair_choice.change(pairs.toggle_custom, [c.pair_choice], [c.custom_group, c.pair_note], queue=False, **PRIVATE)
    for picker, pick in ((c.chat_examples, ex.chat_example), (c.code_examples, ex.code_example)):
        picker.click(
            pick,
            [picker, session],
            [c.prompt, c.chat, c.pair_choice, c.pair_md, session],
            concurrency_limit=1,
            concurrency_id="load",
            show_progress="minimal",
            **PRIVATE,
        )
    c.load_btn.click(
        gpu(pairs.load),
        [c.pair_choice, c.custom_target, c.custom_draft, session],
        [c.pair_md, session],
        concurrency_limit=1,
        concurrency_id="load",
        api_name="load_pair",
    ).then(pairs.chat_default, [session], [c.chat], queue=False, **PRIVATE)


def wire_inputs(ex: Any, page: Page, c: Controls) -> None:
    """The sampling inputs and the prompt, checked as they change. Named inputs (``inputs_kwargs``): each
    value reaches the handler's parameter of that name."""
    checked_inputs = dict(
        session=page.session,
        prompt=c.prompt,
        max_new_tokens=page.max_new,
        top_k=page.top_k,
        seed=page.seed,
        chat=c.chat,
    )
    check = dict(
        outputs=page.outputs(), inputs_kwargs=checked_inputs, queue=False, **hidden_on(page.input_msg), **PRIVATE
    )
    for box in (page.max_new, page.top_k, page.seed, c.chat):
        box.change(page.wire(ex.checker.input_message), **check)
    c.prompt.blur(page.wire(ex.checker.input_message), **check)


def wire_runs(ex: Any, page: Page, c: Controls) -> None:
    """Run (the button and the prompt's Enter), Measure and Stop; the API takes a run's inputs in this
    order, under these names."""
    cfg, loop, outputs = ex.config, ex.loop, page.outputs()
    run_inputs = dict(
        session=page.session,
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
    c.prompt.submit(gpu(page.wire(loop.run)), outputs=outputs, **PRIVATE, **run_kw)
    page.measure_btn.click(gpu(page.wire(loop.measure)), outputs=outputs, api_name="measure", **run_kw)
    # no `cancels=`: a cancelled generator never sends its last update; the run ends itself
    page.stop_btn.click(
        page.wire(loop.stop), [page.session], outputs, queue=False, **hidden_on(page.stop_btn), **PRIVATE
    )


def wire_steps(ex: Any, page: Page, c: Controls) -> None:
    """The step slider and its buttons, a click on a tree node, the page's reports of what it drew, and
    playback (pause cancels it)."""
    scrubbing, session, outputs = ex.scrubbing, page.session, page.outputs()
    view_kw = dict(concurrency_limit=8, concurrency_id="view", **hidden_on(page.step_label), **PRIVATE)
    page.slider.input(
        page.wire(scrubbing.scrub), [session, page.slider], outputs, trigger_mode="always_last", **view_kw
    )
    # whatever moved the slider (scrub, buttons, play, a live run), move the step markers of
    # the comparison figures and the highlighted step of the texts in the browser
    page.slider.change(None, [page.slider], None, js=STEP_JS, queue=False, **PRIVATE)
    c.prev_btn.click(page.wire(scrubbing.prev), [session], outputs, **view_kw)
    c.next_btn.click(page.wire(scrubbing.next), [session], outputs, **view_kw)
    c.latest_btn.click(page.wire(scrubbing.latest), [session], outputs, **view_kw)
    c.node_pick.change(page.wire(scrubbing.select_node), [session, c.node_pick], outputs, **view_kw)
    c.page_report.change(
        ex.loop.page_shown, [session, c.page_report], None, queue=False, show_progress="hidden", **PRIVATE
    )
    play_event = c.play_btn.click(
        page.wire(scrubbing.play),
        [session, c.pace],
        outputs,
        concurrency_limit=16,
        concurrency_id="play",
        **hidden_on(page.step_label),
        **PRIVATE,
    )
    c.pause_btn.click(None, None, None, cancels=[play_event], queue=False, **PRIVATE)


def wire_replay(ex: Any, page: Page, c: Controls) -> None:
    """An upload replays its traces (the columns first, then ``Replay.rest`` the comparison)."""
    outputs = page.outputs()
    c.upload.upload(
        ex.replays.replay,
        [c.upload, page.session],
        outputs + c.editor.outputs() + [c.upload],
        concurrency_limit=4,
        api_name="replay",
        show_progress_on=[page.status, c.upload],
    ).then(
        page.wire(ex.replays.rest),
        [page.session],
        outputs,
        concurrency_limit=4,
        concurrency_id="replay_rest",
        **hidden_on(page.status),
        **PRIVATE,
    )


def wire_layers(ex: Any, page: Page) -> None:
    """The layer view of the step on screen (``ui.layers_view``): one target call when the step kept no lens."""
    column, button, plot, words = ex.layer_parts
    button.click(
        gpu(ex.layers.show),
        [page.session, column],
        [plot, words],
        concurrency_limit=2,
        concurrency_id="layers",
        show_progress="minimal",
        **PRIVATE,
    )
