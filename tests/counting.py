"""Counting a model's forward passes at the bottom of every wrapper in specviz."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator


class Counts(dict):
    """Passes per name, plus ``fed[name]``: the tokens each pass ran on, in order."""

    def __init__(self, names):
        super().__init__({name: 0 for name in names})
        self.fed = {name: [] for name in names}


@contextmanager
def count_forwards(**models) -> Iterator[Counts]:
    """``with count_forwards(target=m1, draft=m2) as n:`` counts forward passes per name in ``n``.

    A pass is counted at the model's output head, the last module every pass runs, through the stock
    ``transformers`` forward or the lean one (``specviz.models.lean_forward``)."""
    counts = Counts(models)
    heads = {name: model.get_output_embeddings() for name, model in models.items()}

    def counting(name, forward):
        def wrapped(hidden, *args, **kwargs):
            counts[name] += 1
            counts.fed[name].append(hidden.shape[-2])
            return forward(hidden, *args, **kwargs)

        return wrapped

    for name, head in heads.items():
        head.forward = counting(name, head.forward)
    try:
        yield counts
    finally:
        for head in heads.values():
            del head.forward
