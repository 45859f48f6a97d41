"""Chat prompts: a user's message formatted with the pair's own chat template.

An instruction-tuned model answers well only inside the conversation format it was trained on
(SmolLM2-Instruct: ``<|im_start|>user ... <|im_end|>`` with a default system turn). The template is
the tokenizer's (``tokenizer.chat_template``, saved with every model directory), applied by
transformers' ``apply_chat_template`` with the assistant's turn opened
(``add_generation_prompt=True``), so the model's next token starts the answer.
"""
from __future__ import annotations

from specviz.errors import PromptError


def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def format_chat(tokenizer, user_text: str) -> str:
    """``user_text`` as one user turn in the tokenizer's chat template, the assistant's turn opened."""
    if not has_chat_template(tokenizer):
        raise PromptError("This pair's tokenizer has no chat template: turn chat off to use the prompt as it is.")
    return tokenizer.apply_chat_template([{"role": "user", "content": user_text}], tokenize=False,
                                         add_generation_prompt=True)
