"""Training the bundled offline pair: corpus, tokenizer, target, distilled draft, early-exit head.

Entry point: ``python -m specviz.train`` (see ``specviz/train/cli.py``); the stages live in
``pipeline.py`` and each helper module does one job (corpus, tokenizer, configs, data, loop,
distill, evaluate).
"""

from .recipes import STAGES, TrainConfig

__all__ = ["STAGES", "TrainConfig", "run"]


def __getattr__(name: str):
    """``run`` imported on first use, so the settings and the command line's ``--help`` need no torch."""
    if name == "run":
        from .pipeline import run

        return run
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
