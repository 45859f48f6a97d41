"""End to end: `python app.py` in a subprocess, driven by Debian's chromium through Playwright.

What a person sees: a paced live run whose tree moves through the steps, Stop mid-run ending in
"stopped" on each column's last step, a click on a tree node opening its distribution view, replay
of an exported trace, bad inputs answered in words, and the page at phone width. Nothing here asserts
a speed: waits have generous limits and look at what the page shows.

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
    """`python app.py` on a free port; on the bundled code pair (fast) unless ``env_extra`` says otherwise
    (``SPECVIZ_PRESETS``, ``SPECVIZ_TARGET``)."""
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "HF_HUB_OFFLINE": "1",
           "GRADIO_ANALYTICS_ENABLED": "False", "SPECVIZ_TORCH_THREADS": "1", "PYTHONUNBUFFERED": "1",
           "SPECVIZ_PRESETS": "bundled-stdlib-pair", **env_extra}
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
    """`python app.py` on the bundled code pair (the real default pair has its own test,
    test_real_pair_e2e), or on a tiny random pair saved with a real tokenizer if it is not built."""
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


# Text and plot boxes of a Plotly figure that must not cover one another: the title with its subtitle,
# annotations (panel titles), legends, axis titles, x tick labels and plot areas, as the browser laid them out
OVERLAPS_JS = """id => {
  const el = document.querySelector('#' + id + ' .js-plotly-plot');
  const sel = ['g.g-gtitle', 'g.annotation', '.infolayer > g[class^=legend]', 'g[class^=g-x][class$=title]',
               'g[class^=g-y][class$=title]', '.xaxislayer-above', '.nsewdrag'];
  const items = [];
  for (const s of sel) el.querySelectorAll(s).forEach((e, i) => {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) items.push({name: s + ' #' + i, r});
  });
  const out = [];
  for (let a = 0; a < items.length; a++) for (let b = a + 1; b < items.length; b++) {
    const p = items[a].r, q = items[b].r;
    if (Math.min(p.right, q.right) - Math.max(p.left, q.left) > 1 &&
        Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top) > 1) out.push(items[a].name + ' / ' + items[b].name);
  }
  return out; }"""


def plot_overlaps(page, elem_id: str) -> list[str]:
    """Pairs of a figure's titles, legends, axis labels and plot areas that overlap on screen."""
    return page.evaluate(OVERLAPS_JS, elem_id)


# Text of a Plotly figure that is cut off or covered, as the browser laid it out: a title or subtitle
# line or an annotation (a message figure's text) reaching past the figure's edges, a point's label
# past its plot area where the plot clips it (or past the figure), a legend entry's text past its
# legend's box (clipped there) or running into another entry
CLIPPED_JS = """id => {
  const el = document.querySelector('#' + id + ' .js-plotly-plot');
  const fig = el.querySelector('svg.main-svg').getBoundingClientRect();
  const within = (r, q) => r.left >= q.left - 1 && r.right <= q.right + 1 &&
                           r.top >= q.top - 1 && r.bottom <= q.bottom + 1;
  const cross = (r, q) => Math.min(r.right, q.right) - Math.max(r.left, q.left) > 1 &&
                          Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top) > 1;
  const out = [];
  el.querySelectorAll('.g-gtitle text').forEach(t => {
    if (!within(t.getBoundingClientRect(), fig)) out.push('title: ' + t.textContent);
  });
  el.querySelectorAll('g.annotation text').forEach(t => {
    if (!within(t.getBoundingClientRect(), fig)) out.push('annotation: ' + t.textContent);
  });
  const areas = [...el.querySelectorAll('.nsewdrag')].map(d => d.getBoundingClientRect());
  el.querySelectorAll('.textpoint text').forEach(t => {
    const r = t.getBoundingClientRect();
    if (!r.width) return;
    let clipped = false;  // a clip-path above it: the plot area cuts it off (cliponaxis)
    for (let a = t.parentElement; a && a !== el; a = a.parentElement) clipped = clipped || a.hasAttribute('clip-path');
    const cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
    const area = areas.find(q => cx >= q.left && cx <= q.right && cy >= q.top && cy <= q.bottom);
    if (!within(r, fig) || (clipped && area && !within(r, area))) out.push('point label cut off: ' + t.textContent);
  });
  el.querySelectorAll('.infolayer > g[class^=legend]').forEach(lg => {
    const box = lg.querySelector('.bg').getBoundingClientRect();
    const entries = [...lg.querySelectorAll('.traces')].map(e => ({
      name: e.textContent, box: e.getBoundingClientRect(),
      text: e.querySelector('.legendtext').getBoundingClientRect()}));
    for (const a of entries) {
      if (!within(a.text, box) || !within(a.text, fig)) out.push('legend entry cut off: ' + a.name);
      for (const b of entries) if (a !== b && cross(a.text, b.box)) out.push(a.name + ' runs into ' + b.name);
    }
  });
  return out; }"""


