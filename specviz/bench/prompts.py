"""Benchmark prompts by category, in the spirit of Spec-Bench's task split (Xia et al. 2024,
"Unlocking Efficiency in Large Language Model Inference").

``CHAT_PROMPTS`` are questions for a chat model (run through its chat template): facts,
explanations, lists, code and arithmetic, written by hand so that none is one the default pair's
draft was trained on. ``PROMPTS`` are for the code pair (``bundled-stdlib-pair``), trained on Python
code: "prose" is the English a code model sees, docstrings and comments; "repetition" prompts repeat
their own structure, where copying drafters (prompt lookup) should shine."""

from __future__ import annotations

PROMPTS: dict[str, list[str]] = {
    "code": [
        "def fibonacci(n):\n",
        "import os\nimport sys\n\n\ndef main():\n",
        "class Stack:\n    def __init__(self):\n",
        "    for i in range(len(items)):\n",
    ],
    "prose": [
        'def parse_args(argv):\n    """Parse the command line arguments and return',
        "# This module provides helper functions for reading and writing\n# configuration files. The",
        'class Cache:\n    """A simple least recently used cache.\n\n    The cache keeps',
        "    # If the file does not exist we create it and write the",
    ],
    "repetition": [
        "x1 = data['x1']\nx2 = data['x2']\nx3 = data['x3']\nx4 = data['x4']\n",
        "self.assertEqual(f(1), 1)\nself.assertEqual(f(2), 4)\nself.assertEqual(f(3), 9)\n",
        "parser.add_argument('--a', type=int)\nparser.add_argument('--b', type=int)\nparser.add_argument(",
        "    if x == 1:\n        return 'one'\n    elif x == 2:\n        return 'two'\n    elif x == 3:\n",
    ],
}


CHAT_PROMPTS: dict[str, list[str]] = {
    "facts": [
        "What is the largest planet in our solar system?",
        "Who was the first person to walk on the Moon?",
        "What is the chemical symbol for gold?",
        "Which ocean is the deepest?",
    ],
    "explain": [
        "Why do we have seasons on Earth?",
        "How does a refrigerator keep food cold?",
        "What causes thunder during a storm?",
        "Why do leaves change color in the fall?",
    ],
    "lists": [
        "List four benefits of regular exercise.",
        "Name five animals that live in the Arctic.",
        "What are three ways to save water at home?",
        "List the planets of the solar system in order.",
    ],
    "code": [
        "Write a Python function that checks whether a list is sorted.",
        "Write a Python function that counts the words in a sentence.",
        "How do I open a file and read its lines in Python?",
        "Write a Python class for a bank account with deposit and withdraw methods.",
    ],
    "arithmetic": [
        "What is 45 plus 37?",
        "What is 9 times 8?",
        "If a train travels 60 miles per hour for 3 hours, how far does it go?",
        "What is half of 250?",
    ],
}


def select(
    categories: list[str] | None = None, per_category: int | None = None, chat: bool = False
) -> dict[str, list[str]]:
    """The prompt sets of ``categories`` (default all) of the chat or the code prompts, each cut to
    ``per_category`` prompts."""
    table = CHAT_PROMPTS if chat else PROMPTS
    names = categories or list(table)
    unknown = [c for c in names if c not in table]
    if unknown:
        from specviz.errors import InvalidParameterError

        raise InvalidParameterError(
            f"Unknown prompt categories {unknown} for {'chat' if chat else 'code'} prompts; known: {', '.join(table)}."
        )
    return {c: table[c][:per_category] if per_category else list(table[c]) for c in names}
