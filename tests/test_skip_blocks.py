"""``SkipBlocks``: a run's updates reach the client as Gradio's own ``Blocks`` sends them, and the
outputs a step leaves unchanged (``gr.skip()``) cost no component rebuild or config.

Two differences, both Gradio quirks of a skip that SkipBlocks does not reproduce: Gradio sends a
skipped ``gr.HTML`` as ``{"__type__": "update", "props": {"__type__": "update"}}`` (its HTML branch
copies the update's ``__type__`` into ``props``; both mean "no change"), and it resets the session's
stored config value of a skipped component to the constructor's (read only for deep links);
SkipBlocks keeps the last value sent. Everything else, component arguments included, is equal.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import gradio as gr
import pytest
from gradio.state_holder import SessionState
from test_handlers_fuzz import base_inputs
from test_ui_support import save_tiny_pair

from specviz.ui import AppConfig, Explorer, Session
from specviz.ui.pairs import PairChoice
from specviz.ui.skip_blocks import SKIP, SkipBlocks


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    dirs = save_tiny_pair(tmp_path_factory.mktemp("skip-pair"))
    cfg = dataclasses.replace(AppConfig(), default_max_new_tokens=6)
    ex = Explorer(cfg, presets=[PairChoice("tiny", *dirs)], clock=lambda: 0.0, pause=lambda control, s: False)
    demo = ex.build()
    assert isinstance(demo, SkipBlocks)
    return demo, ex


def run_updates(demo: gr.Blocks, ex: Explorer) -> tuple[int, list[dict]]:
    """The run handler's fn_index and every update it yields for a short two-column run."""
    i, block_fn = next((i, f) for i, f in demo.fns.items() if f.name == "run")
    args = base_inputs(ex, block_fn)  # a short valid run of ar; two columns here
    args[2], args[7] = 6, ["ar", "sd"]
    args = [Session(pair_key=ex.default_key) if b.stateful else a for b, a in zip(block_fn.inputs, args)]
    names = list(block_fn.input_keyword_names)  # the inputs passed by name (``inputs_kwargs``), last
    positional, named = args[: len(args) - len(names)], dict(zip(names, args[len(args) - len(names) :]))
    return i, list(block_fn.fn(*positional, **named))  # each {component: value}: Gradio skips the outputs not named


def postprocessed(demo: gr.Blocks, fn_index: int, updates: list[dict], plain: bool) -> tuple[list, dict]:
    """What the client receives for each update, and the session's component configs afterwards, through
    ``SkipBlocks`` or through Gradio's own ``Blocks.postprocess_data``."""
    block_fn = demo.fns[fn_index]
    state = SessionState(demo)
    process = gr.Blocks.postprocess_data if plain else SkipBlocks.postprocess_data
    sent = [asyncio.run(process(demo, block_fn, dict(u), state)) for u in updates]
    ids = [b._id for b in block_fn.outputs if not b.stateful]
    return sent, {k: state.config_values.get(k) for k in ids}


def as_json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def sent_as(value):
    """An output as the client reads it: Gradio's skipped HTML (props holding the skip) is a skip."""
    return SKIP if isinstance(value, dict) and value == {**SKIP, "props": SKIP} else value


def without_values(config: dict | None) -> dict | None:
    return None if config is None else {**config, "props": {k: v for k, v in config["props"].items() if k != "value"}}


def test_the_client_receives_what_gradio_sends(app):
    demo, ex = app
    fn_index, updates = run_updates(demo, ex)
    outputs = len(demo.fns[fn_index].outputs)
    assert len(updates) > 2 and any(len(u) < outputs // 2 for u in updates)  # steps that change few outputs
    ours, our_configs = postprocessed(demo, fn_index, updates, plain=False)
    theirs, their_configs = postprocessed(demo, fn_index, updates, plain=True)
    assert [as_json(x) for x in ours] == [as_json([sent_as(v) for v in x]) for x in theirs]
    assert as_json({k: without_values(c) for k, c in our_configs.items()}) == as_json(
        {k: without_values(c) for k, c in their_configs.items()}
    )


def test_skipped_outputs_cost_no_config(app, monkeypatch):
    demo, ex = app
    fn_index, updates = run_updates(demo, ex)
    block_fn = demo.fns[fn_index]
    state = SessionState(demo)
    calls = []
    real = type(demo.default_config).config_for_block

    def counting(_id, *args, **kwargs):
        calls.append(_id)
        return real(_id, *args, **kwargs)

    monkeypatch.setattr(type(demo.default_config), "config_for_block", staticmethod(counting))
    update = next(u for u in updates if 1 <= len(u) < len(block_fn.outputs) // 2)
    sent = asyncio.run(SkipBlocks.postprocess_data(demo, block_fn, dict(update), state))
    skipped = [i for i, b in enumerate(block_fn.outputs) if b not in update]
    assert all(sent[i] == SKIP for i in skipped if not block_fn.outputs[i].stateful)
    assert len({block_fn.outputs[i]._id for i in skipped} & set(calls)) <= 1  # one kept beside a single change
    theirs = SessionState(demo)
    calls.clear()
    asyncio.run(gr.Blocks.postprocess_data(demo, block_fn, dict(update), theirs))
    assert len(calls) > 2 * len(skipped) - 4  # Gradio's own: each skip's config, twice
