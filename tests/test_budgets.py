"""Budgets for a public app (issue #21, points 3 and 4; docs/hosting.md): bounded caches, a cost cap
on algorithm parameters, a per-run deadline that pacing and the page's reports count against, Measure
that stops with its client, bounded session state and export / upload quotas.

In-process and fast: time is driven by the Explorer's injected ``clock`` and ``pause``, never by the
machine's speed."""

from __future__ import annotations

import dataclasses
import os
import stat
from time import time as os_time

import pytest
from test_ui import columns_for
from test_ui_support import run_inputs, save_tiny_pair
from tiny import tiny_pair

import specviz
from specviz.algorithms.sequoia_tune import CACHE_CAPS, PairCache, pair_cache
from specviz.ui import AppConfig, Explorer, Session, runner, trace_files
from specviz.ui import app as app_module
from specviz.ui import measure as measure_module
from specviz.ui import replay as replay_module
from specviz.ui.budget import cost_refusal, run_cost
from specviz.ui.pairs import PairChoice


# ---- (a) Sequoia's per-pair cache is a bounded LRU -------------------------------------------------------
def test_pair_cache_evicts_the_least_recently_used_of_a_kind():
    cache = PairCache({"dp": 2, "times": 1})
    cache[("dp", 1)] = "a"
    cache[("dp", 2)] = "b"
    assert cache.get(("dp", 1)) == "a"  # now the most recently used
    cache[("dp", 3)] = "c"
    assert ("dp", 2) not in cache and cache[("dp", 1)] == "a" and cache[("dp", 3)] == "c"
    cache[("times", 1)] = "t"
    cache[("times", 2)] = "u"
    assert cache.count("times") == 1 and cache.count("dp") == 2 and len(cache) == 3
    made = []
    assert cache.get_or_make(("dp", 3), lambda: made.append(1)) == "c" and not made


def test_sequoia_keeps_a_bounded_number_of_dp_tables_per_pair():
    pair = tiny_pair("llama", vocab=16)
    cap = CACHE_CAPS["dp"]
    for i in range(cap + 4):
        vec = f"{0.5 - i / 100:.2f},0.2,0.1"
        specviz.decode(pair, "sequoia", [1, 2, 3], max_new_tokens=2, size=6, depth=3, acceptance=vec, temperature=1.0)
    cache = pair_cache(pair)
    assert pair_cache(pair) is cache and not hasattr(pair, "extras")  # one per pair, kept by sequoia_tune
    assert cache.count("dp") == cap
    # the oldest vectors went first; the newest is still there (no recompute for a repeated request)
    assert not any(k[1][0] == 0.5 for k in cache._kinds["dp"])
    assert any(abs(k[1][0] - (0.5 - (cap + 3) / 100)) < 1e-12 for k in cache._kinds["dp"])


# ---- the app: helpers ---------------------------------------------------------------------------------

PUBLIC = AppConfig.public_defaults()


class FakeTime:
    """The run's time, moved only by the waits (compute takes no time) or by ``tick`` per reading."""

    def __init__(self, tick: float = 0.0):
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now

    def pause(self, control, seconds):
        self.now += max(0.0, seconds)
        return control.stopped()


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("budget-pair"))


@pytest.fixture(scope="module")
def shared_registry(pair_dirs):
    """One loaded tiny pair for every Explorer here (loading it is the slow part)."""
    ex = Explorer(AppConfig(), presets=[PairChoice("tiny", *pair_dirs)])
    return ex.registry


def make(pair_dirs, shared_registry, config=PUBLIC, time=None, **changes):
    time = time or FakeTime()
    cfg = dataclasses.replace(config, **changes)
    return Explorer(cfg, shared_registry, presets=[PairChoice("tiny", *pair_dirs)], clock=time, pause=time.pause)


def run(ex, session, algos, max_new=16, pace=0.0, **overrides):
    return ex.run(session, **run_inputs(max_new_tokens=max_new, columns=columns_for(algos, **overrides), pace=pace))


