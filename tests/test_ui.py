"""The app's callbacks, called in-process on a tiny real pair saved with a real tokenizer."""

from __future__ import annotations

import html
import json
import os
import re
import sys
import time
import types

import gradio as gr
import plotly.graph_objects as go
import pytest
from test_ui_support import run_inputs, save_tiny_pair

import specviz
from specviz.trace import RunTrace
from specviz.ui import AppConfig, Explorer, Session, render
from specviz.ui.app import CUSTOM, param_elem_id, param_value
from specviz.ui.gpu import gpu
from specviz.ui.layout import Slot
from specviz.ui.pairs import PairChoice, PairRegistry
from specviz.ui.runner import Column
from specviz.ui.textbox import text_html
from specviz.viz.parts import figure_from_parts

FOUR = [a for a in ("ar", "sd", "mcsd", "specinfer", "sequoia") if a in specviz.ALGORITHMS][:4]
SIX = (FOUR * 2)[:6]  # six columns streaming (an algorithm may appear twice)


class Clock:
    """An explicit clock for the live loop: each reading advances ``tick`` seconds, so a test decides
    whether the throttle lets an update through, never the machine's speed."""

    def __init__(self, tick: float = 1.0):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


def no_wait(control, seconds):
    """``Explorer.pause`` without waiting: whether Stop came (tests drive time explicitly)."""
    return control.stopped()


@pytest.fixture(scope="module")
def explorer(pair_dirs):
    target, draft = pair_dirs
    return Explorer(
        AppConfig(max_columns=6, measure_repeats=1),
        presets=[PairChoice("tiny test pair", target, draft)],
        clock=Clock(),
        pause=no_wait,
    )


def columns_for(algos, **overrides):
    """The columns value (``ui.columns``) of one column per algorithm of ``algos``, each at its defaults
    but for ``overrides`` named ``"algorithm.setting"``."""
    return [
        {"algorithm": a, "params": {k.split(".", 1)[1]: v for k, v in overrides.items() if k.split(".", 1)[0] == a}}
        for a in algos
    ]


def run_all(
    ex: Explorer,
    session: Session,
    algos,
    prompt="def fibonacci(n):\n",
    max_new=24,
    temperature=0.0,
    seed=0,
    delay=0.0,
    **overrides,
):
    outs = list(
        ex.run(
            session,
            **run_inputs(
                prompt=prompt,
                max_new_tokens=max_new,
                temperature=temperature,
                seed=seed,
                columns=columns_for(algos, **overrides),
                pace=delay,
            ),
        )
    )
    assert outs
    return outs


def screen(outs):
    """What the browser shows after a stream of views: the last value sent for each name."""
    shown = {}
    for out in outs:
        shown.update(out)
    return shown


def value(v):
    """A panel's value whether sent bare or as a component update."""
    return v.value if hasattr(v, "value") and not isinstance(v, (str, go.Figure)) else v


def tree_step(fig) -> int:
    """The 1-based step a tree figure shows (its title is "step k")."""
    return int(fig.layout.title.text.split()[1])


def header_step(header: str) -> int:
    return int(header.split("step <b>")[1].split("</b>")[0])


def plot_title(v) -> str:
    """The title of a figure sent bare or inside a ``gr.Plot`` or ``ui.plotbox.PlotBox`` update."""
    if isinstance(v, go.Figure):
        return v.layout.title.text or ""
    if isinstance(v.value, dict) and "n" in v.value:  # a PlotBox's value: the figure's parts (viz.parts)
        layout = figure_from_parts(v.value)["layout"]
    else:
        layout = json.loads(v.value["plot"] if isinstance(v.value, dict) else v.value).get("layout") or {}
    return (layout.get("title") or {}).get("text", "")


def live(ex: Explorer, session: Session, algos, prompt="def f(x):\n", max_new=64, pace=0.0, seed=0, top_k=0):
    return ex.run(
        session, **run_inputs(prompt=prompt, max_new_tokens=max_new, top_k=top_k, seed=seed, columns=algos, pace=pace)
    )


def test_app_builds_with_generated_settings_and_named_panels(explorer):
    demo = explorer.build()
    assert isinstance(demo, gr.Blocks)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    for needed in (
        "sv-prompt",
        "sv-run",
        "sv-stop",
        "sv-measure-btn",
        "sv-step",
        "sv-prev",
        "sv-next",
        "sv-table",
        "sv-upload",
        "sv-algos",
        "sv-input-msg",
        "sv-pace",
        "sv-node-pick",
        "sv-tree-0",
        f"sv-tree-{explorer.n_slots - 1}",
    ):
        assert needed in ids
    # one settings component per declared parameter of every registered algorithm (the column editor's)
    assert len(explorer.editor.controls) == sum(len(s.params) for s in specviz.ALGORITHMS.values())
    labels = [b.label for b in demo.blocks.values() if isinstance(b, gr.Accordion)]
    for name, spec in specviz.ALGORITHMS.items():
        if spec.params:
            assert f"{name} settings" in labels
    assert explorer.n_slots >= 4
    # every column declares every panel once; views address them by name
    page = explorer.page
    assert len(page.slots) == explorer.n_slots
    for i, s in enumerate(page.slots):
        for panel in Slot.panels():
            assert page.component((panel, i)) is getattr(s, panel)
            assert getattr(s, panel) in page.outputs()
    assert page.bind({"status": "x", ("tree", 1): None}) == {page.status: "x", page.slots[1].tree: None}
    assert page.bind({}) == [gr.skip()] * len(page.outputs())  # an empty view changes nothing
    with pytest.raises(KeyError):
        page.component("no-such-panel")
    # the page's own script keeps a text box's current step in view (ui.style: svShowCurrent); Gradio's
    # autoscroll read the page's layout on every update (issue 34), and e2e checks the following
    assert not page.slots[0].tokens.autoscroll


