"""What the browser tests share: `python app.py` started on a free port, Debian's chromium, and
checks of what the page shows (Plotly figures whose text is cut off or overlaps, titles, status).
The fixtures (conftest.py) start one app per test process for every browser test (``app_server``) and
one chromium per test file (``browser``). Nothing here asserts a speed: waits have generous limits."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import specviz

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
REQUIRED = bool(os.environ.get("CI") or os.environ.get("SPECVIZ_REQUIRE_E2E"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(tmp: Path, **env_extra: str) -> tuple[subprocess.Popen, str, Path]:
    """`python app.py` on a free port; on the bundled code pair (fast) unless ``env_extra`` says otherwise
    (``SPECVIZ_PRESETS``, ``SPECVIZ_TARGET``)."""
    port = free_port()
    env = {
        **os.environ,
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_SERVER_PORT": str(port),
        "HF_HUB_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
        "SPECVIZ_TORCH_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
        "SPECVIZ_PRESETS": "bundled-stdlib-pair",
        **env_extra,
    }
    log = tmp / f"app-{port}.log"
    proc = subprocess.Popen(
        [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT
    )
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


# a figure's title as the page shows it: a tree's (drawn as HTML by its PlotBox) is kept in its layout's meta
PLOT_TITLE = "((el.layout.meta && el.layout.meta.title) || (el.layout.title || {}).text || '')"


def plot_info(page, elem_id: str) -> dict:
    return page.evaluate(
        """id => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                   if (!el || !el.data) return null;
                   return {traces: el.data.length, title: PLOT_TITLE,
                           metas: el.data.map(t => t.meta || null)}; }""".replace("PLOT_TITLE", PLOT_TITLE),
        elem_id,
    )


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
      text: e.querySelector('text[class^=legend]').getBoundingClientRect()}));  // legend2's is .legend2text
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
        page.wait_for_function(
            f"ids => ids.every(id => ({CLIPPED_JS})(id).length + ({OVERLAPS_JS})(id).length === 0)",
            arg=list(elem_ids),
            timeout=60_000,
        )
    except PlaywrightTimeout:
        pass  # reported below, with what is wrong
    found = {i: plot_clipped(page, i) + plot_overlaps(page, i) for i in elem_ids}
    return {i: problems for i, problems in found.items() if problems}


# What is out of place on the page as laid out now: the page scrolling sideways; an element of a column
# reaching past the column's edges (what is inside an element that scrolls or clips is that element's
# business: the element itself must fit); a figure laid out for another width than its box has (drawn
# before its column had its final width); plotly's toolbar (its box, shown or not: it shows on hover)
# over a figure's title or legend
LAYOUT_JS = """() => {
  const out = [];
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const cross = (r, q) => Math.min(r.right, q.right) - Math.max(r.left, q.left) > 1 &&
                          Math.min(r.bottom, q.bottom) - Math.max(r.top, q.top) > 1;
  const name = (e) => e.id || (e.getAttribute('class') || e.tagName).split(' ')[0];
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    out.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px in ' + window.innerWidth);
  const clips = (e) => ['auto', 'scroll', 'hidden', 'clip'].includes(getComputedStyle(e).overflowX);
  document.querySelectorAll('.sv-col').forEach(col => {
    if (!shown(col)) return;
    const c = col.getBoundingClientRect();
    const walk = (e) => { for (const k of e.children) {
      if (!shown(k)) continue;
      const r = k.getBoundingClientRect();
      if (r.right > c.right + 1 || r.left < c.left - 1)
        out.push(col.id + ': ' + name(k) + ' spans ' + Math.round(r.left) + '..' + Math.round(r.right) +
                 ' px, the column ' + Math.round(c.left) + '..' + Math.round(c.right));
      else if (!(k instanceof SVGElement) && !clips(k)) walk(k);
    } };
    walk(col);
  });
  document.querySelectorAll('.js-plotly-plot').forEach(el => {
    if (!shown(el) || !el._fullLayout) return;
    const id = (el.closest('[id^=sv-]') || {}).id, w = el.getBoundingClientRect().width;
    if (Math.abs(el._fullLayout.width - w) > 1)
      out.push(id + ': laid out for ' + Math.round(el._fullLayout.width) + ' px in a box of ' + Math.round(w));
    const bar = el.querySelector('.modebar');
    if (!bar || !shown(bar)) return;
    el.querySelectorAll('.g-gtitle text, .infolayer > g[class^=legend]').forEach(t => {
      if (cross(t.getBoundingClientRect(), bar.getBoundingClientRect()))
        out.push(id + ': the toolbar is over ' + t.textContent.slice(0, 60));
    });
  });
  return out; }"""


def misplaced(page) -> list[str]:
    """``LAYOUT_JS``'s findings once the page has settled: it waits (up to 60 s, as ``unreadable``) for
    there to be none, as a page being redrawn for a new width is not what a person reads, then reports
    what is left."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(f"({LAYOUT_JS})().length === 0", timeout=60_000)
    except PlaywrightTimeout:
        pass  # reported below
    return page.evaluate(LAYOUT_JS)


