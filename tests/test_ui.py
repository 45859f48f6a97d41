"""The app's callbacks, called in-process on a tiny real pair saved with a real tokenizer."""
from __future__ import annotations

import json
import os
import sys
import time
import types

import gradio as gr
import plotly.graph_objects as go
import pytest

import specviz
from specviz.trace import RunTrace
from specviz.ui import AppConfig, Explorer, Session
from specviz.ui.app import CUSTOM, param_value
from specviz.ui.gpu import gpu
from specviz.ui.pairs import PairChoice, PairRegistry
from test_ui_support import save_tiny_pair

FOUR = [a for a in ("ar", "sd", "mcsd", "specinfer", "sequoia") if a in specviz.ALGORITHMS][:4]
N_FULL_HEAD = 9   # session, status, slider, step label, table, 4 comparison figures
SLOT_FULL = 6     # column, header, tokens, tree, controller, download
SLOT_STEP = 4     # header, tokens, tree, controller


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def explorer(pair_dirs):
    target, draft = pair_dirs
    return Explorer(AppConfig(max_columns=6), presets=[PairChoice("tiny test pair", target, draft)])


def params_for(ex: Explorer, **overrides):
    """Values of the generated per-algorithm setting components, defaults unless overridden."""
    vals = []
    for algo, p in ex.param_index:
        v = overrides.get(f"{algo}.{p.name}", p.default)
        if p.kind == "choice":
            v = list(p.choices).index(v)
        vals.append(v)
    return vals


def run_all(ex: Explorer, session: Session, algos, prompt="def fibonacci(n):\n", max_new=24, temperature=0.0,
            seed=0, delay=0.0, **overrides):
    outs = list(ex.run(session, prompt, max_new, temperature, 1.0, 0, seed, algos, delay, *params_for(ex, **overrides)))
    assert outs
    return outs


def screen(outs):
    """What the browser shows after a stream of updates: the last non-skip value of each output."""
    shown = list(outs[0])
    for out in outs[1:]:
        for j, v in enumerate(out):
            if not (isinstance(v, dict) and v == gr.skip()):
                shown[j] = v
    return shown


def slot(out, i, full=True):
    width = SLOT_FULL if full else SLOT_STEP
    head = N_FULL_HEAD if full else 2
    return out[head + width * i: head + width * (i + 1)]


def test_app_builds_with_generated_settings(explorer):
    demo = explorer.build()
    assert isinstance(demo, gr.Blocks)
    ids = {getattr(b, "elem_id", None) for b in demo.blocks.values()}
    for needed in ("sv-prompt", "sv-run", "sv-step", "sv-prev", "sv-next", "sv-table", "sv-upload", "sv-algos",
                   "sv-tree-0", f"sv-tree-{explorer.n_slots - 1}"):
        assert needed in ids
    # one settings component per declared parameter of every registered algorithm
    assert len(explorer.param_index) == sum(len(s.params) for s in specviz.ALGORITHMS.values())
    labels = [b.label for b in demo.blocks.values() if isinstance(b, gr.Accordion)]
    for name, spec in specviz.ALGORITHMS.items():
        if spec.params:
            assert f"{name} settings" in labels
    assert explorer.n_slots >= 4


def test_run_side_by_side_produces_text_tree_and_metrics(explorer):
    session = Session(pair_key=explorer.default_key)
    outs = run_all(explorer, session, FOUR)
    final = screen(outs)
    assert final[0] is session and not session.running
    assert "Done" in final[1]
    table = final[4]
    for i, algo in enumerate(FOUR):
        col, header, tokens, tree, ctrl, download = slot(final, i)
        assert col.visible is True
        assert f"<b>{algo}</b>" in header
        assert 'class="sv-tok' in tokens
        assert isinstance(tree, go.Figure) and any(t.meta == "path" for t in tree.data)
        assert f">{session.columns[i].label}" in table  # a metrics row per algorithm
        trace = RunTrace.from_json(open(download.value["path"] if isinstance(download.value, dict) else download.value).read())
        assert trace.algorithm == algo and len(trace.output_ids) == 24
    for i in range(len(FOUR), explorer.n_slots):
        assert slot(final, i)[0].visible is False
    # all runs on the same prompt, seed and settings; lossless ones match ar greedily
    assert len({tuple(c.trace.prompt_ids) for c in session.columns}) == 1
    assert table.count('class="sv-good">✓ identical') == len(FOUR) - 1 and "sv-bad" not in table
    for fig in final[5:9]:
        assert isinstance(fig, go.Figure) and fig.data