def plot_clipped(page, elem_id: str) -> list[str]:
    """A figure's title lines and legend entries that are cut off or run into another on screen."""
    return page.evaluate(CLIPPED_JS, elem_id)


def unreadable(page, *elem_ids: str) -> dict[str, list[str]]:
    """The figures among ``elem_ids`` with text cut off or running into other text (``plot_clipped``)
    or titles, legends, axis labels and plot areas that overlap (``plot_overlaps``), with what. A figure
    that just got new data or a new width is redrawn by plotly over the next frames: what it shows
    while being redrawn is not what a person reads, so this waits for every figure to be clear and
    then reports what is left. The wait is long (60 s) because a loaded machine redraws slowly: on a
    page that is right it returns as soon as plotly is done; only a wrong page waits it out."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"ids => ids.every(id => ({CLIPPED_JS})(id).length + ({OVERLAPS_JS})(id).length === 0)",
                               arg=list(elem_ids), timeout=60_000)
    except PlaywrightTimeout:
        pass  # reported below, with what is wrong
    found = {i: plot_clipped(page, i) + plot_overlaps(page, i) for i in elem_ids}
    return {i: problems for i, problems in found.items() if problems}


def to_phone_width(page, *elem_ids: str) -> None:
    """The page at a phone's 400 px: the sidebar slid away, the columns stacked; waits until the
    figures ``elem_ids`` are drawn at the narrower width."""
    page.set_viewport_size({"width": 400, "height": 850})
    if page.locator("#sv-sidebar.open").count():
        page.click("#sv-sidebar.open .toggle-button")
    page.wait_for_function("document.querySelector('#sv-sidebar').getBoundingClientRect().right <= 1",
                           timeout=15_000)
    page.wait_for_function("""ids => ids.every(id => {
        const svg = document.querySelector('#' + id + ' svg.main-svg');
        return svg && svg.getBoundingClientRect().width < 380; })""", arg=list(elem_ids), timeout=15_000)


def wait_plot_title(page, elem_id: str, prefix: str, exact: bool = False) -> None:
    """Wait until the figure's title starts with ``prefix`` (is ``prefix`` if ``exact``)."""
    page.wait_for_function(
        """([id, prefix, exact]) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                                     const text = (el && el.layout && el.layout.title && el.layout.title.text) || '';
                                     return exact ? text === prefix : text.startsWith(prefix); }""",
        arg=[elem_id, prefix, exact], timeout=30_000)


def test_app_in_a_browser(app_server, browser, tmp_path):
    """One app process for the whole scenario (pytest-xdist would start one per worker otherwise)."""
    url, (target, draft), tmp = app_server
    if HAVE_BUNDLED:
        check_bundled_pair(url)
    side_by_side(url, browser)
    controller_settings(url, browser)
    paced_live_run_and_stop(url, browser)
    bad_inputs(url, browser)
    replay(url, browser, target, draft, tmp_path)
    phone_width(url, browser)