def test_controller_settings_show_only_under_their_controller(explorer):
    """Plain ``sd`` shows gamma and controller; a Thompson-sampling controller's own settings appear when
    it is chosen (``Param.applies_when``), through the controller's change event. Hidden or shown,
    every parameter's value still reaches the run as before."""
    demo = explorer.build()
    comps = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}

    def shown(algo):
        return [p.name for p in specviz.ALGORITHMS[algo].params if comps[param_elem_id(algo, p.name)].visible]

    assert shown("sd") == ["gamma", "controller", "drafter"]
    assert shown("eesd") == ["controller", "k_max", "alpha0", "beta0", "beta_rule"]  # its default is beta_ts
    controller = comps[param_elem_id("sd", "controller")]
    handler = [f for f in demo.fns.values() if f.targets == [(controller._id, "change")]]
    assert len(handler) == 1

    def after(choice):  # what the page shows once the dropdown (values are indices) is set to ``choice``
        index = specviz.ALGORITHMS["sd"].params[1].choices.index(choice)
        visible = {c.elem_id.rsplit("-", 1)[1]: u["visible"] for c, u in handler[0].fn(index).items()}
        return sorted(name for name, v in visible.items() if v), set(visible)

    names = {p.name for p in specviz.ALGORITHMS["sd"].params if p.applies_when}  # those the controller shows
    assert after("beta_ts") == (["alpha0", "beta0", "beta_rule", "k_max"], names)
    assert after("cali_ts") == (["cali_mode", "k_max", "sigma_m", "sigma_s", "theta_hat0", "theta_hat_rule"], names)
    assert after("fixed") == (["fixed_length", "k_max"], names)
    assert after("static") == (["gamma"], names)  # a controller sets the draft length itself
    # values reach the picked column as the controls send them: every declared parameter, defaults where untouched
    ed = explorer.editor
    cols = ed.on_algorithms(None, 0, ["sd"])[ed.value]
    cols = ed.on_setting("sd", "controller", cols, 0, specviz.ALGORITHMS["sd"].params[1].choices.index("beta_ts"))[
        ed.value
    ]
    cols = ed.on_setting("sd", "alpha0", cols, 0, 2)[ed.value]
    params = cols[0]["params"]
    assert params == {**specviz.ALGORITHMS["sd"].defaults, "controller": "beta_ts", "alpha0": 2.0}
    # a column's header names only the parameters that had an effect
    head = render.column_header(Column("sd", "sd", dict(specviz.ALGORITHMS["sd"].defaults)), 0, 0, False)
    assert (
        f"gamma={specviz.ALGORITHMS['sd'].defaults['gamma']}" in head
        and "controller=static" in head
        and "alpha0" not in head
        and "k_max" not in head
    )
    head = render.column_header(Column("sd", "sd", params), 0, 0, False)
    assert "alpha0=2.0" in head and "k_max=0" in head and "sigma_m" not in head and "gamma" not in head


def test_run_side_by_side_produces_text_tree_and_metrics(explorer):
    session = Session(pair_key=explorer.default_key)
    outs = run_all(explorer, session, FOUR)
    final = screen(outs)
    assert final["session"] is session and not session.running
    assert "Done" in final["status"]
    table = final["table"]
    for i, algo in enumerate(FOUR):
        assert final["column", i].visible is True
        assert f"<b>{algo}</b>" in final["header", i]
        assert 'class="sv-tok' in text_html(final["tokens", i])
        tree = final["tree", i]
        assert isinstance(tree, go.Figure) and any(t.meta == "path" for t in tree.data)
        assert f">{session.columns[i].label}" in table  # a metrics row per algorithm
        download = final["download", i]
        trace = RunTrace.from_json(
            open(download.value["path"] if isinstance(download.value, dict) else download.value).read()
        )
        assert trace.algorithm == algo and len(trace.output_ids) == 24
    for i in range(len(FOUR), explorer.n_slots):
        assert final["column", i].visible is False
    # all runs on the same prompt, seed and settings; lossless ones match ar greedily
    assert len({tuple(c.trace.prompt_ids) for c in session.columns}) == 1
    assert table.count('class="sv-good">✓ identical') == len(FOUR) - 1 and "sv-bad" not in table
    for name in ("per_step", "cumulative", "hist", "time", "positions", "race", "latency"):
        assert isinstance(final[name], go.Figure) and final[name].data, name
    # Run is disabled while the run goes and enabled again at its end; Stop the other way round
    assert outs[0]["run_btn"].interactive is False and outs[0]["stop_btn"].interactive is True
    assert outs[-1]["run_btn"].interactive is True and outs[-1]["stop_btn"].interactive is False


def test_runs_advance_together_and_stream(explorer):
    session = Session(pair_key=explorer.default_key)
    seen = []
    gen = explorer.run(
        session, **run_inputs(prompt="import os\n", max_new_tokens=12, temperature=1.0, seed=1, columns=["ar", "sd"])
    )
    for out in gen:
        seen.append([c.n_steps for c in session.columns])
    assert len(seen) > 3  # streamed, not one final update
    for counts in seen[1:-1]:
        ar_steps, sd_steps = counts
        assert ar_steps == sd_steps or min(counts) == min(session.columns[1].n_steps, session.columns[0].n_steps)
    assert seen[-1][0] == 12  # ar: one token per step


def test_throttle_follows_its_clock():
    """Unpaced updates at most every interval, read from the injected clock (no sleeping)."""
    from specviz.ui.pacing import Throttle

    now = [0.0]
    t = Throttle(0.25, ratio=8.0, clock=lambda: now[0])
    assert t()  # the first update always goes
    now[0] = 0.1
    assert not t()
    now[0] = 0.3
    assert t()
    t.rendered(0.1)  # a slow render: wait 8 x 0.1 s
    now[0] = 0.6
    assert not t()
    now[0] = 1.2
    assert t()


def test_final_update_shows_every_column_at_its_own_step(explorer, monkeypatch):
    """The run's last update re-sends every column's tree, controller and text in full, each at the
    step its header names, so the page ends on the state the server has even if an earlier update
    never reached the browser (seen: headers "last step 23" over trees at "step 20")."""
    from specviz.ui import render

    monkeypatch.setattr(render, "informative_step", lambda trace: len(trace.steps) - 1)  # open on the last step
    session = Session(pair_key=explorer.default_key)
    outs = list(live(explorer, session, FOUR, max_new=40))
    last = outs[-1]
    assert len(outs) > 5
    for i, col in enumerate(session.columns):
        n = col.n_steps
        assert header_step(last["header", i]) == n and tree_step(last["tree", i]) == n, (i, col.algorithm)
        assert ("controller", i) in last and ("tokens", i) in last and ("narrative", i) in last
    # columns that finished early: their last tree was already sent, and it is sent again
    early = [i for i, c in enumerate(session.columns) if c.n_steps < session.n_steps]
    assert early


def test_a_finished_run_opens_each_column_on_its_informative_step(explorer, monkeypatch):
    from specviz.ui import render

    opened = {}

    def informative(trace):
        opened[trace.algorithm] = k = min(2, len(trace.steps) - 1)
        return k

    monkeypatch.setattr(render, "informative_step", informative)
    monkeypatch.setattr(
        render, "step_narrative", lambda step, algorithm, **_: f"**{algorithm}** step {step.index + 1} story"
    )
    session = Session(pair_key=explorer.default_key)
    last = list(live(explorer, session, ["ar", "sd"], max_new=16))[-1]
    assert set(opened) == {"ar", "sd"}
    for i, algo in enumerate(["ar", "sd"]):
        assert header_step(last["header", i]) == tree_step(last["tree", i]) == 3
        assert "most informative" in last["header", i]
        story = last["narrative", i]
        assert story.visible and story.value == f"**{algo}** step 3 story"
        assert 'class="sv-pinned"' in text_html(last["tokens", i])  # the browser leaves its highlight alone
    assert "most informative" in last["step_label"]
    # a scrub moves every column together again
    out = explorer.scrub(session, 5)
    assert [c.pin for c in session.columns] == [None, None]
    assert tree_step(out["tree", 0]) == 5