def test_runs_advance_together_and_stream(explorer):
    session = Session(pair_key=explorer.default_key)
    seen = []
    gen = explorer.run(session, "import os\n", 12, 1.0, 1.0, 0, 1, ["ar", "sd"], 0.01, *params_for(explorer))
    for out in gen:
        seen.append([c.n_steps for c in session.columns])
    assert len(seen) > 3  # streamed, not one final update
    for counts in seen[1:-1]:
        ar_steps, sd_steps = counts
        assert ar_steps == sd_steps or min(counts) == min(session.columns[1].n_steps, session.columns[0].n_steps)
    assert seen[-1][0] == 12  # ar: one token per step


def test_scrub_prev_next_latest(explorer):
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar", "sd"], max_new=16)
    out = explorer.scrub(session, 1)
    assert session.step == 0
    slider, label = out[0], out[1]
    assert slider.value == 1 and "step 1 of 16" in label
    header, tokens, tree, _ = slot(out, 1, full=False)
    assert tree.layout.title.text.startswith("step 1 ")
    assert tokens == gr.skip()  # the text is unchanged; the browser moves its highlight (STEP_JS)
    assert "step <b>1</b>/" in header
    out = explorer.prev(session)
    assert session.step == 0  # clamped
    explorer.next(session)
    explorer.next(session)
    assert session.step == 2
    out = explorer.latest(session)
    assert session.step is None and "step 16 of 16" in out[1]
    out = explorer.scrub(session, 10_000)
    assert out[0].value == 16
    # sd finished before step 15: scrubbing between 15 and 16 re-sends only its header
    n_sd = session.columns[1].n_steps
    assert n_sd < 15
    out = explorer.scrub(session, 15)
    header, tokens, tree, ctrl = slot(out, 1, full=False)
    assert f"last step <b>{n_sd}</b>" in header
    assert tokens == tree == ctrl == gr.skip()
    assert isinstance(slot(out, 0, full=False)[2], go.Figure)  # ar (16 steps) did move


def test_play_steps_through(explorer):
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["sd"], max_new=6)
    session.step = 0
    frames = list(explorer.play(session, 0.0))
    assert [f[0].value for f in frames] == list(range(1, session.n_steps + 1))