def test_clicking_a_tree_node_opens_its_distribution(app_server, browser):
    url, _, _ = app_server
    page = open_page(browser, url)
    choose(page, ["sd"])
    set_number(page, "sv-max-new", 24)
    set_number(page, "sv-temperature", 0.8)  # sampling: p and q are real distributions, not one-hots
    set_number(page, "sv-pace", 0)
    page.click("#sv-run")
    wait_status(page, "Done")
    wait_plot_title(page, "sv-tree-0", "step ")
    assert unreadable(page, "sv-tree-0") == {}  # one column: title, subtitle and legend whole and apart
    page.locator("#sv-tree-0").scroll_into_view_if_needed()  # the mouse only reaches what is on screen
    # a drafted node's marker, clicked as a person would (plotly finds the point under the mouse)
    box = page.evaluate("""() => {
        const el = document.querySelector('#sv-tree-0 .js-plotly-plot');
        const metas = ['rejected', 'accepted', 'not_reached'];  // a rejection shows the residual best  // a rejection shows the residual best
        const traces = el.querySelectorAll('.scatterlayer .trace');
        for (const meta of metas) for (let t = 0; t < el.data.length; t++) {
          if (el.data[t].meta !== meta) continue;
          const pt = traces[t] && traces[t].querySelector('.points path');
          if (pt) { const r = pt.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2}; }
        }
        return null; }""")
    assert box is not None, "no drafted node in the tree of the step shown"
    page.mouse.click(box["x"], box["y"])
    page.wait_for_function("""() => { const el = document.querySelector('#sv-dist-0 .js-plotly-plot');
                                      return !!(el && el.data && el.data.some(t => t.type === 'bar')); }""",
                           timeout=30_000)
    info = page.evaluate("""() => document.querySelector('#sv-dist-0 .js-plotly-plot').data
                                 .filter(t => t.type === 'bar').map(t => t.name || '')""")
    assert len(info) >= 2, info  # p and q bars at least
    # sampled: the theory panel is shown, its stacked panels clear of one another at one column's width
    page.wait_for_function("""() => { const el = document.querySelector('#sv-theory-0 .js-plotly-plot');
                                      return !!(el && el.data && el.data.length); }""", timeout=30_000)
    assert plot_overlaps(page, "sv-theory-0") == []
    page.locator("#sv-dist-0").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-distribution.png"), full_page=True)
    page.close()


def open_page(browser, url, width=1500, height=1000):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.goto(url)
    page.wait_for_selector("#sv-run", timeout=60_000)
    return page


def choose(page, names):
    algos = page.locator("#sv-algos")
    for name in specviz.ALGORITHMS:
        box = algos.get_by_label(name, exact=True)
        box.check() if name in names else box.uncheck()


def set_number(page, elem_id, value):
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")
    box.blur()


def wait_status(page, text, timeout=180_000):
    page.wait_for_function("t => document.querySelector('#sv-status').innerText.includes(t)", arg=text,
                           timeout=timeout)


def tree_step(page, i):
    """The step number in column i's tree title, or None."""
    title = (plot_info(page, f"sv-tree-{i}") or {}).get("title", "")
    m = re.fullmatch(r"step (\d+)", title)
    return int(m.group(1)) if m else None


def side_by_side(url, browser):
    page = open_page(browser, url)
    assert "target" in page.inner_text("#sv-pair-status")
    choose(page, ["ar", "sd"])
    page.locator("#sv-prompt textarea").fill("def add(a, b):\n")
    set_number(page, "sv-max-new", 20)
    set_number(page, "sv-pace", 0)
    page.click("#sv-run")
    wait_status(page, "Done", 120_000)

    for i, name in enumerate(("ar", "sd")):
        assert name in page.inner_text(f"#sv-head-{i}")
        wait_plot_title(page, f"sv-tree-{i}", "step ")
        info = plot_info(page, f"sv-tree-{i}")
        assert info is not None and info["traces"] > 0 and "path" in info["metas"], info
        assert page.locator(f"#sv-text-{i} .sv-tok").count() >= 20
        # the header and the tree name the same step
        head = page.inner_text(f"#sv-head-{i}")
        assert re.search(rf"step {tree_step(page, i)}\b", head), (head, tree_step(page, i))
    assert not page.locator("#sv-col-2").is_visible()
    assert unreadable(page, "sv-tree-0", "sv-tree-1") == {}  # two columns: each tree's title and legend whole
    rows = page.locator("#sv-table table.sv-table tbody tr")
    assert rows.count() == 2
    table = page.inner_text("#sv-table")
    assert "ar" in table and "sd" in table and "identical" in table
    assert "not comparable" in table  # two columns ran interleaved
    for fig in ("sv-per-step", "sv-cumulative", "sv-hist", "sv-time"):
        assert plot_info(page, fig)["traces"] > 0
    page.screenshot(path=str(ARTIFACTS / "e2e-run.png"), full_page=True)

    # scrub to step 1 with the slider's number box, then step with next / prev
    box = page.locator("#sv-step input[type=number]")
    box.fill("1")
    box.press("Enter")
    page.wait_for_function("document.querySelector('#sv-head-1').innerText.includes('step 1/')", timeout=30_000)
    wait_plot_title(page, "sv-tree-1", "step 1", exact=True)
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

    # Measure: one after another, medians
    page.click("#sv-measure-btn")
    page.wait_for_function("document.querySelector('#sv-measure').innerText.includes('measured ')",
                           timeout=180_000)
    assert page.locator("#sv-measure table.sv-table tbody tr").count() == 2
    # phone width: the trees stacked, narrower still, their titles and legends still whole and apart
    to_phone_width(page, "sv-tree-0", "sv-tree-1")
    assert unreadable(page, "sv-tree-0", "sv-tree-1") == {}
    page.locator("#sv-tree-1").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-tree-phone.png"))
    assert not page.errors, page.errors
    page.close()


