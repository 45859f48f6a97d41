"""An example belongs to its pair (issue 35 point 5): a code example picked while a chat pair is loaded
loads the code pair (and chat goes off); a chat question picked on the code pair loads the chat pair
back; where the session's pair already serves the example, nothing is loaded; anything but the index of
an example changes nothing."""

from __future__ import annotations

import pytest
from test_ui_support import save_tiny_pair
from transformers import AutoTokenizer

from specviz.ui import AppConfig, Explorer, Session
from specviz.ui.examples import CHAT_PROMPTS, CODE_PROMPTS
from specviz.ui.pairs import PairChoice

TEMPLATE = (
    "{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    target, draft = save_tiny_pair(tmp_path_factory.mktemp("chat"))
    for d in (target, draft):  # a chat pair: the tiny pair with a chat template
        tok = AutoTokenizer.from_pretrained(d)
        tok.chat_template = TEMPLATE
        tok.save_pretrained(d)
    chat, code = PairChoice("tiny chat pair", target, draft), PairChoice("code pair", "assets/target", "assets/draft")
    return Explorer(AppConfig(), presets=[chat, code]), chat.key, code.key


def skipped(value) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update" and len(value) == 1


def test_an_example_loads_its_pair_and_only_when_needed(explorer):
    ex, chat_key, code_key = explorer
    assert ex.default_key == chat_key and ex.registry.get(chat_key).has_chat_template
    session = Session(pair_key=chat_key)

    prompt, chat, choice, line, session = ex.code_example(0, session)
    assert (prompt, chat, choice) == (CODE_PROMPTS[0], False, code_key)
    assert line.startswith("✅") and session.pair_key == code_key
    assert not ex.registry.get(code_key).has_chat_template

    prompt, chat, choice, line, session = ex.code_example(2, session)  # the code pair serves it: no load
    assert (prompt, chat) == (CODE_PROMPTS[2], False) and skipped(choice) and skipped(line)
    assert session.pair_key == code_key

    prompt, chat, choice, line, session = ex.chat_example(1, session)  # a question on the code pair
    assert (prompt, chat, choice) == (CHAT_PROMPTS[1], True, chat_key)
    assert line.startswith("✅") and session.pair_key == chat_key

    prompt, chat, choice, line, session = ex.chat_example(3, session)
    assert (prompt, chat) == (CHAT_PROMPTS[3], True) and skipped(choice) and skipped(line)


@pytest.mark.parametrize("index", [-1, 99, True, "0", None, 0.0, [0]])
def test_anything_but_an_example_index_changes_nothing(explorer, index):
    ex, chat_key, _ = explorer
    for pick in (ex.chat_example, ex.code_example):
        out = pick(index, Session(pair_key=chat_key))
        assert all(skipped(v) for v in out[:4]) and out[4].pair_key == chat_key


def test_a_hostile_session_gets_a_fresh_one(explorer):
    ex, chat_key, code_key = explorer
    *_, session = ex.code_example(0, {"pair_key": "custom:/etc|"})
    assert isinstance(session, Session) and session.pair_key == code_key