def test_scrub_prev_next_latest(explorer):
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar", "sd"], max_new=16)
    out = explorer.scrub(session, 1)
    assert session.step == 0
    # the slider shows 1 already: not sent back, so a value the visitor set since stays
    assert "slider" not in out and "step 1 of 16" in out["step_label"]
    assert tree_step(out["tree", 1]) == 1
    assert "step <b>1</b>/" in out["header", 1]
    explorer.next(session)
    out = explorer.scrub(session, 1)
    assert ("tokens", 1) not in out  # the text is unchanged; the browser moves its highlight (STEP_JS)
    explorer.prev(session)
    assert session.step == 0  # clamped
    explorer.next(session)
    explorer.next(session)
    assert session.step == 2
    out = explorer.latest(session)
    assert session.step is None and "step 16 of 16" in out["step_label"]
    out = explorer.scrub(session, 10_000)
    assert out["slider"].value == 16  # clamped: the slider is corrected
    # sd finished before step 15: scrubbing between 15 and 16 re-sends only its header
    n_sd = session.columns[1].n_steps
    assert n_sd < 15
    out = explorer.scrub(session, 15)
    assert f"last step <b>{n_sd}</b>" in out["header", 1]
    assert not {("tokens", 1), ("tree", 1), ("controller", 1)} & set(out)
    assert isinstance(out["tree", 0], go.Figure)  # ar (16 steps) did move


def test_play_steps_through(explorer):
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["sd"], max_new=6)
    session.step = 0
    frames = list(explorer.play(session, 0.0))
    assert [f["slider"].value for f in frames] == list(range(1, session.n_steps + 1))