def do_measure(ex, session, algos, max_new=8, **overrides):
    return ex.measure(session, **run_inputs(max_new_tokens=max_new, columns=columns_for(algos, **overrides)))


# ---- (b) a cost cap on algorithm parameters -----------------------------------------------------------
def test_every_algorithm_fits_the_public_cap_at_its_defaults():
    for name in specviz.ALGORITHMS:
        cost = run_cost(name, {}, PUBLIC.max_new_tokens_cap)
        assert cost.positions <= PUBLIC.max_run_cost, (name, cost)


@pytest.mark.parametrize(
    "algorithm,params,named",
    [
        ("mcsd", {"k_config": "16x16"}, "k_config"),
        ("specinfer", {"k_config": "1024"}, "k_config"),
        ("sequoia", {"size": 512, "depth": 32}, "size"),
        ("sequoia", {"calibration_steps": 4096, "width": 64}, "calibration_steps"),
        ("dsbd", {"width": 16, "gamma": 16}, "width x gamma"),
        ("batch_sd", {"num_drafts": 16, "gamma": 32}, "num_drafts x gamma"),
    ],
)
def test_costly_parameters_are_named_with_the_cap(algorithm, params, named):
    message = cost_refusal(algorithm, params, 128, PUBLIC.max_run_cost)
    assert message is not None and named in message and f"{PUBLIC.max_run_cost:,}" in message
    assert cost_refusal(algorithm, params, 128, None) is None  # private: no cap


def test_a_run_over_the_cap_is_refused_before_it_starts(pair_dirs, shared_registry):
    ex = make(pair_dirs, shared_registry)
    session = Session(pair_key=ex.default_key)
    outs = list(run(ex, session, ["ar", "mcsd"], max_new=64, **{"mcsd.k_config": "16x16"}))
    assert len(outs) == 1 and "k_config" in outs[0]["status"] and "16,384" in outs[0]["status"]
    assert session.columns == [] and ex.runs.get(id(session)) is None
    outs = list(do_measure(ex, session, ["ar", "mcsd"], max_new=64, **{"mcsd.k_config": "16x16"}))
    assert len(outs) == 1 and "k_config" in outs[0]["status"]


def test_measure_takes_a_bounded_number_of_algorithms(pair_dirs, shared_registry):
    ex = make(pair_dirs, shared_registry)
    outs = list(do_measure(ex, Session(pair_key=ex.default_key), ["ar", "sd", "pld", "specinfer"]))
    assert len(outs) == 1 and f"at most {PUBLIC.max_measure_columns} columns" in outs[0]["status"]


# ---- (c) the deadline, pacing and the page's reports ---------------------------------------------------
def test_a_run_stops_at_its_deadline_with_a_message(pair_dirs, shared_registry):
    time = FakeTime(tick=1.0)  # every reading of the clock is a second later: the run's compute
    ex = make(pair_dirs, shared_registry, time=time, run_deadline_s=20)
    session = Session(pair_key=ex.default_key)
    outs = list(run(ex, session, ["ar", "sd"], max_new=64))
    assert "a run may take 20 s" in outs[-1]["status"] and "Stopped" in outs[-1]["status"]
    assert 0 < session.n_steps < 64
    assert all(c.trace.finish_reason == "stopped" for c in session.columns)
    assert ex.runs.get(id(session)) is None and not session.running


def test_pacing_and_a_hostile_page_report_hold_the_slot_at_most_the_wait_budget(pair_dirs, shared_registry):
    """The reproduction of issue #21: a client reports step 0 once and never again (since issue 34 the
    run does not wait for it, it only sends fewer updates), and pace 0.5 adds half a second a step.
    Compute takes no time here, so the run's whole time is waiting: at most ``max_wait_s``."""
    time = FakeTime()
    ex = make(pair_dirs, shared_registry, time=time)
    session = Session(pair_key=ex.default_key)
    gen = run(ex, session, ["ar"], max_new=64, pace=0.5)
    next(gen)
    ex.page_shown(session, "0:x")
    assert ex.runs.get(id(session)).page_reports
    outs = list(gen)
    assert session.columns[0].trace.finish_reason == "length" and session.n_steps == 64  # it ran to the end
    assert time.now <= PUBLIC.max_wait_s + 1e-9
    assert "Done" in outs[-1]["status"]