def at_width(page, width: int) -> None:
    """The page at ``width`` px, the settings sidebar open where there is room for it (as the page
    opens at that width) and closed at phone width; waits until the sidebar has finished moving."""
    page.set_viewport_size({"width": width, "height": 1000})
    phone = width < 760
    if page.locator("#sv-sidebar.open").count() == phone:
        page.click("#sv-sidebar .toggle-button")
    edge = "<= 1" if phone else ">= 300"
    page.wait_for_function(
        f"document.querySelector('#sv-sidebar').getBoundingClientRect().right {edge}", timeout=15_000
    )


def to_phone_width(page, *elem_ids: str) -> None:
    """The page at a phone's 400 px: the sidebar slid away, the columns stacked; waits until the
    figures ``elem_ids`` are drawn at the narrower width."""
    page.set_viewport_size({"width": 400, "height": 850})
    if page.locator("#sv-sidebar.open").count():
        page.click("#sv-sidebar.open .toggle-button")
    page.wait_for_function("document.querySelector('#sv-sidebar').getBoundingClientRect().right <= 1", timeout=15_000)
    page.wait_for_function(
        """ids => ids.every(id => {
        const svg = document.querySelector('#' + id + ' svg.main-svg');
        return svg && svg.getBoundingClientRect().width < 380; })""",
        arg=list(elem_ids),
        timeout=15_000,
    )


def wait_plot_title(page, elem_id: str, prefix: str, exact: bool = False) -> None:
    """Wait until the figure's title starts with ``prefix`` (is ``prefix`` if ``exact``)."""
    page.wait_for_function(
        """([id, prefix, exact]) => { const el = document.querySelector('#' + id + ' .js-plotly-plot');
                                     const text = el && el.layout ? PLOT_TITLE : '';
                                     return exact ? text === prefix : text.startsWith(prefix); }""".replace(
            "PLOT_TITLE", PLOT_TITLE
        ),
        arg=[elem_id, prefix, exact],
        timeout=30_000,
    )


HANG_GUARD_MS = 600_000  # a page or browser that loads at all loads within this, however loaded the machine


OPEN_PAGES: list = []  # the pages the running test opened: on its failure each is saved (conftest)


def save_failed_pages(name: str) -> list[Path]:
    """Each page the failed test ``name`` left open, as a screenshot and a text file (its status line,
    its script errors, its URL) in ``test-artifacts/``, so a failure that does not reproduce alone (one
    under the whole suite's load) leaves what the page showed."""
    saved = []
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[-120:]
    for i, page in enumerate(OPEN_PAGES):
        if page.is_closed():
            continue
        stem = ARTIFACTS / f"failed-{safe}-{i}"
        try:
            page.screenshot(path=f"{stem}.png", full_page=True, timeout=30_000)
            status = page.evaluate("() => document.querySelector('#sv-status')?.innerText ?? ''")
        except Exception as exc:  # noqa: BLE001 - a page that cannot be read is said so, the test's own error stands
            status = f"(the page could not be read: {exc})"
        text = f"url: {page.url}\nstatus: {status}\nscript errors: {getattr(page, 'errors', [])}\n"
        Path(f"{stem}.txt").write_text(text, encoding="utf-8")
        saved.append(stem)
    return saved


def open_page(browser, url, width=1500, height=1000):
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": width, "height": height})
    OPEN_PAGES.append(page)
    # actions without their own timeout (a click, a check, a screenshot) wait up to 2 min, not
    # Playwright's 30 s: each returns as soon as the page lets it, so only a page that is wrong waits it out
    page.set_default_timeout(120_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    page.goto(url, timeout=HANG_GUARD_MS)
    page.wait_for_selector("#sv-run", timeout=HANG_GUARD_MS)  # a hang guard, not a speed limit
    return page


def choose(page, names):
    """Tick exactly ``names`` among the algorithms, and wait until the server has made them the columns
    (the column picker lists them): a run started earlier would run the columns before."""
    algos = page.locator("#sv-algos")
    for name in specviz.ALGORITHMS:
        box = algos.get_by_label(name, exact=True)
        box.check() if name in names else box.uncheck()
    page.wait_for_function(
        """names => { const got = [...document.querySelectorAll('#sv-col-pick label')]
                        .map(l => l.innerText.trim().split(' · ').pop()).sort();
                      return JSON.stringify(got) === JSON.stringify(names); }""",
        arg=sorted(set(names)),
        timeout=60_000,
    )


def set_number(page, elem_id, value):
    """Type ``value`` into a number box, a slider's number box or a text box (the seed) and commit it."""
    box = page.locator(f"#{elem_id} input[type=number], #{elem_id} input[type=text], #{elem_id} textarea").first
    box.fill(str(value))
    box.press("Enter")
    box.blur()


def wait_status(page, text, timeout=180_000):
    page.wait_for_function("t => document.querySelector('#sv-status').innerText.includes(t)", arg=text, timeout=timeout)


def tree_step(page, i):
    """The step number in column i's tree title, or None."""
    title = (plot_info(page, f"sv-tree-{i}") or {}).get("title", "")
    m = re.fullmatch(r"step (\d+)", title)
    return int(m.group(1)) if m else None


def run_unpaced(page, algorithms, prompt: str, max_new: int) -> None:
    """Run ``algorithms`` on ``prompt`` unpaced and wait until the page says it is done."""
    choose(page, algorithms)
    page.locator("#sv-prompt textarea").fill(prompt)
    set_number(page, "sv-max-new", max_new)
    set_number(page, "sv-pace", 0)
    page.click("#sv-run")
    wait_status(page, "Done")