def controller_settings(url, browser):
    """``sd``'s settings show gamma and controller; choosing a Thompson-sampling controller shows its
    own settings (and only those) in gamma's place, choosing ``static`` again hides them."""
    page = open_page(browser, url)
    choose(page, ["sd"])
    page.get_by_text("sd settings", exact=True).click()
    param = lambda name: page.locator(f"#sv-param-sd-{name}")  # noqa: E731
    param("gamma").wait_for(state="visible", timeout=30_000)
    assert param("controller").is_visible() and not param("alpha0").is_visible() and not param("k_max").is_visible()
    param("controller").locator("input").click()
    page.get_by_role("option", name="beta_ts", exact=True).click()
    param("alpha0").wait_for(state="visible", timeout=30_000)
    assert param("beta0").is_visible() and param("beta_rule").is_visible() and param("k_max").is_visible()
    assert not param("sigma_m").is_visible() and not param("fixed_length").is_visible()
    assert not param("gamma").is_visible()  # the controller sets the draft length
    param("alpha0").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-settings.png"))
    param("controller").locator("input").click()
    page.get_by_role("option", name="static", exact=True).click()
    param("alpha0").wait_for(state="hidden", timeout=30_000)
    assert param("gamma").is_visible() and not param("k_max").is_visible()
    assert not page.errors, page.errors
    page.close()


def paced_live_run_and_stop(url, browser):
    """A paced run (the default pace) is watched: the tree shows at least three different steps while
    the run goes, Run is disabled meanwhile, the text follows the newest token; Stop then ends it in
    "stopped" with every column on its last step."""
    page = open_page(browser, url)
    choose(page, ["ar", "sd", "mcsd", "specinfer"])
    set_number(page, "sv-max-new", 800)  # long enough that no column finishes before Stop
    assert float(page.locator("#sv-pace input[type=number]").input_value()) > 0  # paced by default
    page.click("#sv-run")
    seen: set[int] = set()
    followed = []
    for _ in range(600):  # at most about a minute of polling; ends as soon as three steps were seen
        k = tree_step(page, 0)
        if k is not None and "Running" in page.inner_text("#sv-status"):
            seen.add(k)
            followed.append(page.evaluate("""() => { const box = [...document.querySelectorAll('#sv-text-0 *')]
                .find(e => e.scrollHeight > e.clientHeight + 4 && getComputedStyle(e).overflowY !== 'visible');
                return box ? box.scrollHeight - box.scrollTop - box.clientHeight : 0; }"""))
        if len(seen) >= 3:
            break
        page.wait_for_timeout(100)
    assert len(seen) >= 3, seen
    assert page.locator("#sv-run").is_disabled()
    page.screenshot(path=str(ARTIFACTS / "e2e-live.png"), full_page=True)
    page.click("#sv-stop")
    wait_status(page, "Stopped", 60_000)
    assert page.locator("#sv-run").is_enabled()
    assert min(followed[-3:]) < 40, followed  # the text box is scrolled to its newest tokens
    for i in range(4):
        head = page.inner_text(f"#sv-head-{i}")
        shown, calls = re.search(r"step (\d+)", head), re.search(r"in (\d+) calls", head)
        assert shown and calls and shown.group(1) == calls.group(1) and "(stopped)" in head, head
        page.wait_for_function("([i, k]) => { const el = document.querySelector('#sv-tree-' + i + ' .js-plotly-plot');"
                               " return !!(el && el.layout && el.layout.title.text === 'step ' + k); }",
                               arg=[i, shown.group(1)], timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "e2e-stopped.png"), full_page=True)
    assert not page.errors, page.errors
    page.close()


