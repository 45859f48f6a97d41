"""A live run keeps pace with decoding (issue 34): the page is sent a step only once it has drawn the
one before (``pacing.FrameGate``), the steps decoded meanwhile are dropped from the screen (the latest
wins, nothing is computed for them) but kept in the trace, and decoding never waits for the page.
Time is the test's own: a clock moved only by the run's pauses, the page's reports made by hand."""

from __future__ import annotations

import dataclasses

import pytest
from test_budgets import FakeTime  # the run's time: moved only by its pauses (compute takes no time)
from test_ui import columns_for
from test_ui_support import run_inputs, save_tiny_pair

from specviz.ui import AppConfig, Explorer, Session, run_loop
from specviz.ui.pacing import FrameGate
from specviz.ui.pairs import PairChoice


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
    assert gate.ready(drawn=4, reports=True, now=10.5)  # drawn: the latest step goes
    assert gate.ready(drawn=9, reports=True, now=10.5)  # a later report counts too


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
    assert not gate.ready(drawn=1, reports=True, now=8.5)  # past the patience, not past twice the draw
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


def unpaced_run(ex, session, max_new=16):
    return ex.run(session, **run_inputs(max_new_tokens=max_new, columns=columns_for(["ar"]), pace=0.0))


def test_unpaced_a_page_behind_loses_frames_not_decoding_time(pair_dirs, monkeypatch):
    """Unpaced, the page draws the opening view and nothing after it: decoding goes on (the run never
    pauses), an update goes only each ``page_wait_s`` (the patience), the steps between are never
    built, and the trace keeps them all. Before issue 34 the run waited up to 3 s for the page at
    every update and sent them all."""
    clock = FakeTime(tick=0.05)  # every reading of the clock is 50 ms of compute later
    pauses = []
    clock.pause = lambda control, seconds: pauses.append(seconds) or control.stopped()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    built = counting_views(monkeypatch)
    gen = unpaced_run(ex, session, max_new=64)
    next(gen)
    ex.page_shown(session, "0:x")  # the opening view drawn; nothing after it
    sent = [(session.n_steps, clock.now) for _ in gen]
    assert session.n_steps == 64 and len(session.columns[0].trace.steps) == 64  # every step kept, for the slider
    assert pauses == []  # decoding never waited
    live = sent[:-1]  # the last update is the run's final one
    assert 2 <= len(live) < 20  # frames dropped: far fewer updates than steps
    assert all(b[1] - a[1] >= 3.0 for a, b in zip(live[1:], live[2:]))  # after the first, one a patience
    assert built == [0, *(k for k, _ in sent)]  # nothing built for a step not sent


def test_unpaced_the_latest_step_goes_as_soon_as_the_page_has_drawn(pair_dirs):
    clock = FakeTime(tick=0.05)
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    gen = unpaced_run(ex, session, max_new=64)
    next(gen)
    ex.page_shown(session, "0:x")
    next(gen)
    a, t_a = session.n_steps, clock.now
    next(gen)  # not reported: the next one comes a patience later, many steps on
    b, t_b = session.n_steps, clock.now
    assert b - a > 5 and t_b - t_a >= 3.0
    ex.page_shown(session, f"{b}:x")  # drawn: the next update goes with the throttle's next chance
    next(gen)
    c, t_c = session.n_steps, clock.now
    assert c > b and t_c - t_b < 1.0


def test_paced_the_pages_draw_is_part_of_the_pace(pair_dirs):
    """Paced (for watching), every step is shown: a step waits for the page's report of the one before,
    at most the patience (here the page never reports after the opening view: 3 s a step)."""
    clock = FakeTime()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    gen = paced_run(ex, session)
    next(gen)
    ex.page_shown(session, "0:x")
    steps = [session.n_steps for _ in gen]
    assert steps == [*range(1, 17), 16]
    assert clock.now >= 0.5 + 15 * 3.0 - 1e-9


def test_the_page_saying_hello_makes_the_first_run_wait_for_it(pair_dirs):
    """``PAGE_JS`` reports step 0 when the page loads, before any run: the session's first run then
    waits for the page's draw of its opening view (the largest update) before its first step."""
    clock = FakeTime()
    ex = explorer(pair_dirs, clock)
    session = Session(pair_key=ex.default_key)
    list(paced_run(ex, session, max_new=4))
    assert clock.now == pytest.approx(4 * 0.5)  # a page that never said hello: not waited for
    clock.now = 0.0
    ex.page_shown(session, "0:load")
    assert session.page_reports and ex.runs.get(id(session)) is None
    gen = paced_run(ex, session, max_new=4)
    next(gen)
    next(gen)  # step 1: after the opening view's draw (never reported here: the patience)
    assert session.n_steps == 1 and clock.now >= 3.0
    gen.close()
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