def test_bad_pair_gives_a_message_and_keeps_the_previous_pair(explorer, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    session = Session(pair_key=explorer.default_key)
    for target in ("/no/such/model/dir", "no-such-org/no-such-model-xyz"):
        md, s = explorer.load(CUSTOM, target, "", session, progress=lambda *a, **k: None)
        assert "Could not load" in md and "Still using" in md
        assert s.pair_key == explorer.default_key
    md, s = explorer.load(CUSTOM, "", "", session, progress=lambda *a, **k: None)
    assert "Type a target" in md
    # the app still runs on the previous pair
    final = run_all(explorer, session, ["sd"], max_new=4)[-1]
    assert "Done" in final["status"]


def test_mismatched_tokenizers_are_refused(explorer, tmp_path):
    target, _ = explorer.presets[0].target, None
    other = tmp_path / "other"
    from test_ui_support import build_tokenizer
    from tiny import tiny_model

    tok = build_tokenizer(vocab_size=300)
    tiny_model("llama", len(tok), 5).save_pretrained(other)
    tok.save_pretrained(other)
    md, _ = explorer.load(
        CUSTOM, target, str(other), Session(pair_key=explorer.default_key), progress=lambda *a, **k: None
    )
    assert "Could not load" in md and "vocabular" in md


def test_load_a_preset(explorer):
    session = Session(pair_key=None)
    md, s = explorer.load(explorer.presets[0].key, "", "", session, progress=lambda *a, **k: None)
    assert md.startswith("✅") and s.pair_key == explorer.presets[0].key


def test_refused_requests_are_messages(explorer):
    session = Session(pair_key=explorer.default_key)
    (out,) = list(explorer.run(session, **run_inputs(prompt="x", columns=[])))
    assert "Select at least one algorithm" in out["status"]
    (out,) = list(explorer.run(session, **run_inputs(prompt="   ")))
    assert "prompt is empty" in out["status"]
    too_many = list(specviz.ALGORITHMS) * 3
    (out,) = list(explorer.run(session, **run_inputs(prompt="x", columns=too_many[: explorer.n_slots + 1])))
    assert "At most" in out["status"]
    (out,) = list(explorer.run(Session(pair_key=None), **run_inputs(prompt="x")))
    assert "No pair loaded" in out["status"]
    (out,) = list(explorer.run(session, **run_inputs(prompt="x", chat=True)))
    assert "no chat template" in out["status"]  # the tiny pair has none
    (out,) = list(explorer.run(session, **run_inputs(prompt="x", chat="on")))
    assert "chat must be on or off" in out["status"]
    assert explorer.chat_default(session)["value"] is False  # the toggle follows the loaded pair


@pytest.mark.parametrize("seed", [2**63, 99999999999999999999, 1e30, -1, 1.5, float("nan"), None])
def test_bad_seeds_are_messages_in_the_page(explorer, seed, monkeypatch):
    """A seed outside 0..2^63-1 used to raise "Overflow when unpacking long long" with no message."""
    monkeypatch.setattr(specviz.decoding, "stream", lambda *a, **k: pytest.fail("a bad seed reached the engine"))
    session = Session(pair_key=explorer.default_key)
    (out,) = list(live(explorer, session, ["ar"], max_new=8, seed=seed))
    assert "seed must be a whole number from 0 to 9223372036854775807" in out["status"]
    assert "seed must be" in out["input_msg"].value and session.columns == []
    assert "seed must be" in explorer.input_message(session, "x", 8, 0, seed)["input_msg"].value


def test_bad_top_k_and_too_many_tokens_are_messages(explorer):
    session = Session(pair_key=explorer.default_key)
    (out,) = list(live(explorer, session, ["ar"], max_new=8, top_k=-3))
    assert "top-k must be 0 (off) or a positive whole number; got -3" in out["status"]
    pair = explorer.registry.get(explorer.default_key)
    prompt = "def f(x):\n"
    n_prompt = len(pair.encode(prompt))
    limit = pair.context_length - n_prompt
    (out,) = list(live(explorer, session, ["ar"], prompt=prompt, max_new=limit + 1))
    assert f"the prompt takes {n_prompt}, so at most {limit} new tokens fit" in out["status"]
    msg = explorer.input_message(session, prompt, 8, 0, 0)["input_msg"].value
    assert f"prompt: {n_prompt} tokens" in msg and f"up to {limit}" in msg


def test_run_refuses_a_second_run_while_one_goes(explorer):
    session = Session(pair_key=explorer.default_key)
    gen = live(explorer, session, ["ar", "sd"], max_new=32)
    first = next(gen)
    assert first["run_btn"].interactive is False
    (again,) = list(live(explorer, session, ["ar"], max_new=8))
    assert "already going" in again["status"] and session.running  # the first run is untouched
    rest = list(gen)
    assert rest[-1]["run_btn"].interactive is True and not session.running
    assert list(live(explorer, session, ["ar"], max_new=4))[-1]["run_btn"].interactive is True  # free again


def test_stop_keeps_what_ran(explorer):
    """Stop after the first update: the run ends itself at once with an update marked "stopped" showing
    each column's last step (no timing: the generator is suspended at its yield when Stop comes)."""
    session = Session(pair_key=explorer.default_key)
    gen = live(explorer, session, ["ar", "sd"], max_new=64)
    next(gen)
    ar, sd = session.columns
    for _ in range(30):  # until sd has more tokens than ar (it drafts several per step)
        next(gen)
        if len(sd.trace.output_ids) > len(ar.trace.output_ids):
            break
    assert len(sd.trace.output_ids) > len(ar.trace.output_ids)
    steps = [c.n_steps for c in session.columns]
    assert explorer.stop(session)["stop_btn"].interactive is False
    rest = list(gen)
    assert len(rest) == 1  # no further step: the final, stopped update
    final = rest[0]
    assert [c.n_steps for c in session.columns] == steps
    assert "Stopped" in final["status"] and not session.running
    assert all(c.done and c.trace.finish_reason == "stopped" for c in session.columns)
    for i, c in enumerate(session.columns):
        assert header_step(final["header", i]) == tree_step(final["tree", i]) == c.n_steps
        assert "stopped" in final["header", i]
    assert final["run_btn"].interactive is True
    assert explorer.stop(session) == {}  # nothing left to stop
    # sd got further than ar before Stop: that is no divergence from ar's greedy output
    assert "sv-bad" not in final["table"] and "identical over the first" in final["table"]
    assert "sv-diverge" not in text_html(final["tokens", 1])


def test_stop_answers_within_one_step_with_six_columns(explorer, monkeypatch):
    """Stop is checked before every column's step, not once per round of six."""
    session = Session(pair_key=explorer.default_key)
    gen = live(explorer, session, SIX, max_new=64)
    next(gen)
    stepped = []

    for i, col in enumerate(session.columns):
        it = col._it

        def counted(it=it, i=i):
            for step in it:
                stepped.append(i)
                if i == 1:
                    explorer.stop(session)  # Stop arrives while the second column steps
                yield step

        col._it = counted()
    rest = list(gen)
    assert stepped == [0, 1], stepped  # columns 3 to 6 never took another step
    assert "Stopped" in rest[-1]["status"] and len(SIX) == 6


def test_a_paused_run_wakes_at_stop():
    from specviz.ui.pacing import RunControl

    c = RunControl()
    assert c.pause(0) is False
    c.stop()
    assert c.pause(3600) is True  # returns at once: the event is set


def test_the_page_sets_the_pace_once_it_reports(explorer):
    """The page's reports of what it has drawn (``pacing.FrameGate`` reads them); a caller that never
    reports (a script, these tests) is sent every update."""
    from specviz.ui.pacing import RunControl

    c = RunControl()
    assert not c.page_reports
    c.report_shown(4)
    c.report_shown(3)  # late reports never move it back
    assert c.shown_step == 4 and c.page_reports
    session = Session(pair_key=explorer.default_key)
    gen = live(explorer, session, ["ar"], max_new=8)
    next(gen)
    explorer.page_shown(session, "1:123")
    assert explorer.runs.get(id(session)).shown_step == 1
    explorer.page_shown(session, "garbage")  # ignored
    explorer.stop(session)
    assert "Stopped" in list(gen)[-1]["status"]


def test_paced_run_waits_between_steps_and_marks_timings(pair_dirs):
    clock = Clock(tick=0.01)
    waits = []

    def pause(control, seconds):
        waits.append(round(seconds, 6))
        clock.now += max(seconds, 0)
        return control.stopped()

    ex = Explorer(AppConfig(max_columns=6), presets=[PairChoice("t", *pair_dirs)], clock=clock, pause=pause)
    session = Session(pair_key=ex.default_key)
    outs = list(ex.run(session, **run_inputs(max_new_tokens=6, columns=["ar", "sd"], pace=0.5)))
    n = session.n_steps
    assert len(waits) == n - 1 or len(waits) == n  # one pause per round of steps
    assert all(0 < w <= 0.5 for w in waits)
    assert len(outs) == len(waits) + 2  # every paced step is shown (plus the first and last updates)
    assert session.pace == 0.5
    table = outs[-1]["table"]
    assert "not comparable" in table and "interleaved" in table and "paced (0.5 s per step)" in table


def test_table_marks_wall_times_only_when_not_comparable(explorer, tmp_path):
    from specviz.viz import comparison_table_html

    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar"], max_new=6)
    runs = session.runs()
    assert "not comparable" not in comparison_table_html(runs)
    marked = comparison_table_html(runs, not_comparable="the columns ran interleaved")
    assert 'class="sv-nc"' in marked and "Measure" in marked
    out = Explorer(
        AppConfig(), registry=PairRegistry(), presets=[PairChoice("none", "/x", None)], preload=False
    ).upload([session.columns[0].path], Session())
    assert "not comparable" not in out["table"]  # one replayed trace: its own timing


def test_measure_interleaves_the_columns_and_reports_medians(explorer):
    session = Session(pair_key=explorer.default_key)
    outs = list(explorer.measure(session, **run_inputs(max_new_tokens=12, columns=["ar", "sd"], pace=0.3)))
    assert outs[0]["measure_btn"].interactive is False and outs[-1]["measure_btn"].interactive is True
    html = outs[-1]["measurements"]
    assert "median wall s" in html and "interleaved" in html
    assert html.count("<tr>") == 3  # header + ar + sd
    assert "×</td>" in html  # sd's speed-up against ar's median
    assert any("measuring sd (2 of 2)" in o.get("measurements", "") for o in outs)


def fake_timer(durations: list[float]):
    """A perf_counter for ``measure(timer=...)``: each decode call reads it when it starts and when it
    ends (no pauses: the tick clock never moves), and takes the next of ``durations``."""
    readings, now = [], 0.0
    for d in durations:
        readings += [now, now + d]
        now += d
    it = iter(readings)
    return lambda: next(it)


def test_measure_rows_come_from_median_times(explorer):
    from specviz.ui import measure as m

    pair = explorer.registry.get(explorer.default_key)
    timer = fake_timer([9.0, 9.0, 3.0, 1.5, 1.0, 0.5, 2.0, 1.0])  # ar, sd: a warm-up round, then 3 rounds
    *_, (note, rows) = m.measure(
        pair,
        "def f(x):\n",
        [("ar", {}), ("sd", {})],
        repeats=3,
        max_new_tokens=8,
        temperature=0.0,
        seed=0,
        timer=timer,
        clock=lambda: 0.0,
        predict=False,
    )
    ar, sd = rows
    assert ar.wall_s == 2.0 and sd.wall_s == 1.0 and ar.new_tokens == sd.new_tokens == 8  # medians, not means
    assert sd.speedup == pytest.approx(2.0) and ar.speedup == pytest.approx(1.0)


def test_measure_rows_name_only_the_settings_that_apply(explorer):
    """sd under controller=static lists gamma, not the Thompson-sampling settings the app hides
    (``Param.applies``, the rule that shows and hides the setting controls)."""
    session = Session(pair_key=explorer.default_key)
    for controller in ("static", "beta_ts"):
        columns = columns_for(["sd"], **{"sd.controller": controller})
        outs = list(explorer.measure(session, **run_inputs(max_new_tokens=4, columns=columns)))
        html = outs[-1]["measurements"]
        spec = specviz.ALGORITHMS["sd"]
        values = {**spec.defaults, "controller": controller}
        for p in spec.params:
            assert (f"{p.name}=" in html) == p.applies(values), (controller, p.name, html)
    assert '>sd<br><span class="sv-params">controller=beta_ts, k_max=0, alpha0=1.0, beta0=1.0, ' in html
    assert "beta_rule=paper, drafter=auto</span>" in html


def test_measure_names_a_row_as_its_column_is_named(explorer):
    """Issue 35 (points 3, one label per column): Measure named two sd columns 'sd (gamma=3, controller=static,
    drafter=auto)' and 'sd (gamma=2, ...)' while their headers, the comparison table and the legends said
    'sd · gamma 3' and 'sd · gamma 2'; a row is now the column's label, its settings under it."""
    from specviz.ui.columns import column_labels

    session = Session(pair_key=explorer.default_key)
    gamma = specviz.ALGORITHMS["sd"].defaults["gamma"]
    configs = [("ar", {}), ("sd", {}), ("sd", {"gamma": 2})]
    columns = [{"algorithm": a, "params": p} for a, p in configs]
    html = list(explorer.measure(session, **run_inputs(max_new_tokens=4, columns=columns)))[-1]["measurements"]
    heads = re.findall(r'<th scope="row">([^<]*)', html)
    assert heads == column_labels(configs) == ["ar", f"sd · gamma {gamma}", "sd · gamma 2"], heads
    assert "sd (" not in html  # nor the verdict under another name


def test_measure_reports_each_median_with_its_spread(explorer):
    """Median wall time, tokens/s and speed-up each with min–max over the timed rounds; the speed-up's
    range is round by round, each against ar's run of the same round (the columns are interleaved)."""
    from specviz.ui import measure as m

    pair = explorer.registry.get(explorer.default_key)
    timer = fake_timer([9.0, 9.0, 0.3, 0.1, 0.1, 0.05, 0.2, 0.1])  # ar, sd: a warm-up round, then 3 rounds
    *_, (note, rows) = m.measure(
        pair,
        "def f(x):\n",
        [("ar", {}), ("sd", {})],
        repeats=3,
        max_new_tokens=8,
        temperature=0.0,
        timer=timer,
        clock=lambda: 0.0,
        predict=False,
    )
    ar, sd = rows
    assert (ar.wall_s, ar.wall_s_min, ar.wall_s_max) == pytest.approx((0.2, 0.1, 0.3))
    assert (sd.wall_s, sd.wall_s_min, sd.wall_s_max) == pytest.approx((0.1, 0.05, 0.1))
    assert sd.speedup == pytest.approx(2.0)
    assert sd.speedup_min == pytest.approx(2.0) and sd.speedup_max == pytest.approx(3.0)  # rounds: 3, 2, 2
    assert ar.speedup == 1.0 and ar.speedup_min is None  # ar against its own runs: 1 exactly, no range
    html = m.measurements_html(rows, note)
    n = ar.new_tokens
    for text in (
        "0.200",
        "0.100–0.300",
        "0.050–0.100",
        f"{n / 0.3:.1f}–{n / 0.1:.1f}",
        "2.00×",
        "2.00–3.00",
        "range (min–max)",
    ):
        assert text in html, text
    assert html.count('class="sv-spread"') == 5  # wall s and tokens/s of both, sd's speed-up
    heads = re.findall(r"<th[^>]*>([^<]+)</th>", html.split("<tbody>")[0])
    assert heads[:2] == ["algorithm", "speed-up vs ar"]  # the number a reader wants, in view at 400 px
    first = html.split("<tbody>")[1].split("</tr>")[1]  # sd's row: its speed-up in the first cell after the name
    assert re.search(r"</th><td>2\.00×", first), first


def test_clicking_a_node_opens_its_distribution(explorer, monkeypatch):
    from specviz.ui import render

    asked = []

    def dist(step, node_id):
        asked.append((step.index, node_id))
        return go.Figure(layout={"title": {"text": f"p and q at node {node_id}"}})

    monkeypatch.setattr(render, "distribution_figure", dist)
    monkeypatch.setattr(render, "informative_step", lambda trace: len(trace.steps) - 1)
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar", "sd"], max_new=12)
    explorer.scrub(session, 2)
    node = session.columns[1].trace.steps[1].forest[0].id
    out = explorer.select_node(session, f"1:{node}:12345")
    assert asked == [(1, node)]
    assert out["distribution", 1].visible is True and plot_title(out["distribution", 1]) == f"p and q at node {node}"
    assert ("distribution", 0) not in out  # the other column is untouched
    out = explorer.select_node(session, f"1:{node}:12346")  # a second click closes it
    assert out["distribution", 1].visible is False
    assert explorer.select_node(session, "garbage") == {}


def test_colours_follow_the_algorithm(explorer, monkeypatch, tmp_path):
    """An algorithm's (first) column wears its colour, live and replayed (further columns of it: a shade,
    test_columns)."""
    from specviz.ui import columns

    monkeypatch.setattr(columns, "algorithm_color", lambda name: {"ar": "#111111", "sd": "#222222"}[name])
    session = Session(pair_key=explorer.default_key)
    final = screen(run_all(explorer, session, ["ar", "sd"], max_new=4))
    assert "#222222" in final["header", 1]
    replay = Session()
    out = explorer.upload([session.columns[1].path], replay)  # sd alone, now in the first column
    assert "#222222" in out["header", 0]


def test_bad_algorithm_parameter_fails_only_its_column(explorer):
    session = Session(pair_key=explorer.default_key)
    final = screen(run_all(explorer, session, ["ar", "mcsd"], max_new=6, **{"mcsd.k_config": "not-a-config"}))
    assert "sv-error" not in final["header", 0] and "sv-error" in final["header", 1]
    assert session.columns[0].trace.finish_reason == "length"


def test_upload_replays_without_a_model(explorer, tmp_path):
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar", "sd"], max_new=8, temperature=0.0, seed=7)
    paths = [c.path for c in session.columns]
    replayer = Explorer(
        AppConfig(), registry=PairRegistry(), presets=[PairChoice("none", "/nonexistent", None)], preload=False
    )
    assert replayer.registry.keys() == []
    fresh = Session()
    out = replayer.upload(paths, fresh)
    assert "Replaying 2 uploaded traces" in out["status"]
    assert [c.algorithm for c in fresh.columns] == ["ar", "sd"]
    assert isinstance(out["tree", 1], go.Figure)
    assert "step 1 of" in out["step_label"]
    # the sidebar shows the settings the trace used
    assert out["seed"] == "7" and out["temperature"] == 0.0 and out["max_new"] == 8  # the seed box is text
    out = replayer.scrub(fresh, 3)
    assert tree_step(out["tree", 1]) == 3
    # each setting stays within its box (issue #23 point 5): a trace of more new tokens than this app
    # allows sets max new tokens to its limit, a temperature past the slider leaves it, each said
    trace = RunTrace.from_json(open(paths[1]).read())
    trace.sampling = {**trace.sampling, "temperature": 3.0}
    trace.seed = 2**63 - 1
    hot = tmp_path / "hot.json"
    hot.write_text(trace.to_json())
    small = Explorer(
        AppConfig(max_new_tokens_cap=5),
        registry=PairRegistry(),
        presets=[PairChoice("none", "/nonexistent", None)],
        preload=False,
    )
    out = small.upload([str(hot)], Session())
    assert out["max_new"] == 5 and "temperature" not in out and out["seed"] == str(2**63 - 1)
    assert "made 8 new tokens; max new tokens is set to 5" in out["status"]
    assert "temperature 3 is outside its slider" in out["status"]
    assert small.check_inputs(None, "x", out["max_new"], 0, out["seed"]).ok  # what the boxes now hold is valid


GOOD = {
    "schema_version": 2,
    "algorithm": "sd",
    "params": {},
    "pair": {},
    "sampling": {},
    "seed": 0,
    "prompt_ids": [1],
    "prompt_text": "x",
}


@pytest.mark.parametrize(
    "content,expected",
    [
        (b"{not json", "Not valid JSON"),
        (b'{"schema_version": 999}', "schema version"),
        (b"[1, 2, 3]", "must be a JSON object"),
        (b'{"schema_version": 1, "steps": [{"index": 0}]}', "the required fields 'algorithm', 'params'"),
        (json.dumps({**GOOD, "bogus": 1}).encode(), "unknown field 'bogus'"),
        (json.dumps({**GOOD, "seed": "x"}).encode(), 'seed should be a whole number, got a string ("x")'),
        (
            json.dumps({**GOOD, "steps": [{"index": 0}]}).encode(),
            "the required field 'n_before' of steps[0] is missing",
        ),
        (
            json.dumps({**GOOD, "steps": [{"index": 0, "n_before": 0, "forest": [{"id": 1}]}]}).encode(),
            "of steps[0].forest[0] are missing",
        ),
        (b"\xff\xfe\x00garbage", "not a text"),
    ],
)
def test_malformed_upload_gets_a_clear_message(explorer, tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    session = Session(pair_key=explorer.default_key)
    status = html.unescape(explorer.upload([str(bad)], session)["status"])
    assert "Could not replay" in status and expected in status
    assert "__init__" not in status and "positional" not in status
    assert session.columns == []


def test_each_upload_is_read_on_its_own(explorer, tmp_path):
    """Issue 35, point 4: Gradio's file box adds a new upload to the files it holds and sends them all,
    so the replay empties the box: the next upload's refusal names the file just uploaded, not an
    earlier one."""
    explorer.build()
    box = explorer.replays.box
    assert isinstance(box, gr.File) and box.elem_id == "sv-upload"
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text("{")
    second.write_text('{"algorithm": "sd"}')
    session = Session(pair_key=explorer.default_key)
    for path in (first, second):
        bound = explorer.replay([str(path)], session)
        assert bound[box] is None  # emptied: the next upload holds only its own files
        status = html.unescape(bound[explorer.replays.page.status])
        assert path.name in status and status.count(".json:") == 1, status
    assert "has no schema_version field" in status and "None" not in status


def test_oversized_upload_is_refused(pair_dirs, tmp_path):
    ex = Explorer(AppConfig(max_upload_bytes=1024), presets=[PairChoice("t", *pair_dirs)], preload=False)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"schema_version": 1, "padding": "x" * 5000}))
    out = ex.upload([str(big)], Session())
    assert "accepts traces up to" in out["status"]


