"""A live run appends each new step to a column's text (issue 34; ``ui.textbox``).

A column's text is a ``TextBox`` value: the text's parts, its current step apart. Here: the parts put
together are the text ``viz.tokens_html`` draws, byte for byte; step after step, Gradio's difference of
two live values carries only the new step's element and the new current step, and applied as the page's
client applies it gives the full text of that step (what a full redraw shows); and a live run through
Gradio's own postprocessing and stream sends each text as its new steps, not the whole text again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import replace

import pytest
from e2e_support import HAVE_BUNDLED
from gradio.state_holder import SessionState
from gradio.utils import diff
from test_budgets import FakeTime
from test_golden_traces import PROMPT, pair
from test_live_delta import apply_diff
from test_ui import columns_for
from test_ui_support import run_inputs, save_tiny_pair

import specviz
from specviz import viz
from specviz.ui import AppConfig, Explorer, Session, stepcache
from specviz.ui.pairs import PairChoice
from specviz.ui.runner import Column
from specviz.ui.textbox import TextBox, text_html
from specviz.viz.tokens import step_span, text_from_parts, text_parts


@pytest.fixture(scope="module")
def trace() -> specviz.RunTrace:
    return specviz.decode(pair("tree"), "specinfer", PROMPT, max_new_tokens=40, temperature=1.0, seed=7)


def live(trace: specviz.RunTrace, n: int) -> Column:
    """The column of a live run that has made ``n`` steps of ``trace`` so far."""
    col = Column(algorithm=trace.algorithm, label=trace.algorithm)
    col.trace = replace(trace, steps=trace.steps[:n])
    return col


def test_the_parts_put_together_are_the_text(trace):
    n = len(trace.steps)
    for current in (None, 0, n // 2, n - 1):
        for diverge_at in (None, 3):
            parts = text_parts(trace, diverge_at=diverge_at)
            assert text_from_parts(parts, current) == viz.tokens_html(trace, current, diverge_at=diverge_at)
    assert text_from_parts(text_parts(None)) == viz.tokens_html(None)
    empty = replace(trace, steps=[])
    assert text_from_parts(text_parts(empty)) == viz.tokens_html(empty)
    assert "sv-cur" not in "".join(text_parts(trace)["steps"])  # the current step is marked apart


def test_each_live_step_sends_only_its_own_tokens(trace):
    """The value after N appended steps is the full text of N steps, and each step's difference holds
    that step's element and the current step, however long the text already is."""
    assert len(trace.steps) >= 8
    shown = stepcache.text_value(live(trace, 1), 0, 0, None)
    for n in range(2, len(trace.steps) + 1):
        new = stepcache.text_value(live(trace, n), n - 1, n - 1, None)
        edits = diff(shown, new)
        shown = apply_diff(shown, edits)
        assert shown == new
        assert text_html(shown) == viz.tokens_html(live(trace, n).trace, current_step=n - 1)
        # the new step's element and the current step: nothing of the text before
        assert sorted(edits) == [["add", ["steps", n - 1], new["steps"][-1]], ["replace", ["cur"], n - 1]]


def test_a_pinned_text_is_the_full_text_in_its_wrapper(trace):
    value = {**stepcache.text_value(live(trace, 5), 2, 2, None), "pinned": True}
    assert text_html(value) == f'<div class="sv-pinned">{viz.tokens_html(live(trace, 5).trace, current_step=2)}</div>'
    assert TextBox().postprocess(value) == value and TextBox().postprocess(None) == ""


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("live-text-pair"))


def test_a_live_run_streams_each_text_as_its_new_steps(pair_dirs, monkeypatch):
    """Run's event through Gradio's postprocessing and stream difference, paced so every step is sent:
    after the opening view, each text goes as the new steps' elements (never the whole text again), and
    the page's value (the differences applied) is always the full text of the steps shown, although each
    step's element is built once (``stepcache.step_spans``), not again for every update."""
    built = []
    monkeypatch.setattr(stepcache, "step_span", lambda step, *a: built.append(step) or step_span(step, *a))
    clock = FakeTime()
    cfg = dataclasses.replace(AppConfig(), max_wait_s=None, run_deadline_s=None)
    ex = Explorer(cfg, presets=[PairChoice("tiny", *pair_dirs)], clock=clock, pause=clock.pause)
    demo = ex.build()
    block_fn = next(f for f in demo.fns.values() if f.api_name == "run")
    texts = [i for i, c in enumerate(block_fn.outputs) if (c.elem_id or "").startswith("sv-text-")]
    session = Session(pair_key=ex.default_key)
    inputs = run_inputs(max_new_tokens=24, columns=columns_for(["sd", "specinfer"]), pace=0.5, temperature=1.0)
    state, page, live_updates = SessionState(demo), {}, 0
    for view in block_fn.fn(session=session, **inputs):
        data = asyncio.run(demo.postprocess_data(block_fn, view, state))
        full = dict(zip(texts, (data[i] for i in texts)))
        sent = demo.handle_streaming_diffs(block_fn, data, session_hash="t", run="r", final=False)
        if not page:  # the opening view: whole
            page = {i: sent[i] for i in texts}
            continue
        if not session.running:
            break  # the last update: the text pinned on each column's own step, drawn again
        live_updates += 1
        for j, i in enumerate(texts[:2]):
            edits = sent[i]
            # "(no tokens generated)" goes with the first step; the prompt and the steps before are kept
            assert all(e[0] in ("add", "replace") and e[1][0] in ("steps", "cur", "tail") for e in edits), edits
            assert not [e for e in edits if e[0] == "replace" and e[1][0] == "steps"]  # no step sent again
            added = [e[2] for e in edits if e[0] == "add"]
            assert len(json.dumps(edits)) < len(json.dumps(added)) + 120  # the new steps, and little else
            page[i] = apply_diff(page[i], edits)
            assert page[i] == full[i]
            col = session.columns[j]
            # its newest step outlined; none once it is done and the other column goes on past it
            current = col.n_steps - 1 if not col.done or session.n_steps <= col.n_steps else None
            assert text_html(page[i]) == viz.tokens_html(col.trace, current_step=current)
    assert live_updates >= 5
    assert len(built) == len({id(s) for s in built}) == sum(c.n_steps for c in session.columns)  # each once


@pytest.mark.skipif(not HAVE_BUNDLED, reason="the bundled pair is not built (scripts/build_assets.sh)")
def test_the_server_side_bench_sees_texts_sent_as_their_new_steps(monkeypatch):
    """``python -m specviz.bench.live_updates`` on the bundled pair, 4 columns: every live update carries the
    four texts, each as its new steps (a few hundred bytes), however long the texts have grown."""
    from specviz.bench import live_updates

    monkeypatch.setenv("SPECVIZ_PRESETS", "")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    updates = live_updates.measure("code", 4, 12, 0.3)
    assert len(updates) >= 6
    assert all(0 < u["bytes"]["text"] < 4 * 1500 for u in updates), [u["bytes"]["text"] for u in updates]
    assert all(u["build_s"] >= 0 and u["post_s"] > 0 for u in updates)