def test_without_a_wait_budget_the_same_run_waits_much_longer(pair_dirs, shared_registry):
    """The control for the test above: the budget is what bounds it (63 paces of 0.5 s)."""
    time = FakeTime()
    ex = make(pair_dirs, shared_registry, time=time, max_wait_s=None, run_deadline_s=None)
    session = Session(pair_key=ex.default_key)
    gen = run(ex, session, ["ar"], max_new=64, pace=0.5)
    next(gen)
    ex.page_shown(session, "0:x")
    list(gen)
    assert time.now > 3 * PUBLIC.max_wait_s


@pytest.mark.parametrize(
    "report", ["-1:x", "-5", "x:1", "", "²:x", "1" * 70, None, 3, ["1:x"], "1e3:x", " -1:x", "１:x"]
)
def test_the_page_report_ignores_anything_but_a_step_number(pair_dirs, shared_registry, report):
    ex = make(pair_dirs, shared_registry)
    session = Session(pair_key=ex.default_key)
    gen = run(ex, session, ["ar"], max_new=4)
    next(gen)
    ex.page_shown(session, report)
    ex.page_shown(None, report)
    control = ex.runs.get(id(session))
    assert not control.page_reports and control.shown_step == -1
    ex.page_shown(session, "2:1700000000")
    assert control.page_reports and control.shown_step == 2
    gen.close()


# ---- (d) Measure hands control back, stops with its client and at the deadline --------------------------
def test_measure_yields_between_steps_so_a_gone_client_ends_it(pair_dirs, shared_registry):
    time = FakeTime(tick=1.0)
    ex = make(pair_dirs, shared_registry, time=time, run_deadline_s=None)
    session = Session(pair_key=ex.default_key)
    gen = do_measure(ex, session, ["ar"], max_new=16)
    outs = [next(gen) for _ in range(4)]  # start, "measuring ar", then ticks inside its warm-up decode
    assert all("measuring ar" in o["measurements"] for o in outs[1:])
    assert ex.runs.get(id(session)) is not None
    gen.close()  # what Gradio does at a yield when the client has gone
    assert ex.runs.get(id(session)) is None


def test_measure_stops_at_the_deadline(pair_dirs, shared_registry):
    time = FakeTime(tick=1.0)
    ex = make(pair_dirs, shared_registry, time=time, run_deadline_s=10)
    outs = list(do_measure(ex, Session(pair_key=ex.default_key), ["ar", "sd"], max_new=16))
    assert "stopped after 0 of 2" in outs[-1]["measurements"] and "may take 10 s" in outs[-1]["measurements"]
    assert outs[-1]["measure_btn"].interactive is True


def test_measure_without_ticks_still_measures_medians(pair_dirs, shared_registry):
    pair = shared_registry.get(make(pair_dirs, shared_registry).default_key)
    *_, (note, rows) = measure_module.measure(
        pair, "def f(x):\n", [("ar", {})], repeats=2, max_new_tokens=4, temperature=0.0, seed=0
    )
    assert "measured 1 algorithm" in note and rows[0].new_tokens == 4 and rows[0].wall_s > 0


# ---- (e) bounded state, exports and replay --------------------------------------------------------------
def test_session_state_expires_and_a_dropped_state_stops_its_run(pair_dirs, shared_registry):
    import gradio as gr

    ex = make(pair_dirs, shared_registry)
    demo = ex.build()
    states = [b for b in demo.blocks.values() if isinstance(b, gr.State)]
    assert [s.time_to_live for s in states] == [PUBLIC.session_ttl_s]
    pace = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sv-pace")
    assert f"at most {PUBLIC.max_wait_s} s" in pace.info  # the page says pacing is bounded
    assert app_module.launch_kwargs(PUBLIC)["state_session_capacity"] == PUBLIC.session_capacity
    session = Session(pair_key=ex.default_key)
    gen = run(ex, session, ["ar"], max_new=32)
    next(gen)
    states[0].delete_callback(session)
    outs = list(gen)
    assert "Stopped" in outs[-1]["status"] and session.n_steps < 32
    ex.session_deleted(session)
    assert session.columns == []


