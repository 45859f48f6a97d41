import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Slow tests (``slow``: the statistical ones; ``e2e``: the browser ones) first, in their order.
    Under ``-n`` with ``--dist worksteal`` (``scripts/test.sh``) a worker that runs out takes half of
    the other's unstarted tests, so with the long ones gone first the run ends on quick tests on both
    workers instead of one long test on one. ``-m "not slow and not e2e"`` is the quick loop."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None and item.get_closest_marker("e2e") is None)


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    """`python app.py` on the bundled code pair, one per test process for every browser test (the real
    default pair has its own, test_real_pair_e2e), or on a tiny random pair saved with a real tokenizer
    if the bundled pair is not built. Yields (url, the pair's directories, a scratch directory)."""
    from e2e_support import BUNDLED, HAVE_BUNDLED, start_app, stop

    tmp = tmp_path_factory.mktemp("e2e")
    if HAVE_BUNDLED:
        proc, url, _ = start_app(tmp)
        pair_dirs = BUNDLED
    else:
        from test_ui_support import save_tiny_pair

        pair_dirs = save_tiny_pair(tmp / "pair")
        proc, url, _ = start_app(tmp, SPECVIZ_TARGET=pair_dirs[0], SPECVIZ_DRAFT=pair_dirs[1])
    yield url, pair_dirs, tmp
    stop(proc)


@pytest.fixture(scope="session")
def browser():
    """Headless Debian chromium driven by Playwright, one per test process; a missing chromium skips
    the browser tests, or fails them under CI / SPECVIZ_REQUIRE_E2E."""
    from e2e_support import ARGS, CHROMIUM, REQUIRED

    if CHROMIUM is None:
        if REQUIRED:
            pytest.fail("chromium is not installed (apt-get install chromium): the e2e tests must run here")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()
