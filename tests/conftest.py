import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
torch.set_num_threads(1)
os.environ.setdefault(
    "OMP_NUM_THREADS", "1"
)  # subprocesses (the GPU check, papers, app servers) too: 2 workers on 2 cores


RECURSION_LIMIT = sys.getrecursionlimit()


@pytest.fixture(autouse=True)
def _recursion_limit_as_found():
    """Every test starts under the interpreter's recursion limit: a library may leave it raised
    (Hypothesis bumps it while it runs a test and keeps a value changed meanwhile; Inductor raises it to
    2000 when it compiles), and how deep ``json.loads`` reads depends on it. A test that needs another
    limit sets it itself."""
    yield
    sys.setrecursionlimit(RECURSION_LIMIT)


WEIGHTS = {"e2e": 3, "slow": 1}  # rough cost of a browser test and of a statistical one, against a quick one's 0


def weight(item) -> int:
    return max((w for mark, w in WEIGHTS.items() if item.get_closest_marker(mark)), default=0)


def together(item) -> bool:
    """Whether ``item``'s file runs on one worker: a browser test file, or one whose module sets
    ``ONE_WORKER = True`` (a module-scoped fixture too costly to build once per worker)."""
    return bool(item.get_closest_marker("e2e") or getattr(getattr(item, "module", None), "ONE_WORKER", False))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A browser test that fails saves each page it left open (``e2e_support.save_failed_pages``)."""
    outcome = yield
    report = outcome.get_result()
    if item.get_closest_marker("e2e") is None or report.when not in ("setup", "call"):
        return
    import e2e_support

    if report.when == "setup":
        e2e_support.OPEN_PAGES.clear()
    elif report.failed:
        e2e_support.save_failed_pages(item.nodeid)


def pytest_collection_modifyitems(config, items):
    """Long tests first, shared fairly between the workers. Under ``-n N --dist worksteal``
    (``scripts/test.sh``) xdist hands each worker one contiguous share of this order (the first
    ``len // N``, then the next share of what is left, ...) and an idle worker later steals the *end* of
    another's queue: so each share starts with its part of the browser (``e2e``) and statistical
    (``slow``) tests, dealt longest first to the lightest share, and ends with quick ones, which are
    what gets stolen. (One long list at the front went all to one worker: the slow tests ran one after
    another while the other worker ran out of quick ones.) ``-m "not slow and not e2e"`` is the quick loop."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    units: dict = {}  # a file's tests stay together when they share a costly setup made once per worker:
    for item in items:  # a browser test file's server, or a file that says ONE_WORKER (a loaded model)
        if together(item):  # every browser test on the shared app (``app_server``): one unit, one app start
            units.setdefault(
                "app_server" if "app_server" in getattr(item, "fixturenames", ()) else item.path, []
            ).append(item)
        elif weight(item):
            units.setdefault(item, []).append(item)
    heavy = sorted(units.values(), key=lambda unit: sum(map(weight, unit)), reverse=True)  # stable: file order
    quick = [item for item in items if not weight(item) and not together(item)]
    sizes, left = [], len(items)
    for k in range(workers, 0, -1):  # xdist's shares, in its order
        sizes.append(left // k)
        left -= sizes[-1]
    shares: list[list] = [[] for _ in sizes]
    loads = [0] * len(sizes)
    for unit in heavy:
        fits = [k for k in range(len(sizes)) if len(shares[k]) + len(unit) <= sizes[k]]
        k = min(fits or range(len(sizes)), key=lambda k: loads[k] if fits else len(shares[k]) - sizes[k])
        shares[k] += unit
        loads[k] += sum(map(weight, unit))
    for share, size in zip(shares, sizes):
        room = max(0, size - len(share))
        share += quick[:room]
        del quick[:room]
    items[:] = [item for share in shares for item in share] + quick  # a run of a few files may not split evenly


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """`python app.py` on the bundled code pair, one per test process for every browser test (the real
    default pair has its own, test_real_pair_e2e), or on a tiny random pair saved with a real tokenizer
    if the bundled pair is not built. Yields (url, the pair's directories, a scratch directory)."""
    from e2e_support import BUNDLED, HAVE_BUNDLED, start_app, stop

    tmp = tmp_path_factory.mktemp("e2e")
    # Measure: a warm-up and one timed run per column (the page's table is checked, not its medians); a live
    # step waits up to 30 s for the page to draw the one before (the app's default is 3 s): a loaded test
    # machine's chromium takes seconds to draw a step of four columns, and with 3 s the app sent steps
    # faster than the page drew them, the page fell behind and a click or screenshot waited for it to
    # catch up (a Stop click took 69 s). Still a bound: a page that never reports fails the wait.
    env = {"SPECVIZ_MEASURE_REPEATS": "1", "SPECVIZ_PAGE_WAIT_S": "30"}
    if HAVE_BUNDLED:
        proc, url, _ = start_app(tmp, **env)
        pair_dirs = BUNDLED
    else:
        from test_ui_support import save_tiny_pair

        pair_dirs = save_tiny_pair(tmp / "pair")
        proc, url, _ = start_app(tmp, SPECVIZ_TARGET=pair_dirs[0], SPECVIZ_DRAFT=pair_dirs[1], **env)
    yield url, pair_dirs, tmp
    stop(proc)


@pytest.fixture(scope="module")
def browser():
    """Headless Debian chromium driven by Playwright, one per test file; a missing chromium skips the
    browser tests, or fails them under CI / SPECVIZ_REQUIRE_E2E. Not one per process: Playwright's sync
    API keeps an event loop running in the test thread while it is open, and a later test's
    ``asyncio.run`` (Gradio's process_api in test_handlers_fuzz) then fails."""
    from e2e_support import ARGS, CHROMIUM, HANG_GUARD_MS, REQUIRED

    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("chromium is not installed (apt-get install chromium): the e2e tests must run here")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS, timeout=HANG_GUARD_MS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def bundled_pair():
    """The code pair in ``assets/`` (CPU), loaded with the network off and from the repository root."""
    import specviz

    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("TRANSFORMERS_OFFLINE", "1")
    mp.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        yield specviz.load_pair("assets/target", "assets/draft", device="cpu")
    finally:
        mp.undo()
