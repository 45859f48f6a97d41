"""The example prompts under the prompt box, and what a click on one sets (no state)."""

from __future__ import annotations

from typing import Any, Sequence

import gradio as gr

# Code for the bundled code pair (chat off), where its draft mostly succeeds. Greedy `sd`, gamma 4,
# 64 tokens, tau: main() 4.27, the loop body 4.27, setUp 4.00, the argparse call 4.00, fibonacci 3.20
# (the classic; in its body the 6M draft guesses less). Every output equal to greedy `ar`.
CODE_PROMPTS = (
    "def fibonacci(n):",
    "import os\nimport sys\n\n\ndef main():",
    "class TestCase(unittest.TestCase):\n\n    def setUp(self):",
    "def main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(",
    "    for i in range(len(items)):",
)
# Questions for a chat pair (shown with chat on), where the default pair's draft succeeds and fails.
# Greedy `sd`, gamma 4, 48 tokens, tau: the capital and the code 2.67, the arithmetic 2.22, the poem
# 1.85, the days of the week 1.66 (it lists them in another form), the sky 1.33 (the facts of an
# explanation are the target's).
CHAT_PROMPTS = (
    "Why is the sky blue?",
    "What is the capital of Australia?",
    "List the days of the week.",
    "Write a Python function that reverses a string.",
    "What is 17 times 23?",
    "Write a short poem about the sea.",
)


def example_prompts(chat: bool) -> list[str]:
    """The example prompts: questions for a chat pair, code for a code pair."""
    return list(CHAT_PROMPTS if chat else CODE_PROMPTS)


def example(prompts: Sequence[str], chat: bool, index: Any) -> list[Any]:
    """(prompt, chat) of example ``index``; anything but the index of one (the page sends nothing
    else) changes nothing."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(prompts):
        return [gr.skip(), gr.skip()]
    return [prompts[index], chat]


def chat_example(index: Any) -> list[Any]:
    """A click on a question of the chat examples: its prompt, with chat on."""
    return example(CHAT_PROMPTS, True, index)


def code_example(index: Any) -> list[Any]:
    """A click on a code example: its prompt, with chat off."""
    return example(CODE_PROMPTS, False, index)
