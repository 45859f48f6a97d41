"""A live run keeps pace with decoding (issue 34): the page is sent a step only once it has drawn the
one before (``runner.FrameGate``), the steps decoded meanwhile are dropped from the screen (the latest
wins, nothing is computed for them) but kept in the trace, and decoding never waits for the page.
Time is the test's own: a clock moved only by the run's pauses, the page's reports made by hand."""
from __future__ import annotations

import dataclasses

import pytest
from test_budgets import FakeTime  # the run's time: moved only by its pauses (compute takes no time)
from test_ui import columns_for
from test_ui_support import run_inputs, save_tiny_pair

from specviz.ui import AppConfig, Explorer, Session
from specviz.ui import run_loop
from specviz.ui.pairs import PairChoice
from specviz.ui.runner import FrameGate


# ---- the rule, on explicit events ----------------------------------------------------------------------
def test_a_page_that_does_not_report_gets_every_update():
    gate = FrameGate(patience=3.0)
    assert gate.ready(drawn=-1, reports=False, now=0.0)
    gate.sent(5, now=0.0)
    assert gate.ready(drawn=-1, reports=False, now=0.0)  # a script or an API client: not waited for


def test_the_next_update_waits_until_the_page_drew_the_last():
    gate = FrameGate(patience=3.0)
    assert gate.ready(drawn=-1, reports=True, now=0.0)  # nothing sent yet
    gate.sent(4, now=10.0)
    assert not gate.ready(drawn=3, reports=True, now=10.5)  # still drawing step 4: step 5 is dropped
    assert gate.ready(drawn=4, reports=True, now=10.5)      # drawn: the latest step goes
    assert gate.ready(drawn=9, reports=True, now=10.5)      # a later report counts too


def test_a_lost_report_stalls_the_page_at_most_the_patience():
    gate = FrameGate(patience=3.0)
    gate.sent(4, now=10.0)
    assert not gate.ready(drawn=3, reports=True, now=12.99)
    assert gate.ready(drawn=3, reports=True, now=13.0)


def test_a_page_drawing_slowly_is_not_sent_updates_faster_than_it_draws():
    """A page that took 5 s to draw an update is given twice that before a missing report counts as
    lost: updates sent faster would pile up in it and come out in a burst (the issue's freeze)."""
    gate = FrameGate(patience=3.0)
    gate.sent(1, now=0.0)
    assert gate.ready(drawn=1, reports=True, now=5.0)  # drawn, 5 s after it was sent
    gate.sent(2, now=5.0)
    assert not gate.ready(drawn=1, reports=True, now=8.5)   # past the patience, not past twice the draw
    assert not gate.ready(drawn=1, reports=True, now=14.9)
    assert gate.ready(drawn=1, reports=True, now=15.0)


# ---- the run loop, driven by its clock and the page's reports ------------------------------------------
@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("live-frames-pair"))


def explorer(pair_dirs, clock):
    cfg = dataclasses.replace(AppConfig(), max_wait_s=None, run_deadline_s=None, page_wait_s=3.0)
    return Explorer(cfg, presets=[PairChoice("tiny", *pair_dirs)], clock=clock, pause=clock.pause)


def counting_views(monkeypatch) -> list[int]:
    """The steps each live view was built for (``run_loop.full_view``, counted)."""
    built: list[int] = []
    real = run_loop.full_view

    def view(session, *args, **kwargs):
        built.append(session.n_steps)
        return real(session, *args, **kwargs)
    monkeypatch.setattr(run_loop, "full_view", view)
    return built


def paced_run(ex, session, max_new=16):
    return ex.run(session, **run_inputs(max_new_tokens=max_new, columns=columns_for(["ar"]), pace=0.5))


def test_a_page_that_draws_every_update_is_sent_every_step(pair_dirs, monkeypatch):
    clock = FakeTime()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    built = counting_views(monkeypatch)
    gen = paced_run(ex, session)
    steps = []
    for view in gen:
        steps.append(session.n_steps)
        ex.page_shown(session, f"{session.n_steps}:x")  # drawn at once
    assert session.n_steps == 16
    assert steps == [0, *range(1, 17), 16]  # the opening view, every step in order, the last update
    assert built == steps


def test_a_page_behind_loses_frames_not_decoding_time(pair_dirs, monkeypatch):
    """The page draws the opening view and nothing after it: decoding goes on at its pace, one update
    goes every ``page_wait_s`` (the patience), the steps between are never built, and the trace keeps
    them all. Before issue 34 the run waited up to 3 s for the page at every step (about 16 x 3 s)."""
    clock = FakeTime()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    built = counting_views(monkeypatch)
    gen = paced_run(ex, session)
    next(gen)
    ex.page_shown(session, "0:x")  # the opening view drawn; nothing after it
    rest = [session.n_steps for _ in gen]
    assert session.n_steps == 16 and len(session.columns[0].trace.steps) == 16  # every step kept, for the slider
    assert clock.now == pytest.approx(16 * 0.5)  # a pace a step, and no wait for the page
    # sent: step 1 (the page had drawn step 0), then one every 3 s of the paces (6 steps), then the last
    assert rest == [1, 7, 13, 16]
    assert built == [0, 1, 7, 13, 16]  # nothing built for a step not sent


def test_the_latest_step_wins_when_the_page_catches_up(pair_dirs):
    clock = FakeTime()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    gen = paced_run(ex, session)
    next(gen)
    ex.page_shown(session, "0:x")
    first = next(gen)
    assert session.n_steps == 1 and "step 1" in first["status"]
    # the page is busy with step 1 while steps 2 and 3 are decoded; it reports step 1 drawn then
    steps = []
    for _ in gen:
        steps.append(session.n_steps)
        if len(steps) == 1:
            break
    assert steps == [7]  # step 1 never reported: the patience let step 7 go
    control = ex.runs.get(id(session))
    ex.page_shown(session, "7:x")
    assert control.shown_step == 7
    nxt = next(gen)
    assert session.n_steps == 8 and "step 8" in nxt["status"]  # the step decoded right after the report


def test_the_page_saying_hello_makes_the_first_run_wait_for_it(pair_dirs):
    """``PAGE_JS`` reports step 0 when the page loads, before any run: the session's first run then
    waits for the page's draws from its first step (the opening view is the largest update)."""
    clock = FakeTime()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    ex.page_shown(session, "0:load")
    assert session.page_reports and ex.runs.get(id(session)) is None
    steps = [session.n_steps for _ in paced_run(ex, session)]
    assert steps == [0, 6, 12, 16]  # the opening view never reported: an update each patience
    ex.page_shown(session, "garbage")
    ex.page_shown(None, "1:x")  # no session: nothing to note


def test_a_pages_first_run_opens_without_redrawing_the_comparison_figures(pair_dirs):
    """The opening view of a run is the page's largest update: on a page whose comparison figures show
    nothing yet it leaves them (seven figures the browser need not redraw; the table says what runs),
    and after a run it clears the earlier run's figures."""
    from specviz.ui.layout import FIGURES
    clock = FakeTime()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    first = list(paced_run(ex, session, max_new=3))
    assert not any(f.name in first[0] for f in FIGURES) and "table" in first[0]
    assert all(f.name in first[-1] for f in FIGURES)  # the run's last update draws them
    second = next(paced_run(ex, session, max_new=3))
    assert all(f.name in second for f in FIGURES)  # the first run's figures are cleared
