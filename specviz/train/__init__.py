"""Training the bundled offline pair: corpus, tokenizer, target, distilled draft, early-exit head.

Entry point: ``python -m specviz.train`` (see ``specviz/train/cli.py``); the stages live in
``pipeline.py`` and each helper module does one job (corpus, tokenizer, configs, data, loop,
distill, evaluate).
"""
from .pipeline import STAGES, TrainConfig, run

__all__ = ["STAGES", "TrainConfig", "run"]