def test_exports_go_to_a_private_directory_with_a_quota(tmp_path):
    root = trace_files.export_root()
    assert root.startswith(os.path.realpath(os.path.dirname(root)))
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700 and "specviz-traces-" in os.path.basename(root)
    pair = tiny_pair("llama", vocab=16)
    trace = specviz.decode(pair, "ar", [1, 2, 3], max_new_tokens=4, temperature=1.0)
    size = len(trace.to_json().encode())
    cols = [runner.Column("ar (k_config=" + "0" * 400 + "4)", "ar", trace=trace) for _ in range(4)]
    for i, c in enumerate(cols):
        assert trace_files.export(c, str(tmp_path), quota=2 * size + size // 2) is not None
        os.utime(os.path.dirname(c.path), (1000 + i, 1000 + i))
    left = sorted(os.listdir(tmp_path))
    assert len(left) == 2 and all(os.path.exists(c.path) for c in cols[2:])  # the newest two
    assert all(len(os.path.basename(c.path)) < 120 for c in cols)
    big = runner.Column("ar", "ar", trace=trace)
    assert trace_files.export(big, str(tmp_path / "other"), quota=size - 1) is None and big.path is None


def test_replay_reads_only_the_files_it_shows(pair_dirs, shared_registry, tmp_path, monkeypatch):
    ex = make(pair_dirs, shared_registry)
    pair = shared_registry.get(ex.default_key)
    trace = specviz.decode(pair, "ar", "def f(x):\n", max_new_tokens=3, temperature=1.0)
    paths = []
    for i in range(ex.n_slots + 3):
        p = tmp_path / f"t{i}.json"
        p.write_text(trace.to_json())
        paths.append(str(p))
    read = []
    real = replay_module.load_trace_file
    monkeypatch.setattr(replay_module, "load_trace_file", lambda path, cap: read.append(path) or real(path, cap))
    session = Session()
    out = ex.upload(paths, session)
    assert read == paths[: ex.n_slots] and len(session.columns) == ex.n_slots
    assert f"first {ex.n_slots} of {len(paths)}" in out["status"]
    assert "expected uploaded trace files" in ex.upload([None], Session())["status"]


def test_an_oversized_trace_is_refused_before_it_is_read(tmp_path, monkeypatch):
    p = tmp_path / "big.json"
    p.write_bytes(b"x" * 2048)
    opened = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: opened.append(a[0]) or real_open(*a, **k))
    with pytest.raises(specviz.TraceFormatError, match="MB"):
        trace_files.load_trace_file(str(p), 1024)
    assert str(p) not in opened


def test_the_deadline_reaches_inside_sequoias_calibration(pair_dirs, shared_registry):
    from specviz import interrupt

    time = FakeTime(tick=1.0)
    ex = make(pair_dirs, shared_registry, config=AppConfig(), time=time, run_deadline_s=30)
    session = Session(pair_key=ex.default_key)
    # 512 calibration steps; each reads the clock once (a second) between two of them
    outs = list(
        run(ex, session, ["sequoia"], max_new=8, **{"sequoia.calibration_steps": 512, "sequoia.calibration": "prompt"})
    )
    col = session.columns[0]
    assert col.error and "Stopped during Sequoia's calibration" in col.error
    assert time.now < 100 and ex.runs.get(id(session)) is None and outs[-1]["run_btn"].interactive
    interrupt.check("nothing")  # outside a run's step it never stops anything
    with interrupt.checking(lambda: True):
        with pytest.raises(interrupt.RunInterrupted):
            interrupt.check("a step")
    interrupt.check("nothing")  # and the flag went with the step