def test_bad_pair_gives_a_message_and_keeps_the_previous_pair(explorer, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    session = Session(pair_key=explorer.default_key)
    for target in ("/no/such/model/dir", "no-such-org/no-such-model-xyz"):
        md, s = explorer.load(CUSTOM, target, "", False, session, progress=lambda *a, **k: None)
        assert "Could not load" in md and "Still using" in md
        assert s.pair_key == explorer.default_key
    md, s = explorer.load(CUSTOM, "", "", False, session, progress=lambda *a, **k: None)
    assert "Type a target" in md
    # the app still runs on the previous pair
    final = run_all(explorer, session, ["sd"], max_new=4)[-1]
    assert "Done" in final[1]


def test_mismatched_tokenizers_are_refused(explorer, tmp_path):
    target, _ = explorer.presets[0].target, None
    other = tmp_path / "other"
    from test_ui_support import build_tokenizer
    from tiny import tiny_model
    tok = build_tokenizer(vocab_size=300)
    tiny_model("llama", len(tok), 5).save_pretrained(other)
    tok.save_pretrained(other)
    md, _ = explorer.load(CUSTOM, target, str(other), False, Session(pair_key=explorer.default_key),
                          progress=lambda *a, **k: None)
    assert "Could not load" in md and "vocabular" in md


def test_load_a_preset(explorer):
    session = Session(pair_key=None)
    md, s = explorer.load(explorer.presets[0].key, "", "", False, session, progress=lambda *a, **k: None)
    assert md.startswith("✅") and s.pair_key == explorer.presets[0].key


def test_refused_requests_are_messages(explorer):
    session = Session(pair_key=explorer.default_key)
    (out,) = list(explorer.run(session, "x", 8, 0.0, 1.0, 0, 0, [], 0.0, *params_for(explorer)))
    assert "Select at least one algorithm" in out[1]
    (out,) = list(explorer.run(session, "   ", 8, 0.0, 1.0, 0, 0, ["ar"], 0.0, *params_for(explorer)))
    assert "prompt is empty" in out[1]
    too_many = list(specviz.ALGORITHMS) * 3
    (out,) = list(explorer.run(session, "x", 8, 0.0, 1.0, 0, 0, too_many[: explorer.n_slots + 1], 0.0,
                               *params_for(explorer)))
    assert "At most" in out[1]
    (out,) = list(explorer.run(Session(pair_key=None), "x", 8, 0.0, 1.0, 0, 0, ["ar"], 0.0, *params_for(explorer)))
    assert "No pair loaded" in out[1]


def test_bad_algorithm_parameter_fails_only_its_column(explorer):
    session = Session(pair_key=explorer.default_key)
    final = screen(run_all(explorer, session, ["ar", "mcsd"], max_new=6, **{"mcsd.k_config": "not-a-config"}))
    ar_head, mcsd_head = slot(final, 0)[1], slot(final, 1)[1]
    assert "sv-error" not in ar_head and "sv-error" in mcsd_head
    assert session.columns[0].trace.finish_reason == "length"


def test_upload_replays_without_a_model(explorer, tmp_path):
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar", "sd"], max_new=8)
    paths = [c.path for c in session.columns]
    replayer = Explorer(AppConfig(), registry=PairRegistry(), presets=[PairChoice("none", "/nonexistent", None)],
                        preload=False)
    assert replayer.registry.keys() == []
    fresh = Session()
    out = replayer.upload(paths, fresh)
    assert "Replaying 2 uploaded traces" in out[1]
    assert [c.algorithm for c in fresh.columns] == ["ar", "sd"]
    assert isinstance(slot(out, 1)[3], go.Figure)
    assert "step 1 of" in out[3]
    out = replayer.scrub(fresh, 3)
    assert slot(out, 1, full=False)[2].layout.title.text.startswith("step 3 ")


@pytest.mark.parametrize("content,expected", [
    (b"{not json", "Not valid JSON"),
    (b'{"schema_version": 999}', "schema version"),
    (b"[1, 2, 3]", "must be a JSON object"),
    (b'{"schema_version": 1, "steps": [{"index": 0}]}', "Malformed trace"),
    (b"\xff\xfe\x00garbage", "not a text"),
])
def test_malformed_upload_gets_a_clear_message(explorer, tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    session = Session(pair_key=explorer.default_key)
    out = explorer.upload([str(bad)], session)
    assert "Could not replay" in out[1] and expected in out[1]
    assert session.columns == []


def test_oversized_upload_is_refused(pair_dirs, tmp_path):
    ex = Explorer(AppConfig(max_upload_bytes=1024), presets=[PairChoice("t", *pair_dirs)], preload=False)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"schema_version": 1, "padding": "x" * 5000}))
    out = ex.upload([str(big)], Session())
    assert "accepts traces up to" in out[1]


def test_public_mode_limits(pair_dirs, monkeypatch):
    env = {"SPECVIZ_PUBLIC": "1"}
    cfg = AppConfig.from_env(env)
    assert cfg.public and not cfg.allow_custom_pairs and not cfg.allow_remote_code
    assert cfg.max_new_tokens_cap <= 128 and cfg.max_upload_bytes <= 5 * 1024 * 1024
    assert AppConfig.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_MAX_NEW_TOKENS": "32"}).max_new_tokens_cap == 32
    assert AppConfig.from_env({"SPACE_ID": "me/specviz"}).public  # a Space is public unless told otherwise
    assert not AppConfig.from_env({"SPACE_ID": "me/specviz", "SPECVIZ_PUBLIC": "0"}).public
    assert not AppConfig.from_env({}).public
    ex = Explorer(cfg, presets=[PairChoice("tiny", *pair_dirs)])
    session = Session(pair_key=ex.default_key)
    md, _ = ex.load(CUSTOM, "/some/path", "", True, session, progress=lambda *a, **k: None)
    assert "preset pairs only" in md
    seen = {}
    monkeypatch.setattr(ex.registry, "load", lambda t, d, trust_remote_code=False: seen.setdefault("trust", trust_remote_code) or ex.default_key)
    ex.load(ex.presets[0].key, "", "", True, session, progress=lambda *a, **k: None)
    assert seen["trust"] is False  # remote code stays off whatever the checkbox says
    final = run_all(ex, session, ["ar"], max_new=10_000)[-1]
    assert len(session.columns[0].trace.output_ids) == cfg.max_new_tokens_cap
    assert "capped" in final[1]
    demo = ex.build()
    custom = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sv-pair-choice"][0]
    assert CUSTOM not in [c[1] for c in custom.choices]