def test_public_mode_limits(pair_dirs):
    env = {"SPECVIZ_PUBLIC": "1"}
    cfg = AppConfig.from_env(env)
    assert cfg.public and not cfg.allow_custom_pairs and not cfg.allow_remote_code
    assert cfg.max_new_tokens_cap <= 128 and cfg.max_upload_bytes <= 12 * 1024 * 1024  # a 43 MB trace gzipped
    assert AppConfig.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_NEW_TOKENS": "32"}).max_new_tokens_cap == 32
    assert AppConfig.from_env({"SPACE_ID": "me/specviz"}).public  # a Space is public unless told otherwise
    assert AppConfig.from_env({"SPACE_ID": "me/specviz", "SPECVIZ_PUBLIC": "0"}).public  # tests/test_hosting.py
    assert not AppConfig.from_env({}).public
    # a clock slow enough that a full 128-token run stays within the public deadline (tests/test_budgets.py)
    ex = Explorer(cfg, presets=[PairChoice("tiny", *pair_dirs)], clock=Clock(tick=0.01), pause=no_wait)
    session = Session(pair_key=ex.default_key)
    md, _ = ex.load(CUSTOM, "/some/path", "", session, progress=lambda *a, **k: None)
    assert "preset pairs only" in md
    (out,) = run_all(ex, session, ["ar"], max_new=10_000)
    assert f"this app allows at most {cfg.max_new_tokens_cap}" in out["status"]  # refused in words, not clamped
    final = run_all(ex, session, ["ar"], max_new=cfg.max_new_tokens_cap)[-1]
    assert len(session.columns[0].trace.output_ids) == cfg.max_new_tokens_cap and "Done" in final["status"]
    demo = ex.build()
    custom = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sv-pair-choice"][0]
    assert CUSTOM not in [c[1] for c in custom.choices]


