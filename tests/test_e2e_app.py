"""End to end: `python app.py` in a subprocess, driven by Debian's chromium through Playwright.

Needs: the `playwright` Python package (no browser download: it drives the system `chromium`) and a
`chromium` binary on PATH (`apt-get install chromium`). Without chromium the browser test is skipped,
unless CI or SPECVIZ_REQUIRE_E2E is set, where it fails. Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import specviz
from test_ui_support import save_tiny_pair

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
REQUIRED = bool(os.environ.get("CI") or os.environ.get("SPECVIZ_REQUIRE_E2E"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(tmp: Path, **env_extra: str) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "HF_HUB_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "SPECVIZ_TORCH_THREADS": "1", "PYTHONUNBUFFERED": "1", **env_extra}
    log = tmp / f"app-{port}.log"
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=open(log, "w"),
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"app.py exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "config", timeout=2) as r:
                if r.status == 200:
                    return proc, url, log
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise AssertionError(f"app.py did not start in time:\n{log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()


BUNDLED = tuple(str(ROOT / "assets" / name) for name in ("target", "draft"))
HAVE_BUNDLED = all((Path(d) / "config.json").exists() for d in BUNDLED)


@pytest.fixture(scope="module")
def app_server(tmp_path_factory):
    """`python app.py` as a user starts it: on the bundled pair once it is built (this is the test
    that the app starts on it), before that on a tiny random pair saved with a real tokenizer."""
    tmp = tmp_path_factory.mktemp("e2e")
    if HAVE_BUNDLED:
        proc, url, log = start_app(tmp)
        pair_dirs = BUNDLED
    else:
        pair_dirs = save_tiny_pair(tmp / "pair")
        proc, url, log = start_app(tmp, SPECVIZ_TARGET=pair_dirs[0], SPECVIZ_DRAFT=pair_dirs[1])
    yield url, pair_dirs, tmp
    stop(proc)


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("chromium is not installed (apt-get install chromium): the e2e tests must run here")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def plot_info(page, elem_id: str) -> dict:
    return page.evaluate(
        """id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                   if (!el || !el.data) return null;
                   return {traces: el.data.length, title: (el.layout.title || {}).text || '',
                           metas: el.data.map(t => t.meta || null)}; }""", elem_id)


def wait_plot_title(page, elem_id: str, prefix: str) -> None:
    page.wait_for_function(
        """([id, prefix]) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                              return !!(el && el.layout && el.layout.title &&
                                        (el.layout.title.text || '').startsWith(prefix)); }""",
        arg=[elem_id, prefix], timeout=30_000)


def test_app_in_a_browser(app_server, browser, tmp_path):
    """One app process for the whole scenario (pytest-xdist would start one per worker otherwise):
    the bundled pair at start, two algorithms side by side, scrubbing, then replaying uploads."""
    url, (target, draft), tmp = app_server
    if HAVE_BUNDLED:
        check_bundled_pair(url)
    side_by_side(url, browser)
    replay(url, browser, target, draft, tmp_path)


def side_by_side(url, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_selector("#sv-run", timeout=60_000)
    assert "target" in page.inner_text("#sv-pair-status")

    # exactly two algorithms: ar and sd
    algos = page.locator("#sv-algos")
    for name in specviz.ALGORITHMS:
        box = algos.get_by_label(name, exact=True)
        if name in ("ar", "sd"):
            box.check()
        else:
            box.uncheck()
    page.locator("#sv-prompt textarea").fill("def add(a, b):\n")
    page.locator("#sv-max-new input[type=number]").fill("20")
    page.locator("#sv-max-new input[type=number]").press("Enter")
    page.click("#sv-run")
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Done')", timeout=120_000)

    for i, name in enumerate(("ar", "sd")):
        assert name in page.inner_text(f"#sv-head-{i}")
        wait_plot_title(page, f"sv-tree-{i}", "step ")
        info = plot_info(page, f"sv-tree-{i}")
        assert info is not None and info["traces"] > 0 and "path" in info["metas"], info
        assert page.locator(f"#sv-text-{i} .sv-tok").count() >= 20
    assert not page.locator("#sv-col-2").is_visible()
    rows = page.locator("#sv-table table.sv-table tbody tr")
    assert rows.count() == 2
    table = page.inner_text("#sv-table")
    assert "ar" in table and "sd" in table and "identical" in table
    for fig in ("sv-per-step", "sv-cumulative", "sv-hist", "sv-time"):
        assert plot_info(page, fig)["traces"] > 0
    page.screenshot(path=str(ARTIFACTS / "e2e-run.png"), full_page=True)

    # scrub to step 1 with the slider's number box, then step with next / prev
    box = page.locator("#sv-step input[type=number]")
    box.fill("1")
    box.press("Enter")
    page.wait_for_function("document.querySelector('#sv-head-1').innerText.includes('step 1/')", timeout=30_000)
    wait_plot_title(page, "sv-tree-1", "step 1 ")
    assert "step 1 of" in page.inner_text("#sv-step-label")
    # moved in the browser: the comparison markers and the highlighted step of each text
    page.wait_for_function("""() => { const el = document.querySelector('#sv-per-step .js-plotly-plot');
                                      return el && el.layout.shapes[0].x0 == 1; }""", timeout=10_000)
    for i in range(2):
        assert page.locator(f"#sv-text-{i} .sv-step.sv-cur").get_attribute("data-step") == "1"
        assert page.locator(f"#sv-text-{i} .sv-step.sv-future").count() == page.locator(f"#sv-text-{i} .sv-step").count() - 1
    page.click("#sv-next")
    page.wait_for_function("document.querySelector('#sv-head-1').innerText.includes('step 2/')", timeout=30_000)
    page.click("#sv-prev")
    page.wait_for_function("document.querySelector('#sv-head-1').innerText.includes('step 1/')", timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "e2e-step1.png"), full_page=True)
    assert not errors, errors
    page.close()


def replay(url, browser, target, draft, tmp_path):
    pair = specviz.load_pair(target, draft)
    good = tmp_path / "sd-trace.json"
    good.write_text(specviz.decode(pair, "sd", prompt="for i in range(", max_new_tokens=12, seed=1).to_json())
    bad = tmp_path / "broken.json"
    bad.write_text('{"schema_version": 1, "steps": [')
    page = browser.new_page(viewport={"width": 1500, "height": 1000})
    page.goto(url)
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(bad))
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Could not replay')",
                           timeout=30_000)
    assert "Not valid JSON" in page.inner_text("#sv-status")
    page.reload()
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(good))
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Replaying 1')", timeout=30_000)
    wait_plot_title(page, "sv-tree-0", "step 1 ")
    assert "sd" in page.inner_text("#sv-head-0")
    page.screenshot(path=str(ARTIFACTS / "e2e-replay.png"), full_page=True)
    page.close()


def check_bundled_pair(url):
    """`python app.py` with no settings serves the bundled pair."""
    with urllib.request.urlopen(url + "config", timeout=10) as r:
        config = json.loads(r.read())
    status = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "sv-pair-status"][0]
    text = status["props"]["value"]
    assert re.search(r"assets/target", text) and "assets/draft" in text, text
