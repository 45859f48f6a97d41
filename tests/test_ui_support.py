"""Shared helpers for the app tests: a tiny real pair saved to disk with a real tokenizer.

The models are random-initialised stock Llama models (tests/tiny.py), the draft a noisy copy of the
target so that some drafts are accepted and some rejected; the tokenizer is a byte-level BPE trained
on a few lines of text. Nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

TEXTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "import os\nimport sys\n\n\ndef main(argv=None):\n    for name in os.listdir('.'):\n        print(name)\n",
    "class Stack:\n    def __init__(self):\n        self.items = []\n\n"
    "    def push(self, item):\n        self.items.append(item)\n",
    "for i in range(len(items)):\n    total += items[i] * weights[i]\nreturn total / len(items)\n",
]


def build_tokenizer(vocab_size: int = 320):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=1,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TEXTS * 4, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )


def save_tiny_pair(root: str | os.PathLike, noise: float = 0.08, seed: int = 0) -> tuple[str, str]:
    """Write ``root/target`` and ``root/draft`` (HF format, with tokenizer); returns their paths."""
    from tiny import noisy_copy, tiny_model

    root = Path(root)
    tok = build_tokenizer()
    target = tiny_model("llama", len(tok), seed, hidden=32, layers=2, init_range=0.15, max_positions=512)
    draft = noisy_copy(target, noise, seed)
    paths = []
    for name, model in (("target", target), ("draft", draft)):
        d = root / name
        model.config.eos_token_id = tok.eos_token_id
        model.generation_config.eos_token_id = tok.eos_token_id
        model.save_pretrained(d)
        tok.save_pretrained(d)
        paths.append(str(d))
    return paths[0], paths[1]


def read_hover(hover: str) -> str:
    """A hover box's text as a person reads it: its line breaks (``viz.style.wrap_markup``) and
    non-breaking spaces as spaces, runs of spaces as one."""
    return " ".join(hover.replace("<br>", " ").replace("\u00a0", " ").split())


if __name__ == "__main__":  # python tests/test_ui_support.py DIR: a dev pair for `SPECVIZ_TARGET=DIR/target ...`
    import sys

    sys.path.insert(0, os.path.dirname(__file__))
    print(save_tiny_pair(sys.argv[1] if len(sys.argv) > 1 else "/tmp/specviz-tiny"))


RUN_DEFAULTS = {
    "prompt": "def f(x):\n",
    "max_new_tokens": 8,
    "temperature": 0.0,
    "top_p": 1.0,
    "top_k": 0,
    "seed": 0,
    "columns": ["ar"],
    "pace": 0.0,
    "chat": False,
}


def run_inputs(**changes) -> dict:
    """Run / Measure's inputs by name, as the page passes them (``inputs_kwargs``): a short greedy run of
    ``ar`` on a code prompt, with ``changes``."""
    unknown = set(changes) - set(RUN_DEFAULTS)
    assert not unknown, f"not an input of Run / Measure: {sorted(unknown)}"
    return {**RUN_DEFAULTS, **changes}
