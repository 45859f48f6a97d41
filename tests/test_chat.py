"""Chat prompts on tiny models (fast; the real chat pair is test_real_pair's): the user's text goes
through the pair's chat template exactly once, with no special token added twice, the trace keeps
both texts, and every way of asking for chat on a pair without a template, or with a bad value, is a
sentence."""

from __future__ import annotations

import pytest
from tiny import tiny_model, tiny_tokenizer

import specviz
from specviz.errors import InvalidParameterError, PromptError
from specviz.models.chat import format_chat
from specviz.models.loading import ModelPair

TEMPLATE = (
    "{% for m in messages %}<|endoftext|>{{ m['role'] }}\n{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|endoftext|>assistant\n{% endif %}"
)


def pair(template: str | None = TEMPLATE) -> ModelPair:
    tok = tiny_tokenizer()
    tok.chat_template = template
    target = tiny_model("llama", vocab=len(tok), seed=0, hidden=16, layers=1, init_range=0.2)
    draft = tiny_model("llama", vocab=len(tok), seed=1, hidden=16, layers=1, init_range=0.2)
    return ModelPair(target, draft, tok, len(tok))


def test_the_prompt_is_formatted_once_and_both_texts_are_kept():
    p = pair()
    trace = specviz.decode(p, "sd", "def add(a, b):", max_new_tokens=6, temperature=0, chat=True)
    formatted = format_chat(p.tokenizer, "def add(a, b):")
    assert formatted == "<|endoftext|>user\ndef add(a, b):\n<|endoftext|>assistant\n"
    assert trace.chat and trace.user_text == "def add(a, b):" and trace.prompt_text == formatted
    assert trace.prompt_ids == p.tokenizer(formatted, add_special_tokens=False).input_ids
    assert trace.prompt_ids.count(p.tokenizer.eos_token_id) == 2  # the template's own, none added
    ar = specviz.decode(p, "ar", "def add(a, b):", max_new_tokens=6, temperature=0, chat=True)
    assert ar.output_ids == trace.output_ids


def test_chat_needs_a_template_text_and_a_boolean():
    with pytest.raises(PromptError, match="no chat template"):
        specviz.decode(pair(None), "ar", "hello", max_new_tokens=2, chat=True, temperature=1.0)
    with pytest.raises(PromptError, match="chat prompt is text"):
        specviz.decode(pair(), "ar", [1, 2, 3], max_new_tokens=2, chat=True, temperature=1.0)
    for bad in ("yes", 1, None):
        with pytest.raises(InvalidParameterError, match="chat must be true or false"):
            specviz.decode(pair(), "ar", "hello", max_new_tokens=2, chat=bad, temperature=1.0)


def test_a_v2_trace_without_chat_fields_still_replays():
    trace = specviz.decode(pair(), "ar", "def f():", max_new_tokens=3, temperature=0)
    data = trace.to_dict()
    for key in ("chat", "user_text"):
        data.pop(key)
    data["schema_version"] = 2
    again = specviz.RunTrace.from_dict(data)
    assert not again.chat and again.user_text is None and again.output_ids == trace.output_ids


def test_the_cli_refuses_chat_on_the_code_pair_in_one_line(capsys):
    """In process (the CLI's ``main``), so the test pays for one model load, not two interpreters."""
    from specviz.cli import main

    def cli(argv: list[str]) -> tuple[int, str]:
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code
        return code, capsys.readouterr().err

    code, err = cli(
        ["run", "--preset", "bundled-stdlib-pair", "--prompt", "def f():", "--max-new-tokens", "2", "--chat"]
    )
    assert code == 2 and "no chat template" in err and "Traceback" not in err
    code, err = cli(["run", "--preset", "bundled-stdlib-pair", "--target", "x", "--prompt", "a"])
    assert code == 2 and "not both" in err and "Traceback" not in err