def test_public_mode_is_said_at_start_in_the_log_and_the_footer(pair_dirs, caplog, monkeypatch):
    """Issue 35, point 10: a server on 0.0.0.0 is public; the log at start and the page's footer say so,
    with its limits. A private app's footer says nothing."""
    import logging

    from specviz.ui import app as app_module
    from specviz.ui.config import public_notice

    cfg = AppConfig.from_env({"GRADIO_SERVER_NAME": "0.0.0.0"})
    notice = public_notice(cfg)
    assert cfg.public and notice.startswith("Public mode is on because it listens on '0.0.0.0'"), notice
    for limit in ("preset pairs", f"{cfg.max_new_tokens_cap} new tokens", f"{cfg.max_columns} columns", "MB"):
        assert limit in notice
    assert public_notice(AppConfig()) == ""
    for config, shown in ((cfg, notice), (AppConfig(), "")):
        ex = Explorer(config, presets=[PairChoice("tiny", *pair_dirs)], preload=False)
        demo = ex.build()
        footer = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sv-footer")
        assert footer.visible is bool(shown) and footer.value == shown
    demo.explorer = Explorer(cfg, presets=[PairChoice("tiny", *pair_dirs)], preload=False)
    monkeypatch.setattr(demo, "launch", lambda **kwargs: kwargs)  # serve nothing: only what launch says
    monkeypatch.setattr(app_module, "start_quota_sweeper", lambda *args: None)
    with caplog.at_level(logging.WARNING, logger="specviz.ui.app"):
        app_module.launch(demo, server_name="0.0.0.0")
    assert notice in caplog.text