def test_env_config_and_launch_kwargs():
    from specviz.ui import launch_kwargs
    cfg = AppConfig.from_env({"SPECVIZ_MAX_UPLOAD_MB": "3", "SPECVIZ_CONCURRENCY": "4", "SPECVIZ_TARGET": "a/b"})
    assert cfg.max_upload_bytes == 3 * 1024 * 1024 and cfg.concurrency == 4 and cfg.default_target == "a/b"
    kw = launch_kwargs(cfg)
    assert kw["max_file_size"] == 3 * 1024 * 1024 and "sv-tok" in kw["css"]
    with pytest.raises(ValueError):
        AppConfig.from_env({"SPECVIZ_CONCURRENCY": "many"})


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
    assert param_value(Param("f", 0.5, "float"), None) == 0.5


def test_200_step_run_scrubs_without_lag(explorer, monkeypatch):
    """A scrub rebuilds only the selected step's views: at most one tree and one controller figure per
    column, for that step, and none of the whole-run figures (their step markers move in the browser). The
    time is printed with ``-s``; speed is measured by ``python -m specviz.viz.perf``, not asserted."""
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

    for name in ("step_tree_figure", "controller_figure", "tokens_per_step_figure", "cumulative_figure",
                 "acceptance_histogram_figure", "time_breakdown_figure", "comparison_table_html"):
        monkeypatch.setattr(viz, name, counting(name))
    times = []
    for k in (1, 50, 100, 150, 200, 120, 7):
        built.clear()
        t0 = time.perf_counter()
        out = explorer.scrub(session, k)
        for item in out:  # include the JSON that gradio sends
            if isinstance(item, go.Figure):
                item.to_json()
        times.append(1000 * (time.perf_counter() - t0))
        trees = [step for name, step in built if name == "step_tree_figure"]
        # at most one tree per column (one whose clamped step did not move is skipped), never a later step
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
    listed = Explorer(AppConfig.from_env({"SPECVIZ_PUBLIC": "1", "SPECVIZ_PRESETS": "local-pair,hub-pair"}),
                      presets=list(presets), preload=False)
    assert [p.name for p in listed.presets] == ["local", "hub"]
    private = Explorer(AppConfig(), presets=list(presets), preload=False)
    assert len(private.presets) == 2


def test_old_exports_are_swept(tmp_path):
    from specviz.ui import runner
    old, new = tmp_path / "old", tmp_path / "new"
    for d in (old, new):
        d.mkdir()
        (d / "t.json").write_text("{}")
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    runner._last_sweep[0] = 0.0
    assert runner.sweep_exports(str(tmp_path), max_age_s=3600) == 1
    assert not old.exists() and new.exists()
    assert runner.sweep_exports(str(tmp_path), max_age_s=0) == 0  # rate-limited


def test_stop_keeps_what_ran(explorer):
    session = Session(pair_key=explorer.default_key)
    gen = explorer.run(session, "def f(x):\n", 64, 0.0, 1.0, 0, 0, ["ar", "sd"], 0.0, *params_for(explorer))
    next(gen)
    next(gen, None)
    out = explorer.stop(session)
    assert "stopped" in out[1] and not session.running
    assert all(c.done and c.trace.finish_reason for c in session.columns)
    assert list(gen) == []  # the run notices and ends without another update
    assert explorer.stop(session)[1] == gr.skip()


def test_greedy_divergence_is_marked_in_the_text(explorer):
    from specviz.ui import render
    session = Session(pair_key=explorer.default_key)
    run_all(explorer, session, ["ar", "sd"], max_new=10)
    ar, sd = session.columns
    assert render.divergence(sd, ar.trace) is None  # lossless: identical
    sd.trace.output_ids[4] = (sd.trace.output_ids[4] + 1) % 300  # as if a cache bug had flipped token 5
    assert render.divergence(sd, ar.trace) == 4
    html = render.slot_view(sd, 1, 0, diverge_at=4).tokens
    assert html.count("sv-diverge") == 1 and "differs from ar" in html
