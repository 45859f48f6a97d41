"""Every registered event handler checks its inputs on the server (issue #21, point 2).

Each ``fn_index`` of the built Blocks, listed in the API or not, is called in-process through Gradio's
own ``Blocks.process_api`` (preprocessing, the call, postprocessing, a generator driven to its end) with
hostile values in every input, and its function is also called directly (bypassing Gradio's component
preprocessing, as a changed Gradio or a future component might) with the same values and with
session state of the wrong type. Expected: a normal return or a ``gr.Error``, never another exception;
no traceback, exception text or server path in anything returned; no pair loaded or dropped, no run
left holding a slot, no file written in the working directory.

Bounded: the public configuration with two new tokens at most, an explicit clock that never moves (no
throttled intermediate views, no waiting), one fixed list of values; a handler registered several
times (the prompt's Enter and the Run button) gets the full grid once and one value per input after.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
import os
import re
from typing import Any, Iterator

import gradio as gr
import pytest
from gradio.state_holder import SessionState
from test_ui_support import run_inputs, save_tiny_pair

from specviz.ui import AppConfig, Explorer, Session
from specviz.ui.numberbox import NumberBox, SeedBox, SliderBox
from specviz.ui.pairs import PairChoice
from specviz.validation import MAX_SEED

HOSTILE: list[Any] = [
    None,
    math.nan,
    math.inf,
    -1,
    2**70,
    True,
    "",
    "x" * 100_000,
    [1, 2],
    ["sd", "ar"],
    {"a": 1},
    "-1:x",
    "../../etc/passwd",
    "<img src=x onerror=alert(1)>",
]
WRONG_STATES: list[Any] = [None, "", 0, {"pair_key": "x"}, ["a"], "../../etc/passwd"]

# what must never reach a visitor: a traceback, a raw exception's text, a path on the server
LEAKS = re.compile(
    r"Traceback|File \"|site-packages|/work/|/tmp/|\b[A-Z]\w*(Error|Exception): "
    r"|<img src=x onerror"
)


class Still:
    """A clock that never moves, with waits that return at once: a run's time is the test's."""

    def __call__(self) -> float:
        return 0.0

    @staticmethod
    def pause(control, seconds):
        return control.stopped()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    dirs = save_tiny_pair(tmp_path_factory.mktemp("fuzz-pair"))
    cfg = dataclasses.replace(
        AppConfig.public_defaults(),
        max_new_tokens_cap=2,
        default_max_new_tokens=2,
        max_columns=2,
        measure_repeats=1,
        max_runs_per_minute=None,
    )
    clock = Still()
    ex = Explorer(cfg, presets=[PairChoice("tiny", *dirs)], clock=clock, pause=clock.pause)
    assert ex.default_key is not None
    demo = ex.build()
    return demo, ex


def strings(value: Any) -> Iterator[str]:
    """Every string inside a returned value (dicts, lists, component updates)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in ("path", "url"):  # a served file's own location (Gradio serves it by URL)
                yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)
    elif isinstance(value, gr.blocks.Block):  # a component update, as a handler returns it: what it shows
        for name in ("label",) if isinstance(value, (gr.File, gr.DownloadButton)) else ("value", "label", "info"):
            yield from strings(getattr(value, name, None))


def assert_clean(outputs: list[Any], what: str) -> None:
    for s in strings(outputs):
        leak = LEAKS.search(s)
        assert leak is None, f"{what} returned {leak.group(0)!r} in {s[max(0, leak.start() - 80) : leak.end() + 80]!r}"


class FreshState(SessionState):
    """A new visitor's ``SessionState`` whose component configs are computed when first needed: Gradio's
    own computes every component's config up front (a deep link's copy, ~0.05 s for this page); the
    handlers read configs only through the lazy paths (``_update_value_in_config``), so what they see and
    return is the same, at a fraction of the fuzz's time."""

    def __init__(self, blocks: gr.Blocks):
        config_for_block = type(blocks.default_config).config_for_block
        type(blocks.default_config).config_for_block = staticmethod(lambda *a, **k: {})  # skipped up front
        try:
            super().__init__(blocks)
        finally:
            type(blocks.default_config).config_for_block = staticmethod(config_for_block)
        self.config_values = {}