def test_the_code_pair_opens_when_the_default_pair_cannot_load(tmp_path):
    """Issue 35, point 9: the default pair missing (its package not installed), the page opens on the
    code pair, and says why in one sentence, rather than "No pair loaded"."""
    from specviz.ui.pairs import BUNDLED

    missing = PairChoice("default pair", str(tmp_path / "not-installed"), None)
    ex = Explorer(AppConfig(max_columns=2, measure_repeats=1), presets=[missing, BUNDLED], clock=Clock(), pause=no_wait)
    assert ex.default_key == BUNDLED.key and ex.registry.get(BUNDLED.key) is not None
    said = ex.startup_message
    assert said.startswith("The default pair (default pair) could not be loaded (") and said.count(". ") == 0
    assert said.endswith(f"so the page opened on the code pair ({BUNDLED.name}) instead.") and str(tmp_path) not in said
    demo = ex.build()
    comps = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    assert comps["sv-pair-choice"].value == BUNDLED.key and said in html.unescape(comps["sv-status"].value)
    assert "No pair loaded" not in comps["sv-pair-status"].value
    final = run_all(ex, Session(pair_key=ex.default_key), ["ar"], prompt="import os\n", max_new=3)[-1]
    assert "Done" in final["status"]


def test_env_config_and_launch_kwargs():
    from specviz.ui import launch_kwargs

    cfg = AppConfig.from_env({"SPECVIZ_MAX_UPLOAD_MB": "3", "SPECVIZ_CONCURRENCY": "4", "SPECVIZ_TARGET": "a/b"})
    assert cfg.max_upload_bytes == 3 * 1024 * 1024 and cfg.concurrency == 4 and cfg.default_target == "a/b"
    kw = launch_kwargs(cfg)
    assert kw["max_file_size"] == 3 * 1024 * 1024 and "sv-tok" in kw["css"]
    assert "plotly_click" in kw["js"] and "@media (max-width" in kw["css"]  # node clicks; phones stack
    with pytest.raises(ValueError):
        AppConfig.from_env({"SPECVIZ_CONCURRENCY": "many"})


def test_app_py_help_prints_help_and_exits():
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "app.py", "--help"], cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "usage: python app.py" in r.stdout and "--port" in r.stdout


def test_spaces_gpu_is_applied_only_when_available(monkeypatch):
    def f(x):
        return x

    monkeypatch.setitem(sys.modules, "spaces", None)  # import fails
    assert gpu(f) is f
    calls = []
    fake = types.ModuleType("spaces")

    def GPU(duration=60):  # noqa: N802 - mirrors spaces.GPU
        def deco(fn):
            calls.append(duration)
            return lambda *a, **k: fn(*a, **k)

        return deco

    fake.GPU = GPU
    monkeypatch.setitem(sys.modules, "spaces", fake)
    wrapped = gpu(f, duration=90)
    assert wrapped is not f and wrapped(3) == 3 and calls == [90]


def test_param_values_convert():
    from specviz.algorithms.registry import Param

    assert param_value(Param("g", 4, "int", 1, 8), 3.0) == 3
    assert param_value(Param("c", "a", "choice", choices=("a", "b")), 1) == "b"
    assert param_value(Param("f", 0.5, "float"), 1) == 1.0
    assert param_value(Param("f", 0.5, "float"), None) is None  # an emptied box: refused by name, not the default


@pytest.mark.slow
def test_200_step_run_scrubs_without_lag(explorer, monkeypatch):
    """A scrub rebuilds only the selected step's views: at most one tree and one controller figure per
    column, for that step, and none of the whole-run figures (their step markers move in the browser). The
    time is printed with ``-s``; speed is measured by ``python -m specviz.bench.figure_timing``, not asserted."""
    from specviz import viz

    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, FOUR, max_new=200, temperature=0.0, **{"sd.gamma": 1})
    assert session.n_steps == 200  # ar: one step per token
    built: list[tuple[str, int]] = []

    def counting(name):
        real = getattr(viz, name)

        def wrapper(*args, **kwargs):
            built.append((name, args[1] if len(args) > 1 else -1))
            return real(*args, **kwargs)

        return wrapper

    for name in (
        "step_tree_figure",
        "controller_figure",
        "tokens_per_step_figure",
        "cumulative_figure",
        "acceptance_histogram_figure",
        "time_breakdown_figure",
        "comparison_table_html",
    ):
        monkeypatch.setattr(viz, name, counting(name))
    times = []
    for k in (1, 50, 100, 150, 200, 120, 7):
        built.clear()
        t0 = time.perf_counter()
        out = explorer.scrub(session, k)
        for item in out.values():  # include the JSON that gradio sends
            if isinstance(item, go.Figure):
                item.to_json()
        times.append(1000 * (time.perf_counter() - t0))
        trees = [step for name, step in built if name == "step_tree_figure"]
        # at most one tree per column, never a later step
        assert len(trees) <= len(FOUR) and all(step <= k - 1 for step in trees), built
        assert k - 1 in trees  # ar has a step per token: its tree is the selected step's
        assert {name for name, _ in built} <= {"step_tree_figure", "controller_figure"}, built
    times.sort()
    print(f"scrub, {len(FOUR)} columns x 200 steps: median {times[len(times) // 2]:.1f} ms, max {times[-1]:.1f} ms")


def test_public_mode_offers_only_offline_presets_unless_listed(pair_dirs):
    hub = types.SimpleNamespace(name="hub-pair", requires_network=True)
    local = types.SimpleNamespace(name="local-pair", requires_network=False)
    presets = [PairChoice("local", *pair_dirs, preset=local), PairChoice("hub", "org/t", "org/d", preset=hub)]
    public = Explorer(AppConfig.from_env({"SPECVIZ_PUBLIC": "1"}), presets=list(presets), preload=False)
    assert [p.name for p in public.presets] == ["local"]
    listed = Explorer(
        AppConfig.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_PRESETS": "local-pair,hub-pair"}),
        presets=list(presets),
        preload=False,
    )
    assert [p.name for p in listed.presets] == ["local", "hub"]
    private = Explorer(AppConfig(), presets=list(presets), preload=False)
    assert len(private.presets) == 2


