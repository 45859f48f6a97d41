"""What the whole recipe (``pipeline``) and the early-exit trainer (``early_exit``) share: the
configuration, the device, loading a trained stage, the encoded corpus; what both recipes (``pipeline``,
``chat_pair``) write a tokenizer with; and how the chat and feature recipes start their report. Its own
module so that neither imports the other (issue #22 point 1: no import circles)."""

from __future__ import annotations

import json
import platform
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from .recipes import STAGES, TrainConfig  # noqa: F401 - plain data (no torch)
from .tokenizer import encode_stream


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def load_model(path: Path, device):
    from specviz.models.shards import from_pretrained_any

    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} has no trained model: run the stage that builds it first")
    return from_pretrained_any(path, dtype=torch.float32).to(device)


def encoded_streams(tokenizer, corpus, cache_dir):
    """The encoded training and held-out streams, cached under ``cache_dir`` by corpus and tokenizer hash."""
    import hashlib

    import numpy as np

    path = None
    if cache_dir:
        key = hashlib.sha256((corpus.sha256 + tokenizer.backend_tokenizer.to_str()).encode()).hexdigest()[:16]
        path = Path(cache_dir) / f"corpus-{key}.npz"
        if path.is_file():
            data = np.load(path)
            return data["train"], data["heldout"]
    train = encode_stream(tokenizer, corpus.train_texts)
    heldout = encode_stream(tokenizer, corpus.heldout_texts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, train=train, heldout=heldout)
    return train, heldout


def save_tokenizer(tokenizer, path: Path) -> None:
    """``tokenizer.save_pretrained(path)`` without the loader state a tokenizer read from disk saves too
    (``is_local``, ``local_files_only``, ``name_or_path``), so the files are the same from run to run."""
    tokenizer.save_pretrained(path)
    tc = path / "tokenizer_config.json"
    conf = json.loads(tc.read_text())
    for key in ("is_local", "local_files_only", "name_or_path"):
        conf.pop(key, None)
    tc.write_text(json.dumps(conf, indent=2) + "\n")


def start_report(cfg, report_path: Path, threads: int) -> dict:
    """The report kept from an earlier run (stages not redone keep their sections), with this run's
    settings (``cfg``, a dataclass) and environment."""
    report: dict = json.loads(report_path.read_text()) if report_path.is_file() else {}
    report["config"] = asdict(cfg)
    report["environment"] = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "threads": threads,
        "platform": platform.platform(),
    }
    return report