def test_gradios_private_directory_is_kept_under_its_quota(tmp_path):
    """Uploads reach Gradio's directory without any event of ours; a sweeper keeps it under the quota,
    oldest first, sparing what was written in the last seconds (it may be in use)."""
    for i, age in enumerate((300, 200, 100, 0)):
        d = tmp_path / f"upload{i}"
        d.mkdir()
        (d / "f.json").write_bytes(b"x" * 1000)
        os.utime(d, (os_time() - age, os_time() - age))
    assert trace_files.enforce_quota(str(tmp_path), 1500, min_age_s=50) == 3
    assert sorted(os.listdir(tmp_path)) == ["upload3"]  # the young one stays even over the quota
    (tmp_path / "upload3" / "g.json").write_bytes(b"y" * 1000)
    os.utime(tmp_path / "upload3", (os_time() - 100, os_time() - 100))
    done = trace_files.start_quota_sweeper(str(tmp_path), 500, every_s=0.01, min_age_s=0)
    try:
        deadline = os_time() + 30
        while os.listdir(tmp_path) and os_time() < deadline:
            done.wait(0.05)
        assert os.listdir(tmp_path) == []
    finally:
        done.set()


def test_launch_starts_the_sweeper_on_its_own_directory_only(pair_dirs, shared_registry, monkeypatch, tmp_path):
    started = []
    monkeypatch.setattr(app_module, "start_quota_sweeper", lambda root, cap: started.append((root, cap)))
    ours = tmp_path / "specviz-gradio-abc"
    ours.mkdir()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(ours))
    monkeypatch.delenv("GRADIO_SERVER_NAME", raising=False)
    monkeypatch.delenv("GRADIO_SHARE", raising=False)
    ex = make(pair_dirs, shared_registry)
    demo = ex.build()
    demo.explorer = ex
    monkeypatch.setattr(demo, "launch", lambda **kw: kw)
    assert app_module.launch(demo)["state_session_capacity"] == PUBLIC.session_capacity
    assert started == [(str(ours), PUBLIC.max_temp_bytes)]
    started.clear()
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))  # an operator's directory: not ours to prune
    app_module.launch(demo)
    assert started == []


# ---- (g) a per-visitor limit on runs ----------------------------------------------------------------------
from specviz.ui.ratelimit import RunLimiter, visitor_key  # noqa: E402


def test_run_limiter_is_a_sliding_minute_per_visitor():
    now = [0.0]
    limiter = RunLimiter(3, clock=lambda: now[0])
    for t in (0.0, 10.0, 20.0):
        now[0] = t
        assert limiter.allow("a") is None
    now[0] = 30.0
    refusal = limiter.allow("a")
    assert refusal == "This app allows 3 runs a minute per visitor; try again in 30 s."
    assert limiter.allow("b") is None  # another visitor has its own minute
    now[0] = 60.5  # the run at 0 s has left the window, those at 10 and 20 s have not
    assert limiter.allow("a") is None and limiter.allow("a") is not None
    assert RunLimiter(None, clock=lambda: 0.0).allow("a") is None  # private mode: no limit


def test_visitors_are_told_apart_by_gradio_session_hash():
    from gradio.context import LocalContext

    first, second = Session(), Session()
    assert visitor_key(first) != visitor_key(second)  # outside a request: the state itself
    token = LocalContext.request.set(type("Request", (), {"session_hash": "page-1"})())
    try:  # one page whose state was replaced (expired, or sent afresh) is still one visitor
        assert visitor_key(first) == visitor_key(second) == ("session", "page-1")
    finally:
        LocalContext.request.reset(token)