def test_old_exports_are_swept(tmp_path):
    from specviz.ui import trace_files

    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        d.mkdir()
        (d / "t.json").write_text("{}")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    trace_files._last_sweep[0] = 0.0
    assert trace_files.sweep_exports(str(tmp_path), max_age_s=3600) == 1
    assert not old.exists() and new.exists()
    assert trace_files.sweep_exports(str(tmp_path), max_age_s=0) == 0  # rate-limited


def test_greedy_divergence_is_marked_in_the_text(explorer):
    from specviz.ui import render

    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar", "sd"], max_new=10)
    ar, sd = session.columns
    assert render.divergence(sd, ar.trace) is None  # lossless: identical
    sd.trace.output_ids[4] = (sd.trace.output_ids[4] + 1) % 300  # as if a cache bug had flipped token 5
    assert render.divergence(sd, ar.trace) == 4
    html = text_html(render.slot_view(sd, 1, 0, diverge_at=4).tokens)
    assert html.count("sv-diverge") == 1 and "differs from ar" in html


# ---- one declaration per panel, per figure; Run and Measure by name (issue #22, point 4) ------------------

PANEL_IDS = {
    "header": "sv-head-{}",
    "tokens": "sv-text-{}",
    "tree": "sv-tree-{}",
    "narrative": "sv-story-{}",
    "distribution": "sv-dist-{}",
    "controller": "sv-ctrl-{}",
    "lengths": "sv-lengths-{}",
    "beams": "sv-beams-{}",
    "theory": "sv-theory-{}",
    "download": "sv-dl-{}",
    "download_csv": "sv-dl-csv-{}",
}


def test_a_column_panel_is_one_declaration(explorer):
    """``layout.PANELS`` is the one declaration of a column's panels: the column's components, their
    order and element ids (the browser tests'), ``render.SlotView``'s fields and defaults, and what
    ``views.slot_views`` sends all follow from it."""
    from dataclasses import fields

    from specviz.ui import layout, views

    names = [p.name for p in layout.PANELS]
    assert names == list(PANEL_IDS) and Slot.panels() == ["column", *names]
    assert [(f.name, f.default) for f in fields(render.SlotView)] == [(p.name, p.hidden) for p in layout.PANELS]
    with pytest.raises(TypeError):
        render.SlotView(sidebar="x")  # a panel not declared
    explorer.build()
    page = explorer.page
    for i, slot in enumerate(page.slots):
        assert slot.column.elem_id == f"sv-col-{i}"
        assert [slot.components[p].elem_id for p in names] == [PANEL_IDS[p].format(i) for p in names]
        with pytest.raises(AttributeError):
            slot.sidebar
    # hidden until there is something to show: as the page has always opened
    shown = {p.name for p in layout.PANELS if page.slots[0].components[p.name].visible is not False}
    assert shown == {"header", "tokens", "tree"}
    # a full forced view sends every declared panel of a column, each as its update says
    trace = specviz.decode(
        explorer.registry.get(explorer.default_key), "sd", [1, 2, 3], max_new_tokens=3, temperature=1.0
    )
    session = Session(columns=[Column("sd", "sd", trace=trace, done=True)], source="replay")
    out = views.slot_views(session, 0, explorer.n_slots, full=True, force=True)
    assert {k for k in out if k[1] == 0} == {(p, 0) for p in Slot.panels()}
    v = render.slot_view(session.columns[0], 0, 0)
    for p in layout.PANELS:
        expected = p.update(getattr(v, p.name))
        got = out[p.name, 0]
        assert type(got) is type(expected)
        if isinstance(got, gr.components.Component):
            assert got.visible == expected.visible
    assert out["distribution", 0].visible is False and out["tree", 0] is not None


def test_the_comparison_figures_are_one_declaration_each(explorer):
    """``layout.FIGURES``: the page's figure components (ids, rows), the outputs after the table and the
    values ``render.comparison`` computes, by one name each."""
    from specviz.ui import layout

    demo = explorer.build()
    page = explorer.page
    names = [f.name for f in layout.FIGURES]
    assert names == ["per_step", "cumulative", "hist", "time", "positions", "race", "latency"]
    assert [page.figures[n].elem_id for n in names] == [f.elem_id for f in layout.FIGURES]
    assert page.race is page.figures["race"] and page.component("race") is page.figures["race"]
    outputs = page.outputs()
    at = outputs.index(page.table)
    assert outputs[at + 1 : at + 1 + len(names)] == [page.figures[n] for n in names]
    rows = {}
    for b in demo.blocks.values():
        if isinstance(b, gr.Row) and "sv-figrow" in (b.elem_classes or []):
            rows[b._id] = [c.elem_id for c in b.children]
    assert sorted(rows.values()) == [
        ["sv-hist", "sv-time"],
        ["sv-per-step", "sv-cumulative"],
        ["sv-positions", "sv-race"],
    ]
    assert set(render.comparison(Session(), 0)) == {"table", *names}


def test_run_and_measure_take_their_values_by_name(explorer):
    """Gradio passes Run's, Measure's and the sampling message's values by parameter name
    (``inputs_kwargs``), never by position; the API keeps the names and their order."""
    import inspect

    demo = explorer.build()
    page = explorer.page
    fns = {}
    for f in demo.fns.values():
        fns.setdefault(f.name, []).append(f)
    for name in ("run", "measure", "input_message"):
        for f in fns[name]:
            assert list(f.input_keyword_names) == f.input_parameter_names  # every input named
            params = list(inspect.signature(getattr(explorer, name)).parameters)
            assert f.input_parameter_names == [p for p in params if p in f.input_parameter_names]
            by_name = dict(zip(f.input_parameter_names, f.inputs))
            assert by_name["session"] is page.session and by_name["seed"] is page.seed
            assert by_name["max_new_tokens"] is page.max_new and by_name["top_k"] is page.top_k
    api = demo.get_api_info()["named_endpoints"]
    for endpoint in ("/run", "/measure"):
        assert [p["parameter_name"] for p in api[endpoint]["parameters"]] == [
            "prompt",
            "max_new_tokens",
            "temperature",
            "top_p",
            "top_k",
            "seed",
            "columns",
            "pace",
            "chat",
        ]


def test_the_page_starts_from_the_one_set_of_defaults(explorer):
    """Issue 35, point 6: the sampling boxes start where ``decode`` and the command line do."""
    from specviz import defaults

    demo = explorer.build()
    comps = {b.elem_id: b for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    assert comps["sv-temperature"].value == defaults.TEMPERATURE and comps["sv-top-p"].value == defaults.TOP_P
    assert comps["sv-top-k"].value == defaults.TOP_K and comps["sv-seed"].value == str(defaults.SEED)
    assert comps["sv-max-new"].value == defaults.MAX_NEW_TOKENS == AppConfig().default_max_new_tokens
