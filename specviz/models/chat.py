"""Chat prompts: a user's message formatted with the pair's own chat template.

An instruction-tuned model answers well only inside the conversation format it was trained on
(SmolLM2-Instruct: ``<|im_start|>user ... <|im_end|>`` with a default system turn). The template is
the tokenizer's (``tokenizer.chat_template``, saved with every model directory), applied by
transformers' ``apply_chat_template`` with the assistant's turn opened
(``add_generation_prompt=True``), so the model's next token starts the answer. ``encode_prompt`` is
the one place a prompt (text, chat text or token ids) becomes the ids the models read.
"""

from __future__ import annotations

from typing import Any, Protocol

from specviz import validation
from specviz.errors import PromptError


class PromptPair(Protocol):
    """What ``encode_prompt`` reads of a pair: ``models.loading.ModelPair`` (not imported here: loading
    imports this module)."""

    tokenizer: Any
    vocab_size: int

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def format_chat(tokenizer, user_text: str) -> str:
    """``user_text`` as one user turn in the tokenizer's chat template, the assistant's turn opened."""
    if not has_chat_template(tokenizer):
        raise validation.about(
            PromptError("This pair's tokenizer has no chat template: turn chat off to use the prompt as it is."), "chat"
        )
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": user_text}], tokenize=False, add_generation_prompt=True
    )


def encode_prompt(pair: PromptPair, prompt: str | list[int], chat: bool = False) -> tuple[list[int], str]:
    """The prompt's token ids and text; with ``chat``, the user's text formatted by the pair's chat
    template (whose text carries its own special tokens, so the tokenizer adds none). ``prompt`` is
    text or a list of int token ids (``validation.prompt``: bytes, numbers and None are refused)."""
    prompt = validation.prompt(prompt)
    if chat and not isinstance(prompt, str):
        raise validation.about(PromptError("A chat prompt is text: turn chat off to pass token ids."), "chat")
    if isinstance(prompt, str):
        if not prompt.strip():
            raise PromptError("The prompt is empty: type some text to continue.")
        text = format_chat(pair.tokenizer, prompt) if chat else prompt
        ids = pair.encode(text, add_special_tokens=not chat)
        if not ids:
            raise PromptError("The prompt tokenized to no tokens.")
        return ids, text
    ids = prompt
    if not ids:
        raise PromptError("The prompt is empty: give at least one token id.")
    if min(ids) < 0 or max(ids) >= pair.vocab_size:
        bad = min(ids) if min(ids) < 0 else max(ids)
        raise PromptError(f"prompt token ids must be in [0, {pair.vocab_size - 1}], got {validation.shown(bad)}.")
    return ids, pair.decode(ids)