def through_gradio(demo: gr.Blocks, fn_index: int, inputs: list[Any]) -> list[Any]:
    """What Gradio's routes do with one event: ``process_api``, then its iterator until the end."""

    async def go() -> list[Any]:
        state = FreshState(demo)
        res = await demo.process_api(fn_index, list(inputs), state, session_hash="fuzz", event_id="e")
        outs = [res["data"]]
        while res.get("is_generating"):
            res = await demo.process_api(
                fn_index, [], state, iterator=res["iterator"], session_hash="fuzz", event_id="e"
            )
            outs.append(res["data"])
        return outs

    return asyncio.run(go())


def preprocessed(demo: gr.Blocks, fn_index: int, inputs: list[Any]) -> bool:
    """Whether Gradio's own preprocessing accepts these inputs (if not, the handler is never called and
    the client gets Gradio's refusal)."""
    try:
        asyncio.run(demo.preprocess_data(demo.fns[fn_index], list(inputs), FreshState(demo)))
    except Exception:  # noqa: BLE001 - any refusal of Gradio's
        return False
    return True


def named(block_fn: Any, args: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """``args`` (in the order of ``block_fn.inputs``) as Gradio passes them: the named inputs
    (``inputs_kwargs``, last) by name, the others in order."""
    names = list(block_fn.input_keyword_names)
    n = len(args) - len(names)
    return list(args[:n]), dict(zip(names, args[n:]))


def directly(block_fn: Any, args: list[Any]) -> list[Any]:
    positional, keywords = named(block_fn, args)
    out = block_fn.fn(*positional, **keywords)
    return list(out) if isinstance(out, Iterator) else [out]


def base_inputs(ex: Explorer, block_fn: Any) -> list[Any]:
    """Valid values for every input: the components' own, and for a run a short one of ``ar``."""
    base = [getattr(b, "value", None) for b in block_fn.inputs]
    if block_fn.name in ("run", "measure"):
        given = {"prompt": "def f(x):\n", "max_new_tokens": 2, "columns": ["ar"]}
        for name, value in given.items():
            base[block_fn.input_parameter_names.index(name)] = value
    return base


def ours(demo: gr.Blocks) -> Iterator[tuple[int, Any]]:
    """(fn_index, block_fn) of every handler with a Python function: all of them are the app's (the
    example pickers too: no gr.Examples, whose own ``load_example`` raised a raw TypeError)."""
    for i, block_fn in demo.fns.items():
        if block_fn.fn is not None:
            yield i, block_fn


def grid(ex: Explorer, demo: gr.Blocks) -> Iterator[tuple[int, Any, int, Any, list[Any], bool]]:
    """(fn_index, block_fn, input index, hostile value, inputs, through Gradio too) for every handler
    with a function. Directly, each distinct handler gets every value in every input (one value per
    input where it is registered again); through Gradio (about 0.3 s a call for the 59-input run),
    a handler of few inputs gets every value, a larger one a different value in each of its first ten
    inputs and every fourth parameter (the Enter key's copy of Run: its first ten)."""
    seen: set[tuple[str, int]] = set()
    for i, block_fn in ours(demo):
        base = base_inputs(ex, block_fn)
        full = (block_fn.name, len(block_fn.inputs)) not in seen
        seen.add((block_fn.name, len(block_fn.inputs)))
        few = len(block_fn.inputs) <= 6
        for j, block in enumerate(block_fn.inputs):
            if block.stateful:
                continue
            rotated = HOSTILE[(i + j) % len(HOSTILE)]
            for v in HOSTILE if full else [rotated]:
                args = list(base)
                args[j] = v
                yield i, block_fn, j, v, args, few or v is rotated and (j < 10 or full and j % 4 == 0)


def snapshot(ex: Explorer) -> list[tuple[str, int]]:
    """The shared pair registry: which pairs are loaded, as which objects (a reload would show)."""
    return sorted((key, id(pair)) for key, pair in ex.registry._pairs.items())


def test_every_handler_is_called(app):
    demo, ex = app
    named = {f.name for f in demo.fns.values() if f.fn is not None}
    for needed in (
        "load",
        "run",
        "measure",
        "stop",
        "scrub",
        "select_node",
        "page_shown",
        "play",
        "replay",
        "input_message",
        "toggle_custom",
        "on_algorithms",
        "on_pick",
        "on_duplicate",
        "on_remove",
        "on_setting",
        "param_visibility",
        "chat_default",
        "chat_example",
        "code_example",
    ):
        assert needed in named
    assert {i for i, *_, gradio in grid(ex, demo) if gradio} == {
        i for i, f in ours(demo) if any(not b.stateful for b in f.inputs)
    }
    assert "load_example" not in named  # gr.Examples' handler: replaced by the app's example pickers
    assert all(not inspect.unwrap(f.fn).__module__.startswith("gradio") for i, f in ours(demo))


def test_hostile_values_through_gradio_and_directly(app, tmp_path, monkeypatch):
    demo, ex = app
    monkeypatch.chdir(tmp_path)
    pairs = snapshot(ex)
    refused_by_gradio = 0
    failures = []
    for i, block_fn, j, v, args, gradio in grid(ex, demo):
        what = f"fn_index {i} ({block_fn.name}) input {j} = {repr(v)[:40]}"
        if not gradio:
            pass
        elif preprocessed(demo, i, args):
            try:
                assert_clean(through_gradio(demo, i, args), what)
            except gr.Error as exc:
                assert_clean([exc.message], what)
            except AssertionError as exc:
                failures.append(str(exc))
            except Exception as exc:  # noqa: BLE001 - the finding
                failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
        else:
            refused_by_gradio += 1
        # the handler itself, given the raw value with a fresh valid session
        raw = [Session(pair_key=ex.default_key) if b.stateful else a for b, a in zip(block_fn.inputs, args)]
        try:
            assert_clean(directly(block_fn, raw), what + " (direct)")
        except gr.Error as exc:
            assert_clean([exc.message], what)
        except AssertionError as exc:
            failures.append(str(exc))
        except Exception as exc:  # noqa: BLE001
            failures.append(f"{what} (direct): {type(exc).__name__}: {str(exc)[:200]}")
        assert snapshot(ex) == pairs, what
        assert not ex.runs._runs, what  # no run left holding a slot
    assert not failures, "\n".join(failures[:30]) + f"\n({len(failures)} in all)"
    assert refused_by_gradio > 0  # Gradio refuses some (a value not among a Dropdown's choices) before any handler
    assert os.listdir(tmp_path) == []


def test_session_state_of_the_wrong_type(app):
    demo, ex = app
    pairs = snapshot(ex)
    failures = []
    for i, block_fn in ours(demo):
        if not any(b.stateful for b in block_fn.inputs):
            continue
        base = base_inputs(ex, block_fn)
        for bad in WRONG_STATES:
            args = [bad if b.stateful else a for b, a in zip(block_fn.inputs, base)]
            what = f"fn_index {i} ({block_fn.name}) with state {bad!r}"
            try:
                assert_clean(directly(block_fn, args), what)
            except gr.Error as exc:
                assert_clean([exc.message], what)
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")
        assert snapshot(ex) == pairs
    assert not failures, "\n".join(failures)


NOT_NUMBERS: list[Any] = ["abc", "", math.nan, math.inf, -math.inf, 2.5, None, [3]]


def test_number_boxes_answer_with_the_boxs_name(app):
    """Text, NaN, infinity or a fraction in a Number box (what an API client may send; an emptied box
    sends None) reaches the app's own check through Gradio, and the page shows a sentence naming the
    box: gr.Number's own preprocessing raised (TypeError, ValueError), which the page shows as a bare
    "Error"."""
    demo, ex = app
    page = ex.page
    message = next(i for i, f in demo.fns.items() if f.name == "input_message")
    run = next(i for i, f in demo.fns.items() if f.name == "run")
    for box, name in ((page.max_new, "max new tokens"), (page.top_k, "top-k"), (page.seed, "seed")):
        if box is page.seed:  # text: see test_seed_is_exact_as_text
            assert isinstance(box, SeedBox) and box.get_block_name() == "textbox"
        else:
            assert isinstance(box, NumberBox) and box.get_block_name() == "number"  # drawn as Gradio's Number
        for fn_index in (message, run):
            block_fn = demo.fns[fn_index]
            j = next(j for j, b in enumerate(block_fn.inputs) if b is box)
            for v in NOT_NUMBERS if fn_index == message else NOT_NUMBERS[:3]:
                args = base_inputs(ex, block_fn)
                args[j] = v
                shown = " ".join(strings(through_gradio(demo, fn_index, args)))
                assert f"{name} must be" in shown, (block_fn.name, name, v, shown[:300])
                assert_clean([shown], f"{block_fn.name} with {name} = {v!r}")
    # an algorithm's parameter in a Number box (a range over 1000), or any value in a column's settings
    # (the columns value, as the page's editor or an API client sends it): the sentence names it
    block_fn = demo.fns[run]
    assert isinstance(ex.editor.controls["sequoia", "calibration_steps"], NumberBox)
    j = block_fn.inputs.index(ex.editor.value)
    for v in ("abc", math.nan, 2.5, None):  # None: an emptied box, refused, not run with the default
        args = base_inputs(ex, block_fn)
        args[j] = [{"algorithm": "sequoia", "params": {"calibration_steps": v}}]
        shown = " ".join(strings(through_gradio(demo, run, args)))
        assert "parameter &#x27;calibration_steps&#x27; must be an integer in [8, 4096]" in shown, (v, shown[:300])
    assert not ex.runs._runs


def test_seed_is_exact_as_text(app, monkeypatch):
    """The seed is carried as text and parsed as an int on the server (issue #23 point 5): 2^53 + 1 and
    2^63 − 1 reach the run as those numbers (a JavaScript number made them ...992 and 9223372036854776000);
    anything but a whole number from 0 to 2^63 − 1 in ASCII digits, or an API client's int, is refused
    with a sentence, never rounded or clamped: a fraction, an exponent, NaN, infinity, a float above 2^53
    (possibly already another number)."""
    demo, ex = app
    assert isinstance(ex.page.seed, SeedBox) and ex.page.seed.value == "0"
    run = next(i for i, f in demo.fns.items() if f.name == "run")
    message = next(i for i, f in demo.fns.items() if f.name == "input_message")
    seen: list[Any] = []
    check = ex.checker.check_inputs
    monkeypatch.setattr(ex.checker, "check_inputs", lambda *a, **k: seen.append(check(*a, **k)) or seen[-1])

    def call(fn_index: int, seed: Any) -> str:
        block_fn = demo.fns[fn_index]
        args = base_inputs(ex, block_fn)
        args[next(j for j, b in enumerate(block_fn.inputs) if b is ex.page.seed)] = seed
        return " ".join(strings(through_gradio(demo, fn_index, args)))

    for sent, meant in (
        ("9007199254740993", 2**53 + 1),
        (str(MAX_SEED), MAX_SEED),
        (MAX_SEED, MAX_SEED),
        (" 42 ", 42),
        (0, 0),
        (7.0, 7),
    ):
        shown = call(run, sent)
        assert seen[-1].seed == meant and "seed must be" not in shown, (sent, shown[:300])
    for sent in (
        str(MAX_SEED + 1),
        MAX_SEED + 1,
        "-1",
        "1.5",
        "1e3",
        "1_000",
        "0x10",
        "٣",
        "nan",
        "inf",
        "",
        2.5,
        math.nan,
        math.inf,
        float(2**63),
        float(2**53 + 2),
        True,
        [1],
    ):
        for fn_index in (message, run):
            shown = call(fn_index, sent)
            assert "seed must be a whole number from 0 to 9223372036854775807" in shown, (sent, shown[:300])
            assert seen[-1].seed is None
    assert "floating-point number" in call(message, float(2**53 + 2))
    assert not ex.runs._runs
    # the trace of the run is seeded with the exact number
    session = Session(pair_key=ex.default_key)
    list(ex.run(session, **run_inputs(max_new_tokens=2, seed="9007199254740993")))
    assert session.columns[0].trace.seed == 2**53 + 1


def test_sliders_answer_with_the_sliders_name(app):
    """Text, NaN, infinity or a value out of range in a slider (what an API client may send) reaches the
    app's check through Gradio and the page names the slider: gr.Slider's own preprocessing raised on
    text (the bare "Error") and named no field out of range; pace was clamped without a word."""
    demo, ex = app
    page_inputs = {b.elem_id: b for f in demo.fns.values() for b in f.inputs if getattr(b, "elem_id", None)}
    run = next(i for i, f in demo.fns.items() if f.name == "run")
    play = next(i for i, f in demo.fns.items() if f.name == "play")
    for elem_id, name, bad in (
        ("sv-temperature", "temperature", ["abc", math.nan, -1, math.inf]),
        ("sv-top-p", "top_p", ["abc", math.nan, 0, 1.5]),
        ("sv-pace", "pace", ["abc", math.nan, -1, 1e9]),
    ):
        box = page_inputs[elem_id]
        assert isinstance(box, SliderBox) and box.get_block_name() == "slider"  # drawn as Gradio's Slider
        block_fn = demo.fns[run]
        j = block_fn.inputs.index(box)
        for v in bad:
            args = base_inputs(ex, block_fn)
            args[j] = v
            shown = " ".join(strings(through_gradio(demo, run, args)))
            assert re.search(rf"⚠ {name}\b[^.]* must be", shown), (name, v, shown[:300])
            assert_clean([shown], f"run with {name} = {v!r}")
    assert not ex.runs._runs
    # playback's pace: a sentence too, once there is something to play
    session = Session(pair_key=ex.default_key)
    list(ex.run(session, **run_inputs(max_new_tokens=2)))
    shown = " ".join(strings(list(demo.fns[play].fn(session, "abc"))))
    assert "pace must be" in shown, shown[:300]


def test_run_refuses_a_lone_surrogate_and_text_in_a_number_box_by_name(app):
    """Issue 35 points 11 and 14 through the server: a prompt with a lone surrogate answered
    ``{"error": null}`` (the tokenizer's raw TypeError), and ``"64"`` for max new tokens through ``/run``
    ran as 64. Each is now a sentence naming its field, and nothing runs."""
    demo, ex = app
    run = next(i for i, f in demo.fns.items() if f.name == "run")
    block_fn = demo.fns[run]
    for name, value, says in (
        ("prompt", "\ud800abc", "prompt must be text a tokenizer can read"),
        ("max_new_tokens", "64", "max new tokens must be a whole number of at least 1, sent as a number, not as text"),
        ("top_k", "3", "top-k must be 0 (off) or a positive whole number, sent as a number"),
    ):
        args = base_inputs(ex, block_fn)
        args[block_fn.input_parameter_names.index(name)] = value
        shown = " ".join(strings(through_gradio(demo, run, args)))
        assert says in shown.replace("&#x27;", "'"), (name, shown[:400])
        assert_clean([shown], f"run with {name} = {value!r}")
    assert not ex.runs._runs
