"""Benchmark prompts by category, in the spirit of Spec-Bench's task split (Xia et al. 2024,
"Unlocking Efficiency in Large Language Model Inference"). The bundled pair is trained on Python
code, so "prose" is the English a code model sees: docstrings and comments; "repetition" prompts
repeat their own structure, where copying drafters (prompt lookup) should shine."""
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


def select(categories: list[str] | None = None, per_category: int | None = None) -> dict[str, list[str]]:
    """The prompt sets of ``categories`` (default all), each cut to ``per_category`` prompts."""
    names = categories or list(PROMPTS)
    unknown = [c for c in names if c not in PROMPTS]
    if unknown:
        from specviz.errors import InvalidParameterError

        raise InvalidParameterError(f"Unknown prompt categories {unknown}; known: {', '.join(PROMPTS)}.")
    return {c: PROMPTS[c][:per_category] if per_category else list(PROMPTS[c]) for c in names}