def bad_inputs(url, browser):
    """A seed beyond 2^63 - 1 and a negative top-k: messages in the page, no generic error."""
    page = open_page(browser, url)
    set_number(page, "sv-seed", "1e30")
    page.wait_for_function("document.querySelector('#sv-input-msg').innerText.includes('seed must be')",
                           timeout=30_000)
    set_number(page, "sv-top-k", -1)
    page.wait_for_function("document.querySelector('#sv-input-msg').innerText.includes('top-k must be')",
                           timeout=30_000)
    page.click("#sv-run")
    wait_status(page, "seed must be", 30_000)
    status = page.inner_text("#sv-status")
    assert "top-k must be" in status and "Error" not in status
    page.screenshot(path=str(ARTIFACTS / "e2e-bad-inputs.png"), full_page=True)
    page.close()


def phone_width(url, browser):
    """At 400 px the settings sidebar starts closed and the comparison figures stack."""
    page = open_page(browser, url, width=400, height=850)
    page.wait_for_function("!document.querySelector('#sv-sidebar.open')", timeout=15_000)
    # nothing covers the page once the sidebar has slid away: it ends wholly left of the screen
    page.wait_for_function("document.querySelector('#sv-sidebar').getBoundingClientRect().right <= 1",
                           timeout=15_000)
    assert page.locator("#sv-run").is_visible()
    a = page.locator("#sv-per-step").bounding_box()
    b = page.locator("#sv-cumulative").bounding_box()
    assert b["y"] >= a["y"] + a["height"] - 1 and a["width"] <= 400, (a, b)
    page.screenshot(path=str(ARTIFACTS / "e2e-mobile.png"), full_page=False)
    page.close()


def replay(url, browser, target, draft, tmp_path):
    pair = specviz.load_pair(target, draft)
    good = tmp_path / "sd-trace.json"
    good.write_text(specviz.decode(pair, "sd", prompt="for i in range(", max_new_tokens=12, seed=1).to_json())
    bad = tmp_path / "broken.json"
    bad.write_text('{"schema_version": 1, "steps": [')
    page = open_page(browser, url)
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(bad))
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Could not replay')",
                           timeout=30_000)
    assert "Not valid JSON" in page.inner_text("#sv-status")
    page.reload()
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(good))
    page.wait_for_function("document.querySelector('#sv-status').innerText.includes('Replaying 1')", timeout=30_000)
    wait_plot_title(page, "sv-tree-0", "step 1", exact=True)
    assert "sd" in page.inner_text("#sv-head-0")
    assert page.locator("#sv-seed input[type=number]").input_value() == "1"  # the settings the trace used
    page.screenshot(path=str(ARTIFACTS / "e2e-replay.png"), full_page=True)
    # a controller kind with no view and nothing to plot: the generic view says the state in words, on
    # lines that one column and a phone's column show whole (a message sits on its empty plot area:
    # plot_clipped, not plot_overlaps)
    trace = specviz.RunTrace.from_json(good.read_text())
    for i, s in enumerate(trace.steps):
        s.controller = {"kind": "notes", "step": f"step {i + 1}", "note": " ".join(["a note the controller left"] * 8)}
    notes = tmp_path / "notes-trace.json"
    notes.write_text(trace.to_json())
    page.reload()
    page.wait_for_selector("#sv-upload input[type=file]", state="attached", timeout=60_000)
    page.set_input_files("#sv-upload input[type=file]", str(notes))
    wait_plot_title(page, "sv-ctrl-0", "Controller: notes", exact=True)
    assert plot_clipped(page, "sv-ctrl-0") == []
    to_phone_width(page, "sv-ctrl-0")
    page.locator("#sv-ctrl-0").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "e2e-generic-phone.png"))
    assert plot_clipped(page, "sv-ctrl-0") == []
    assert not page.errors, page.errors
    page.close()


def check_bundled_pair(url):
    """`python app.py` with the presets narrowed to it serves the bundled pair."""
    with urllib.request.urlopen(url + "config", timeout=10) as r:
        config = json.loads(r.read())
    status = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "sv-pair-status"][0]
    text = status["props"]["value"]
    assert re.search(r"assets/target", text) and "assets/draft" in text, text