def test_public_app_refuses_a_visitors_runs_over_the_limit(pair_dirs, shared_registry):
    assert PUBLIC.max_runs_per_minute == 10
    time = FakeTime()
    ex = make(pair_dirs, shared_registry, time=time, max_runs_per_minute=2)
    session, other = Session(pair_key=ex.default_key), Session(pair_key=ex.default_key)
    for _ in range(2):
        outs = list(run(ex, session, ["ar"], max_new=2))
        assert len(outs) > 1  # it ran
    outs = list(do_measure(ex, session, ["ar"], max_new=2))  # Measure counts too
    assert len(outs) == 1 and "2 runs a minute per visitor" in outs[0]["status"]
    assert len(list(run(ex, other, ["ar"], max_new=2))) > 1
    time.now += 61
    assert len(list(run(ex, session, ["ar"], max_new=2))) > 1


# ---- (h) a per-visitor limit on uploads -------------------------------------------------------------------
import types  # noqa: E402

import gradio as gr  # noqa: E402
from starlette.middleware import Middleware  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from specviz.ui.ratelimit import SlidingWindow  # noqa: E402
from specviz.ui.uploadlimit import UploadLimiter, UploadLimitMiddleware  # noqa: E402

MB = 1024 * 1024


def test_sliding_window_checks_every_limit_and_counts_only_what_it_lets_through():
    now = [0.0]
    window = SlidingWindow([3, 100], clock=lambda: now[0])
    assert window.charge("a", [1, 60]) is None
    now[0] = 20.0
    assert window.charge("a", [1, 50]) == 40.0  # 110 bytes: wait until the charge at 0 s leaves
    assert window.charge("a", [1, 40]) is None  # the refused one was not counted
    assert window.charge("a", [1, 101]) == float("inf")  # never fits
    now[0] = 30.0
    assert window.charge("a", [1, 0]) is None and window.charge("a", [1, 0]) == 30.0  # the fourth in a minute
    assert window.charge("b", [1, 100]) is None
    assert SlidingWindow([None, None], clock=lambda: 0.0).charge("a", [10**9, 10**12]) is None


def test_upload_limiter_counts_each_addresss_uploads_and_bytes_over_a_sliding_minute():
    now = [0.0]
    limiter = UploadLimiter(3, 10 * MB, clock=lambda: now[0])
    assert limiter.allow("10.0.0.1", 4 * MB) is None
    now[0] = 10.0
    assert limiter.allow("10.0.0.1", 4 * MB) is None
    now[0] = 20.0
    assert limiter.allow("10.0.0.1", 4 * MB) == (
        "This app takes at most 3 uploads and 10 MB a minute from one address; try again in 40 s.",
        40,
    )
    assert limiter.allow("10.0.0.2", 4 * MB) is None  # another address has its own minute
    assert limiter.allow("10.0.0.1", 1000) is None  # the third upload, 8 MB and a bit
    assert limiter.allow("10.0.0.1", 1000)[1] == 40  # the fourth: over the count
    now[0] = 60.5  # the upload at 0 s has left the window
    assert limiter.allow("10.0.0.1", 2 * MB) is None
    text, wait = limiter.allow("10.0.0.1", 11 * MB)
    assert wait is None and text.startswith("This upload is 11.0 MB; this app takes at most 3 uploads and 10 MB")
    assert not UploadLimiter(None, None).active


def test_public_launch_installs_the_upload_limit(monkeypatch, tmp_path):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))  # not ours: no sweeper
    for name in ("GRADIO_SERVER_NAME", "GRADIO_SHARE", "SPACE_ID"):
        monkeypatch.delenv(name, raising=False)
    assert (PUBLIC.max_uploads_per_minute, PUBLIC.max_upload_bytes_per_minute) == (10, 32 * MB)
    launched = []
    demo = types.SimpleNamespace(explorer=types.SimpleNamespace(config=PUBLIC), launch=lambda **kw: launched.append(kw))
    app_module.launch(demo, app_kwargs={"docs_url": "/docs", "middleware": [Middleware(TestClient)]})
    app_kwargs = launched[0]["app_kwargs"]
    assert app_kwargs["docs_url"] == "/docs"  # the caller's FastAPI arguments are kept, with our middleware
    ours = app_kwargs["middleware"][-1]
    assert ours.cls is UploadLimitMiddleware and len(app_kwargs["middleware"]) == 2
    assert (ours.kwargs["limiter"].per_minute, ours.kwargs["limiter"].bytes_per_minute) == (10, 32 * MB)
    assert "app_kwargs" not in app_module.launch_kwargs(AppConfig())  # private: no limit
    env = {"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_UPLOADS_PER_MIN": "3", "SPECVIZ_MAX_UPLOAD_MB_PER_MIN": "7"}
    cfg = AppConfig.from_env(env)
    assert (cfg.max_uploads_per_minute, cfg.max_upload_bytes_per_minute) == (3, 7 * MB)
    cfg = AppConfig.from_env({**env, "SPECVIZ_MAX_UPLOADS_PER_MIN": "0", "SPECVIZ_MAX_UPLOAD_MB_PER_MIN": "0"})
    assert (cfg.max_uploads_per_minute, cfg.max_upload_bytes_per_minute) == (None, None)


def test_gradios_upload_route_answers_429_over_the_limit(monkeypatch, tmp_path):
    """The middleware on the app Gradio makes (``App.create_app`` with launch's ``app_kwargs``), with an
    injected clock: the upload route gets 429 with the sentence and a Retry-After, other addresses and
    other routes are untouched, a minute later it takes uploads again."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    now = [0.0]
    with gr.Blocks() as demo:
        gr.File()
    demo.max_file_size = 5 * MB  # as launch sets it
    limiter = UploadLimiter(2, 3 * MB, clock=lambda: now[0])
    middleware = [Middleware(UploadLimitMiddleware, limiter=limiter)]
    app = gr.routes.App.create_app(demo, app_kwargs={"middleware": middleware})
    first, second = TestClient(app, client=("10.0.0.1", 5000)), TestClient(app, client=("10.0.0.2", 5000))

    def upload(client, size=2, fill=b"x"):
        return client.post("/gradio_api/upload", files={"files": ("t.json", fill * size)})

    assert [upload(first).status_code for _ in range(2)] == [200, 200]
    refused = upload(first, fill=b"r")
    assert refused.status_code == 429 and refused.headers["retry-after"] == "60"
    assert refused.text == "This app takes at most 2 uploads and 3 MB a minute from one address; try again in 60 s."
    assert first.get("/config").status_code == 200
    assert upload(second, 2 * MB).status_code == 200
    assert upload(second, 2 * MB, b"r").status_code == 429  # 4 MB in the minute
    assert upload(second, 4 * MB, b"r").text.startswith("This upload is 4.0 MB")
    now[0] = 61.0
    assert upload(first, fill=b"y").status_code == 200
    kept = sorted(f.read_bytes()[:1] for f in tmp_path.rglob("t.json"))
    assert kept == [b"x", b"x", b"y"]  # what was let through (two distinct contents from the first), nothing refused


def test_a_page_load_copies_no_model(pair_dirs, shared_registry, monkeypatch):
    """Gradio deep-copies the page's config on every page load (``routes.get_config``): nothing in it may
    reach the loaded models (a bound method as the state's delete callback copied the default pair's
    weights on each load: 2.5 GB and 5 s, and concurrent loads ran out of memory)."""
    import torch
    from gradio import utils as gradio_utils

    copied = []
    monkeypatch.setattr(torch.nn.Parameter, "__deepcopy__", lambda self, memo: copied.append(1) or self)
    monkeypatch.setattr(torch.Tensor, "__deepcopy__", lambda self, memo: copied.append(1) or self)
    ex = make(pair_dirs, shared_registry)
    demo = ex.build()
    config = gradio_utils.safe_deepcopy(demo.config)
    assert copied == [], f"a page load copied {len(copied)} tensors"
    callback = config["components"][0]["props"]["delete_callback"]
    callback(Session(pair_key=ex.default_key))  # a dropped state (what it stops: the test above)
